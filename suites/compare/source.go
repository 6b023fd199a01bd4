package compare

import (
	"fmt"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// Source is a run's nodes as a comparison reads them, one at a time: in
// order, or by name, on several CPUs at once. A merged job's
// (results.Index) reads each node from its own file when asked, so two
// jobs of 16,384 nodes compare in the memory of a few nodes and the
// verdicts.
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
	amend := evidenceAmender(before, opt, after.Len() == 1)
	inAfter := map[string]bool{}
	// Reading a node and judging it are most of a comparison: each is
	// done on every CPU, a few nodes ahead, and taken in order.
	err := inOrder(after.Len(), func(i int) (results.Node, error) {
		n, ae, err := at(after, i)
		if err != nil {
			return n, fmt.Errorf("the run after: %w", err)
		}
		var runs []results.Run
		if n.Name == results.AllocationNode {
			runs = after.Runs()
		}
		if n, err = amend(n, ae, runs); err != nil {
			return n, err
		}
		// The comparison judged the node, whatever its status was. Its
		// suite is copied out: a slice of n.Suites would keep all of
		// the node's suites alive, 20 KB a node.
		return results.Node{Name: n.Name, Status: results.NodeEvaluated, Facts: n.Facts, Profile: n.Profile,
			Started: now, Finished: now, Suites: []results.Suite{n.Suites[len(n.Suites)-1]}}, nil
	}, func(n results.Node) {
		inAfter[n.Name] = true
		out.Nodes = append(out.Nodes, n)
	})
	if err != nil {
		return nil, err
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

// evidenceSource is a Source that decodes a node's evidence in the pass
// that reads the node (results.Index): ok says ev holds it, else the
// node's raw evidence is decoded apart.
type evidenceSource interface {
	AtEvidence(i int, ev any) (n results.Node, ok bool, err error)
	NodeEvidence(name string, ev any) (n results.Node, found, ok bool, err error)
}

// at is src's i-th node and its evidence (nil: none).
func at(src Source, i int) (results.Node, *node.Evidence, error) {
	if es, typed := src.(evidenceSource); typed {
		var ev node.Evidence
		n, ok, err := es.AtEvidence(i, &ev)
		if ok || err != nil {
			return n, &ev, err
		}
		return n, evidence(n), nil
	}
	n, err := src.At(i)
	return n, evidence(n), err
}

// nodeOf is src's node named name and its evidence (nil: none); found
// is false where src has no such node.
func nodeOf(src Source, name string) (results.Node, *node.Evidence, bool, error) {
	if es, typed := src.(evidenceSource); typed {
		var ev node.Evidence
		n, found, ok, err := es.NodeEvidence(name, &ev)
		if ok || err != nil || !found {
			return n, &ev, found, err
		}
		return n, evidence(n), true, nil
	}
	n, found, err := src.Node(name)
	if err != nil || !found {
		return n, nil, found, err
	}
	return n, evidence(n), true, nil
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

// inOrder runs f(0), f(1) ... f(n-1) on every CPU, a few ahead of use,
// which takes each result in order; the first error ends it.
func inOrder[T any](n int, f func(i int) (T, error), use func(T)) error {
	next, stop := results.ReadAheadFunc(n, f)
	defer stop()
	for i := range n {
		v, err := next(i)
		if err != nil {
			return err
		}
		use(v)
	}
	return nil
}
