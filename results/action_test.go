package results

import (
	"slices"
	"testing"
)

func TestActionsAreOrderedByDisruption(t *testing.T) {
	cases := []struct {
		in   []Action
		want Action
	}{
		{nil, ""},
		{[]Action{"", "BOGUS"}, ""},
		{[]Action{ActionNone}, ActionNone},
		{[]Action{ActionRerun, ActionFixConfig}, ActionFixConfig},
		{[]Action{ActionReplace, ActionReboot, ActionReloadDriver}, ActionReplace},
		{[]Action{ActionReboot, ActionInvestigate, ActionReimage}, ActionInvestigate},
		{[]Action{ActionCheckCable, "NOPE"}, ActionCheckCable},
	}
	for _, c := range cases {
		if got := MostDisruptive(c.in...); got != c.want {
			t.Errorf("MostDisruptive(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if _, err := ParseAction("reboot"); err == nil {
		t.Error(`ParseAction("reboot") accepted a lower-case word: the vocabulary is upper case`)
	}
	if a, err := ParseAction("RESET_GPU"); err != nil || a != ActionResetGPU {
		t.Errorf(`ParseAction("RESET_GPU") = %q, %v`, a, err)
	}
	if Scope("rack").Valid() || !ScopePort.Valid() {
		t.Error("Scope.Valid does not follow Scopes")
	}
}

// A node's action is the most disruptive of its failures; with none, that
// of a suite that could not run, else NONE; a node not evaluated with
// nothing to say is run again; a failure without an action is a person's.
func TestSettleGivesTheNodeTheMostDisruptiveActionOfItsFailures(t *testing.T) {
	failed := func(a Action, s Scope, e string) Spec {
		return Spec{Name: string(a), State: StateFailed, Action: a, Scope: s, Entity: e}
	}
	cannot := Spec{Name: "c", State: StateSkipped, SkipKind: SkipCannotRun, Action: ActionRerun, Scope: ScopeNode}
	for _, c := range []struct {
		name string
		n    Node
		want Action
	}{
		{"failures", Node{Name: "n1", Status: NodeEvaluated, Suites: []Suite{
			{Name: "a", Specs: []Spec{failed(ActionFixConfig, ScopeNode, ""), cannot}},
			{Name: "b", Specs: []Spec{failed(ActionResetGPU, ScopeGPU, "0000:39:00.0")}}}}, ActionResetGPU},
		{"a spec that could not run, its suite ran", Node{Name: "n1", Status: NodeEvaluated, Suites: []Suite{
			{Name: "a", Specs: []Spec{{Name: "p", State: StatePassed}, cannot}}}}, ActionNone},
		{"a suite that could not run", Node{Name: "n1", Status: NodeEvaluated, Suites: []Suite{
			{Name: "a", Specs: []Spec{cannot}}}}, ActionRerun},
		{"missing", Node{Name: "n1", Status: NodeMissing}, ActionRerun},
		{"a failure without an action", Node{Name: "n1", Status: NodeEvaluated, Suites: []Suite{
			{Name: "a", Specs: []Spec{{Name: "x", State: StateFailed}, failed(ActionRerun, ScopeNode, "")}}}}, ActionInvestigate},
	} {
		n := c.n
		n.Settle()
		n.Settle() // idempotent
		if n.Action != c.want {
			t.Errorf("%s: %q, want %q", c.name, n.Action, c.want)
		}
		for _, s := range n.Suites {
			for _, sp := range s.Specs {
				if sp.Scope == ScopeNode && sp.NeedsRemedy() && sp.Entity != "n1" {
					t.Errorf("%s: %s / %s names %q, want the node", c.name, s.Name, sp.Name, sp.Entity)
				}
			}
		}
		want := []string(nil)
		if c.name == "a failure without an action" {
			want = []string{"a / x"}
		}
		if got := n.Unremedied(); !slices.Equal(got, want) {
			t.Errorf("%s: unremedied %q, want %q", c.name, got, want)
		}
	}
}

// results.json refuses a word a remediation pipeline would not know.
func TestReadRefusesAnActionOutsideTheVocabulary(t *testing.T) {
	n := Node{Name: "n1", Status: NodeEvaluated, Suites: []Suite{{Name: "a", Specs: []Spec{
		{Name: "x", State: StateFailed, Action: "REBOOT_NOW", Scope: ScopeNode}}}}}
	if err := checkNode(n, "nodes[0]"); err == nil {
		t.Error("action REBOOT_NOW accepted")
	}
	n.Suites[0].Specs[0].Action, n.Suites[0].Specs[0].Scope = ActionReboot, "rack"
	if err := checkNode(n, "nodes[0]"); err == nil {
		t.Error("scope rack accepted")
	}
	n.Suites[0].Specs[0].Scope = ScopeNode
	if err := checkNode(n, "nodes[0]"); err != nil {
		t.Errorf("a valid action refused: %v", err)
	}
}
