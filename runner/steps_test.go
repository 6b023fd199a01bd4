package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
	"github.com/gdrcheck/gdrcheck/results"
)

// quickGateRoot unpacks the 8-GPU fixture node for a quick gate.
func quickGateRoot(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "node")
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := ttar.ExtractFile("../fixtures/nodes/h100x8-nvswitch-cx7-pix.ttar", dir); err != nil {
		tb.Fatal(err)
	}
	return dir
}

var quickGate = []string{"topology", "kernel", "bar1"}

func TestTheQuickGateRecordsWhereItsTimeWent(t *testing.T) {
	res, _, err := Run(Options{HostRoot: quickGateRoot(t), Suites: quickGate})
	if err != nil {
		t.Fatal(err)
	}
	n := res.Nodes[0]
	byName := map[string]results.Step{}
	var top float64
	for _, s := range n.Steps {
		if s.Duration < 0 {
			t.Errorf("step %q took %v s", s.Name, s.Duration)
		}
		byName[s.Name] = s
		if !strings.HasPrefix(s.Name, "evidence: ") && !strings.Contains(s.Name, "beside") {
			top += s.Duration
		}
	}
	for _, want := range []string{
		"read the node's evidence (its evidence: steps)",
		"evidence: nvml (beside sysfs)",
		"evidence: procfs and sysfs: host and PCI devices",
		"GPUDirect probe: libcuda and libibverbs",
		"suites",
	} {
		if _, ok := byName[want]; !ok {
			t.Errorf("no step %q in %v", want, n.Steps)
		}
	}
	// The runner's own steps follow one another: together they fit in
	// the node's wall time.
	if wall := n.Finished.Sub(n.Started).Seconds(); top > wall+1e-3 {
		t.Errorf("the steps add up to %.4f s, more than the node's %.4f s", top, wall)
	}
	// They reach results.json, and back.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back results.Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Nodes[0].Steps; len(got) != len(n.Steps) || got[0] != n.Steps[0] {
		t.Errorf("steps after a round trip %v, want %v", got, n.Steps)
	}
	slow := n.Slowest(5)
	for i := 1; i < len(slow); i++ {
		if slow[i].Duration > slow[i-1].Duration {
			t.Errorf("Slowest out of order: %v", slow)
		}
	}
}
