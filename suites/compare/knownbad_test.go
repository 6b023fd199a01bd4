package compare

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

// The node of NVIDIA/nccl#1676 as its results.json facts say, with the
// NCCL it ran.
func dgxNode(nccl string) results.Node {
	return results.Node{Name: "gpu01", Status: results.NodeEvaluated, Facts: []results.Fact{
		{Name: "nccl", Value: nccl}, {Name: "rdma_nics", Value: "8"}, {Name: "driver_flavour", Value: "proprietary"},
		{Name: "peermem", Value: "loaded"}, {Name: "mechanism", Value: "peermem"}, {Name: "kernel", Value: "6.8.0-60-generic"},
	}}
}

func knownBadSpec(t *testing.T, before, after results.Node) results.Spec {
	t.Helper()
	out := Compare(&results.Results{Nodes: []results.Node{before}}, &results.Results{Nodes: []results.Node{after}}, Options{})
	for _, sp := range out.Nodes[0].Suites[0].Specs {
		if sp.Name == AspectKnownBad {
			return sp
		}
	}
	t.Fatalf("no %q aspect in %+v", AspectKnownBad, out.Nodes[0].Suites[0].Specs)
	return results.Spec{}
}

func TestKnownBadAspect(t *testing.T) {
	cases := []struct {
		name          string
		before, after string // NCCL versions
		state, says   string
	}{
		{"a downgrade into the cell is a regression naming the source and the fix", "2.23.4", "2.21.5", results.StateFailed,
			"moved into a known-bad combination: NVIDIA/nccl#1676: NCCL 2.21.5 is <=2.22.3"},
		{"in the cell before and after: not the upgrade's doing", "2.21.5", "2.22.3", results.StatePassed, "still in a known-bad combination, as before: NVIDIA/nccl#1676"},
		{"the upgrade that leaves it", "2.21.5", "2.23.4", results.StatePassed, "left the known-bad combination NVIDIA/nccl#1676 (https://github.com/NVIDIA/nccl/issues/1676)"},
		{"outside the cell both times", "2.23.4", "2.28.3", results.StatePassed, "unchanged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := knownBadSpec(t, dgxNode(c.before), dgxNode(c.after))
			text := sp.Message + strings.Join(sp.Notes, "\n")
			if sp.State != c.state || !strings.Contains(text, c.says) {
				t.Errorf("%s: %s %q %q; want %s saying %q", c.name, sp.State, sp.Message, sp.Notes, c.state, c.says)
			}
		})
	}
	if sp := knownBadSpec(t, dgxNode("2.23.4"), dgxNode("2.21.5")); !strings.Contains(sp.Message, "; fix: NCCL >= 2.23.4") || !strings.HasSuffix(sp.Message, "(https://github.com/NVIDIA/nccl/issues/1676)") {
		t.Errorf("no fix in %q", sp.Message)
	}
}

// A warn-level cell is noted, never a regression (NCCL may back off);
// from facts alone, which do not say whether the GPUs export dma-bufs, the
// cell is not matched at all.
func TestKnownBadAspectNotesAWarnLevelCell(t *testing.T) {
	withNCCL := func(nccl string, ev []byte) results.Node {
		return results.Node{Name: "gpu02", Status: results.NodeEvaluated, Evidence: ev, Facts: []results.Fact{
			{Name: "nccl", Value: nccl}, {Name: "rdma_nics", Value: "8"}, {Name: "driver_flavour", Value: "open"},
			{Name: "peermem", Value: "absent"}, {Name: "rdma_core", Value: "28"}, {Name: "kernel", Value: "6.8.0-60-generic"},
		}}
	}
	if sp := knownBadSpec(t, withNCCL("2.12.12", nil), withNCCL("2.14.3", nil)); sp.State != results.StatePassed || strings.Join(sp.Notes, "") != "unchanged" {
		t.Errorf("facts alone: %s %q %q", sp.State, sp.Message, sp.Notes)
	}
	// The healthy H100 node's evidence with the rdma-core of the
	// NVIDIA/nccl#778 report: the GPUs export, the NICs cannot register.
	ev := nodetest.Probed(t, nodetest.Named(t, "h100x8-nvswitch-cx7-pix"))
	ev.Verbs.RDMACoreVersion, ev.Verbs.HasRegDMABufMR = 28, false
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	sp := knownBadSpec(t, withNCCL("2.12.12", b), withNCCL("2.14.3", b))
	if want := "moved into a known-bad combination (warn): NVIDIA/nccl#778: NCCL 2.14.3 is >=2.13, <2.16, the GPUs export dma-bufs but the NICs cannot register them (rdma-core 28 is older than 34)"; sp.State != results.StatePassed || !strings.Contains(strings.Join(sp.Notes, "\n"), want) {
		t.Errorf("%s %q %q; want passed noting %q", sp.State, sp.Message, sp.Notes, want)
	}
}
