package slurm

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// The drain reason a remediation pipeline parses ends in the node's
// action, however long the cause it shortens.
func TestDrainReasonEndsInTheNodesActionAndFitsSlurm(t *testing.T) {
	long := strings.Repeat("no GPUDirect peer-memory mechanism works ", 10) + "\nsecond line"
	res := &results.Results{Schema: results.Schema, Nodes: []results.Node{
		{Name: "node1", Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "kernel", Specs: []results.Spec{
			{Name: "a", State: results.StateFailed, Message: long, Action: results.ActionReloadDriver, Scope: results.ScopeNode},
			{Name: "b", State: results.StateFailed, Message: "x", Action: results.ActionResetGPU, Scope: results.ScopeGPU, Entity: "0000:39:00.0"},
		}}}},
		{Name: "node2", Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "topology", Specs: []results.Spec{{Name: "c", State: results.StatePassed}}}}},
		{Name: "node3", Status: results.NodeMissing, Reason: "node never reported"},
	}}
	res.Settle()
	f := FailedNodes(res)
	if len(f) != 2 {
		t.Fatalf("failed %v", f)
	}
	r1 := f["node1"]
	if r1 != "kernel: x action=RESET_GPU" {
		t.Errorf("node1: the cause is not the spec of the node's action: %q", r1)
	}
	res.Nodes[0].Suites[0].Specs[1].Action = results.ActionFixConfig
	res.Settle()
	r1 = FailedNodes(res)["node1"]
	if !strings.HasSuffix(r1, " action=RELOAD_DRIVER") || !strings.HasPrefix(r1, "kernel: no GPUDirect") || len(r1) > maxReason || strings.Contains(r1, "\n") {
		t.Errorf("node1: %q (%d bytes)", r1, len(r1))
	}
	if r3 := f["node3"]; r3 != "missing: node never reported action=RERUN" {
		t.Errorf("node3: %q", r3)
	}
	if r := DrainReason("x", ""); r != "x" {
		t.Errorf("no action: %q", r)
	}
}
