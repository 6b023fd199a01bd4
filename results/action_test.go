package results

import "testing"

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
