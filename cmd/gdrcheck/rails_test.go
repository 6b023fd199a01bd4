package main

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// The healthy node replaying a network-forced run whose GPU 3 went
// through mlx5_6 (NCCL_TOPO_FILE describing other wiring; still GDRDMA):
// only the rail spec fails, naming the GPU, the NIC it used, its rail NIC
// and the cause (docs/field-causes.md #30).
func TestAChannelOffItsRailFailsOnlyTheRailSpec(t *testing.T) {
	t.Parallel()
	const spec = "negative / puts each GPU's network channels on its rail NIC when forced onto the network"
	recs, more := shapeRuns(healthyNode)
	recs["all_reduce-p2p-shm-disabled"] = recorded + "/synthetic/all_reduce_perf-h100x8-nvswitch-cx7-p2p-shm-disabled-offrail.txt"
	v, res, _ := runFixtureOn(t, []string{bin}, healthyNode, recs, more)
	if v.ExitCode != 1 {
		t.Fatalf("exit %d, want 1:\n%s", v.ExitCode, strings.Join(v.Specs, "\n"))
	}
	var failed []string
	var msg string
	for _, s := range res.Nodes[0].Suites {
		for _, sp := range s.Specs {
			if sp.State == results.StateFailed {
				failed = append(failed, s.Name+" / "+sp.Name)
				msg = sp.Message
			}
		}
	}
	if len(failed) != 1 || failed[0] != spec {
		t.Fatalf("failed %q, want only %q", failed, spec)
	}
	want := "GPU 3 0000:39:00.0 sent 4 connection(s) (channels 00 and 01) through mlx5_6 (SYS from it), not its rail NIC mlx5_3 (PIX): NCCL_TOPO_FILE=/etc/nccl/topo-ndv5.xml tells NCCL another wiring than this node's"
	if !strings.HasPrefix(msg, want) {
		t.Errorf("%s says %q, want it to start %q", spec, msg, want)
	}

	// The same node on the healthy recording passes the spec with proof:
	// every GPU judged against its rail.
	v, res = runFixture(t, healthyNode)
	if v.ExitCode != 0 {
		t.Fatalf("healthy node: exit %d:\n%s", v.ExitCode, strings.Join(v.Specs, "\n"))
	}
	for _, s := range res.Nodes[0].Suites {
		for _, sp := range s.Specs {
			if s.Name+" / "+sp.Name != spec {
				continue
			}
			notes := strings.Join(sp.Notes, "\n")
			if sp.State != results.StatePassed || !strings.Contains(notes, "8 GPU(s) judged against the rails mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7") {
				t.Errorf("healthy node: %s %s, notes:\n%s", spec, sp.State, notes)
			}
			return
		}
	}
	t.Errorf("healthy node: no spec %q ran", spec)
}
