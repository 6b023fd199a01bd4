package compare

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// suiteOf is the node's suite of that name.
func suiteOf(n results.Node, name string) (results.Suite, bool) {
	for _, s := range n.Suites {
		if s.Name == name {
			return s, true
		}
	}
	return results.Suite{}, false
}

// Without a run before, nothing is amended; with one, every node of the
// run gets the compare suite, and a job's collector the same per node.
func TestBeforeAmendsOnlyWithARunBefore(t *testing.T) {
	var none Before
	if none.Amend() != nil {
		t.Error("the zero Before amends")
	}
	res := load(t)
	none.Apply(res)
	if slices.Contains(res.Tool.Suites, Suite) {
		t.Error("the zero Before added the compare suite")
	}

	b := Before{Run: load(t), Options: Options{Tolerance: 0.1}}
	b.Apply(res)
	if !slices.Contains(res.Tool.Suites, Suite) {
		t.Errorf("suites %v lack %s", res.Tool.Suites, Suite)
	}
	for _, n := range res.Nodes {
		if s, ok := suiteOf(n, Suite); !ok || len(s.Specs) == 0 || s.Counts().Failed > 0 {
			t.Errorf("%s: compare suite %+v (present %v): the same run compared with itself", n.Name, s, ok)
		}
	}
	n := b.Amend()(load(t).Nodes[0], nil)
	if s, ok := suiteOf(n, Suite); !ok || len(s.Specs) == 0 {
		t.Errorf("amended node: compare suite %+v", s)
	}
}

func TestCheckToleranceTakesAFractionBelowOne(t *testing.T) {
	for tol, ok := range map[float64]bool{0: true, 0.1: true, 0.99: true, 1: false, -0.1: false, 5: false} {
		if err := CheckTolerance(tol); (err == nil) != ok {
			t.Errorf("CheckTolerance(%g) = %v", tol, err)
		}
	}
}

// unreadable is a run before whose every node read fails, as a merged
// job's does once a node file is removed after it was indexed.
type unreadable struct{ Source }

func (u unreadable) Node(name string) (results.Node, bool, error) {
	return results.Node{}, false, errors.New(`reading job/results.json: nodes[0] (named "gpu01"): no such file`)
}

// A node whose namesake in the run before cannot be read gets a compare
// suite that could not run, naming the error, with RERUN: never a verdict.
func TestANodeTheRunBeforeCannotReadIsUnevaluableNotJudged(t *testing.T) {
	res := load(t)
	b := Before{Source: unreadable{memory(load(t))}}
	b.Apply(res)
	for _, n := range res.Nodes {
		s, ok := suiteOf(n, Suite)
		if !ok || len(s.Specs) != 1 {
			t.Fatalf("%s: compare suite %+v", n.Name, s)
		}
		sp := s.Specs[0]
		if !sp.Unevaluable() || !strings.Contains(sp.Message, "no such file") || sp.Action != results.ActionRerun || sp.Entity != n.Name {
			t.Errorf("%s: %+v, want could not run, naming the error, RERUN on the node", n.Name, sp)
		}
	}
}
