package compare

import (
	"fmt"
	"slices"

	"github.com/gdrcheck/gdrcheck/results"
)

// Before is the run a later one is compared with as it is written
// (--compare-to of gdrcheck run, submit, job and collect), with the
// options of the comparison. The zero Before compares with nothing.
type Before struct {
	// Source is the run before, read node by node where a node is asked
	// for (a results.Index): a merged job of 16,384 nodes is never held
	// whole. Run is one held whole, where Source is nil.
	Source  Source
	Run     *results.Results
	Options Options
}

func (b Before) source() Source {
	switch {
	case b.Source != nil:
		return b.Source
	case b.Run != nil:
		return memory(b.Run)
	}
	return nil
}

// Amend is what adds the compare suite to each node of a job as its
// collector merges it (slurm.Amend); nil without a run before.
func (b Before) Amend() func(n results.Node, runs []results.Run) results.Node {
	src := b.source()
	if src == nil {
		return nil
	}
	return orUnread(amender(src, b.Options, false))
}

// Apply adds the compare suite to every node of a run's results; it does
// nothing without a run before.
func (b Before) Apply(res *results.Results) {
	src := b.source()
	if src == nil {
		return
	}
	amend := orUnread(amender(src, b.Options, len(res.Nodes) == 1))
	for i, n := range res.Nodes {
		var runs []results.Run
		if n.Name == results.AllocationNode {
			runs = res.Runs
		}
		res.Nodes[i] = amend(n, runs)
	}
	res.Tool.Suites = append(slices.Clone(res.Tool.Suites), Suite)
}

// orUnread is amend with a read of the run before that failed (its node
// file removed or changed since) made the node's compare suite: could
// not run, naming the error, never a verdict on the node.
func orUnread(amend func(results.Node, []results.Run) (results.Node, error)) func(results.Node, []results.Run) results.Node {
	return func(n results.Node, runs []results.Run) results.Node {
		out, err := amend(n, runs)
		if err == nil {
			return out
		}
		sp := results.Spec{Name: AspectVerdicts, State: results.StateSkipped, SkipKind: results.SkipCannotRun, Message: err.Error()}
		sp.SetRemedy(results.Remedy{Action: results.ActionRerun, Scope: results.ScopeNode, Entity: n.Name})
		n.Suites = append(slices.Clone(n.Suites), results.Suite{Name: Suite, Specs: []results.Spec{sp}})
		return n
	}
}

// CheckTolerance refuses a bandwidth tolerance that is not a fraction in
// [0, 1): 1 would let every drop pass.
func CheckTolerance(t float64) error {
	if t < 0 || t >= 1 {
		return fmt.Errorf("%g: want a fraction in [0, 1), e.g. 0.1 for 10 %%", t)
	}
	return nil
}
