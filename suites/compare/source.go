package compare

import (
	"fmt"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

// Source is a run's nodes as a comparison reads them, one at a time: in
// order, or by name. A merged job's (results.Index, IndexAhead) reads each node from
// its own file when asked, so two jobs of 16,384 nodes compare in the
// memory of a few nodes and the verdicts.
type Source interface {
	Len() int
	Names() []string // in order, as At reads them
	At(i int) (results.Node, error)
	// Node is the last node named name; false where there is none.
	Node(name string) (results.Node, bool, error)
	Tool() results.Tool
	Runs() []results.Run // the cross-node runs
}

// CompareSources is Compare of two runs read node by node: only the
// verdicts (each node's facts and compare suite) are kept.
func CompareSources(before, after Source, opt Options) (*results.Results, error) {
	now := time.Now().UTC()
	out := &results.Results{Schema: results.Schema, Tool: after.Tool(), Started: now, Runs: after.Runs()}
	out.Tool.Suites = []string{Suite}
	amend := amender(before, opt, after.Len() == 1)
	inAfter := map[string]bool{}
	for i := range after.Len() {
		n, err := after.At(i)
		if err != nil {
			return nil, fmt.Errorf("the run after: %w", err)
		}
		var runs []results.Run
		if n.Name == results.AllocationNode {
			runs = after.Runs()
		}
		if n, err = amend(n, runs); err != nil {
			return nil, err
		}
		inAfter[n.Name] = true
		// The comparison judged the node, whatever its status was. Its
		// suite is copied out: a slice of n.Suites would keep all of
		// the node's suites alive, 20 KB a node.
		out.Nodes = append(out.Nodes, results.Node{Name: n.Name, Status: results.NodeEvaluated, Facts: n.Facts, Profile: n.Profile,
			Started: now, Finished: now, Suites: []results.Suite{n.Suites[len(n.Suites)-1]}})
	}
	pair := before.Len() == 1 && after.Len() == 1
	for _, name := range before.Names() {
		if !inAfter[name] && !pair {
			out.Nodes = append(out.Nodes, results.Node{Name: name, Status: results.NodeEvaluated, Started: now, Finished: now,
				Suites: []results.Suite{{Name: Suite, Specs: []results.Spec{{Name: AspectVerdicts, State: results.StateSkipped, Message: "in the run before only: nothing to compare with"}}}}})
		}
	}
	out.Finished = time.Now().UTC()
	return out, nil
}

// memory is a run held whole as a Source.
func memory(r *results.Results) Source {
	m := mem{r: r, byName: map[string]int{}}
	for i, n := range r.Nodes {
		m.byName[n.Name] = i
	}
	return m
}

type mem struct {
	r      *results.Results
	byName map[string]int
}

func (m mem) Len() int                       { return len(m.r.Nodes) }
func (m mem) At(i int) (results.Node, error) { return m.r.Nodes[i], nil }
func (m mem) Tool() results.Tool             { return m.r.Tool }
func (m mem) Runs() []results.Run            { return m.r.Runs }
func (m mem) Names() []string {
	out := make([]string, len(m.r.Nodes))
	for i, n := range m.r.Nodes {
		out[i] = n.Name
	}
	return out
}

func (m mem) Node(name string) (results.Node, bool, error) {
	i, ok := m.byName[name]
	if !ok {
		return results.Node{}, false, nil
	}
	return m.r.Nodes[i], true, nil
}
