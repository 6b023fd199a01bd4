package suites

import (
	"slices"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// A failure's entities are the node's devices its message names, whole:
// mlx5_1 is not mlx5_10, a kernel log's "PCI:0000:39:00" is the GPU
// 0000:39:00.0, and a port is written "mlx5_3 port 1".
func TestRemedyNamesTheDevicesItsFailureNames(t *testing.T) {
	ev := &node.Evidence{
		GPUs: []node.GPU{{BusID: "0000:18:00.0"}, {BusID: "0000:39:00.0"}},
		NICs: []node.NIC{
			{Name: "mlx5_1", BusID: "0000:1a:00.0", Ports: []node.NICPort{{Port: 1}}},
			{Name: "mlx5_10", BusID: "0000:9a:00.0", Ports: []node.NICPort{{Port: 1}}},
		},
	}
	failed := func(msg string) results.Spec { return results.Spec{State: results.StateFailed, Message: msg} }
	for _, c := range []struct {
		msg   string
		scope results.Scope
		want  results.Remedy
	}{
		{"NIC mlx5_10 0000:9a:00.0 link runs at 16.0 GT/s x8", results.ScopeNIC,
			results.Remedy{Action: results.ActionCheckCable, Scope: results.ScopeNIC, Entity: "mlx5_10"}},
		{"kernel log: NVRM: Xid (PCI:0000:39:00): 79, GPU has fallen off the bus", results.ScopeGPU,
			results.Remedy{Action: results.ActionCheckCable, Scope: results.ScopeGPU, Entity: "0000:39:00.0"}},
		{"mlx5_1 port 1: state DOWN; mlx5_10 port 1: state DOWN", results.ScopePort,
			results.Remedy{Action: results.ActionCheckCable, Scope: results.ScopePort, Entity: "mlx5_1/1,mlx5_10/1"}},
		{"GPU 0000:18:00.0 link is downtrained; NIC 0000:1a:00.0 too", results.ScopeLink,
			results.Remedy{Action: results.ActionCheckCable, Scope: results.ScopeLink, Entity: "0000:18:00.0,mlx5_1"}},
		{"libcuda found no GPU", results.ScopeGPU,
			results.Remedy{Action: results.ActionCheckCable, Scope: results.ScopeNode}},
	} {
		r := remedyOf(failed(c.msg), nil, ev)
		if r.Action != "" {
			t.Fatalf("%q: a spec that declared nothing got %+v", c.msg, r)
		}
		entries := reportEntries(NewRemedy(results.ActionCheckCable, c.scope))
		if got := remedyOf(failed(c.msg), entries, ev); got != c.want {
			t.Errorf("%q: %+v, want %+v", c.msg, got, c.want)
		}
	}
	skipped := results.Spec{State: results.StateSkipped, SkipKind: results.SkipCannotRun}
	if got := remedyOf(skipped, reportEntries(NewRemedy(results.ActionReplace, results.ScopeGPU)), ev); got != cannotRunRemedy {
		t.Errorf("could not run: %+v, want %+v", got, cannotRunRemedy)
	}
	if got := NewRemedy(results.ActionRerun, results.ScopeGPU, "a", "", "b", "a"); got.Entity != "a,b" {
		t.Errorf("entities %q, want a,b", got.Entity)
	}
	if !slices.Equal(entitiesIn("x mlx5_1y", deviceNames(ev, results.ScopeNIC)), nil) {
		t.Error("mlx5_1 found inside a longer word")
	}
}

// reportEntries is the report entry Remedy adds, as Ginkgo hands it over.
func reportEntries(r results.Remedy) []types.ReportEntry {
	return []types.ReportEntry{{Name: RemedyEntry, Value: types.WrapEntryValue(r)}}
}
