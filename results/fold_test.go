package results

import (
	"fmt"
	"slices"
	"testing"
)

// node is an evaluated node whose kernel suite's one spec is in state,
// with message.
func foldNode(name, state, message string) Node {
	return Node{Name: name, Status: NodeEvaluated, Profile: "h100x8",
		Facts: []Fact{{"host_root", "/roots/" + name}, {"driver", "580.95.05"}},
		Suites: []Suite{{Name: "kernel", Specs: []Spec{
			{Name: "has a working GPUDirect peer-memory mechanism", State: state, Message: message, Output: string(make([]byte, 4<<10))},
			{Name: "registers GPU memory with every rail NIC", State: StatePassed, Metrics: []Metric{{Name: "reg", Value: 1}}},
		}}},
		Runs: []Run{{Suite: "collectives", Op: "all_reduce", Mode: "direct", BusBW: 480}},
	}
}

func TestFolderSmallJobsKeepEveryNode(t *testing.T) {
	f := NewFolder(0)
	for i := 1; i <= FoldAbove; i++ {
		f.Add(foldNode(fmt.Sprintf("gpu%02d", i), StatePassed, ""))
	}
	r := &Results{Nodes: f.Nodes()}
	if r.Folded() || len(r.Nodes) != FoldAbove || r.NodeCount() != FoldAbove {
		t.Fatalf("%d nodes: folded %v into %d entries, want them as they are", FoldAbove, r.Folded(), len(r.Nodes))
	}
}

func TestFolderGroupsAlikeNodesAndKeepsEachFailure(t *testing.T) {
	f := NewFolder(0)
	var want []string
	for i := 1; i <= 100; i++ {
		name := fmt.Sprintf("gpu%03d", i)
		want = append(want, name)
		switch {
		case i == 11 || i == 41:
			// The same cause, with the node's own name and a number
			// that differ.
			f.Add(foldNode(name, StateFailed, fmt.Sprintf("%s: no peer memory after %d probes", name, i)))
		case i == 72:
			f.Add(Node{Name: name, Status: NodeMissing, Reason: "node " + name + " never reported (no results.json)"})
		default:
			f.Add(foldNode(name, StatePassed, ""))
		}
	}
	f.Add(Node{Name: AllocationNode, Status: NodeEvaluated})
	r := &Results{Nodes: f.Nodes()}
	if !r.Folded() {
		t.Fatal("100 nodes not folded")
	}
	if got := len(r.Nodes); got != 4 {
		t.Fatalf("%d entries, want 4 (healthy, failed, missing, allocation)", got)
	}
	healthy, failed, missing := r.Nodes[0], r.Nodes[1], r.Nodes[2]
	if healthy.Size() != 97 || failed.Size() != 2 || missing.Size() != 1 {
		t.Errorf("group sizes %d, %d, %d; want 97, 2, 1", healthy.Size(), failed.Size(), missing.Size())
	}
	if failed.Group.Cause != "kernel: {node}: no peer memory after 11 probes" {
		t.Errorf("cause %q", failed.Group.Cause)
	}
	var all []string
	var failing []string
	r.Each(func(n Node) {
		if n.Name == AllocationNode {
			return
		}
		all = append(all, n.Name)
		if n.Failed() {
			failing = append(failing, n.Name)
		}
	})
	slices.Sort(all)
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Errorf("Each visits %v", all)
	}
	slices.Sort(failing)
	if fmt.Sprint(failing) != "[gpu011 gpu041 gpu072]" {
		t.Errorf("failing nodes %v, want gpu011 gpu041 gpu072", failing)
	}
	// A member keeps its own failure, cut, and drops what only the
	// representative draws.
	m := failed.Group.Members[0]
	if m.Name != "gpu041" || len(m.Suites) != 1 || len(m.Suites[0].Specs) != 1 || len(m.Runs) != 0 {
		t.Fatalf("member %+v", m)
	}
	if sp := m.Suites[0].Specs[0]; sp.Message != "gpu041: no peer memory after 41 probes" || len(sp.Output) > MaxLiteOutput+16 {
		t.Errorf("member's failed spec %q, output %d bytes", sp.Message, len(sp.Output))
	}
	if len(healthy.Runs) != 1 || len(healthy.Group.Members[0].Runs) != 0 {
		t.Errorf("the representative keeps the runs, members none")
	}
	if r.ExitCode() != ExitUnevaluable {
		t.Errorf("exit %d, want 2 for the missing node", r.ExitCode())
	}
}

func TestFolderBoundsTheGroupsItKeepsInFull(t *testing.T) {
	f := NewFolder(0)
	for i := 0; i < MaxGroups+50; i++ {
		n := foldNode(fmt.Sprintf("gpu%04d", i), StatePassed, "")
		n.Facts = append(n.Facts, Fact{"kernel", fmt.Sprintf("6.8.0-%d", i)})
		f.Add(n)
	}
	full := 0
	for _, n := range f.Nodes() {
		if len(n.Runs) > 0 {
			full++
		}
	}
	if full != MaxGroups {
		t.Errorf("%d entries kept in full, want %d", full, MaxGroups)
	}
}
