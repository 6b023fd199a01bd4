package results

import "testing"

func skipped(name, kind, msg string) Spec {
	return Spec{Name: name, State: StateSkipped, SkipKind: kind, Message: msg}
}

// issue 22: a suite whose specs all skipped is SKIP, never PASS; one that
// could not run here makes the run exit 2 unless something failed.
func TestASuiteThatCouldNotRunIsSkipAndExits2(t *testing.T) {
	missing := "nccl-tests binary not found: all_reduce_perf on PATH (install nccl-tests, or set --nccl-tests-dir)"
	oneGPU := "one GPU: no intra-node path"
	passed := Spec{Name: "p", State: StatePassed}
	failed := Spec{Name: "f", State: StateFailed}
	cases := []struct {
		name   string
		suites []Suite
		status []string
		exit   int
	}{
		{"tool missing", []Suite{{Name: "kernel", Specs: []Spec{passed}}, {Name: "collectives", Specs: []Spec{skipped("a", SkipCannotRun, missing), skipped("b", SkipCannotRun, missing)}}},
			[]string{SuitePass, SuiteSkip}, ExitUnevaluable},
		{"one GPU", []Suite{{Name: "negative", Specs: []Spec{skipped("a", SkipNotApplicable, oneGPU)}}, {Name: "collectives", Specs: []Spec{passed, skipped("b", SkipNotApplicable, oneGPU)}}},
			[]string{SuiteSkip, SuitePass}, ExitPassed},
		{"ran in part", []Suite{{Name: "fabric", Specs: []Spec{passed, skipped("b", SkipCannotRun, "perftest binary not found")}}},
			[]string{SuitePass}, ExitPassed},
		{"a failure outranks it", []Suite{{Name: "kernel", Specs: []Spec{failed}}, {Name: "collectives", Specs: []Spec{skipped("a", SkipCannotRun, missing)}}},
			[]string{SuiteFail, SuiteSkip}, ExitFailed},
	}
	for _, c := range cases {
		r := &Results{Nodes: []Node{{Name: "n", Status: NodeEvaluated, Suites: c.suites}}}
		for i, s := range c.suites {
			if got := s.Status(); got != c.status[i] {
				t.Errorf("%s: %s is %s, want %s", c.name, s.Name, got, c.status[i])
			}
		}
		if got := r.ExitCode(); got != c.exit {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.exit)
		}
	}
}

func TestSkipReasonsAreOneLinePerReasonCouldNotRunFirst(t *testing.T) {
	n := Node{Suites: []Suite{
		{Name: "topology", Specs: []Spec{skipped("x", SkipNotApplicable, "no --expect")}},
		{Name: "collectives", Specs: []Spec{skipped("a", SkipCannotRun, "missing"), skipped("b", SkipCannotRun, "missing")}},
		{Name: "negative", Specs: []Spec{skipped("c", SkipCannotRun, "missing")}},
	}}
	got := n.SkipReasons()
	if len(got) != 2 || got[0].Message != "missing" || got[0].Count != 3 || len(got[0].Suites) != 2 || got[1].Message != "no --expect" {
		t.Errorf("%+v", got)
	}
}

// A folded member keeps the suites that could not run: the job's exit
// code reads them.
func TestLiteKeepsASuiteThatCouldNotRun(t *testing.T) {
	n := Node{Name: "n", Status: NodeEvaluated, Suites: []Suite{{Name: "collectives", Specs: []Spec{skipped("a", SkipCannotRun, "missing")}}}}
	r := &Results{Nodes: []Node{n.Lite()}}
	if r.ExitCode() != ExitUnevaluable {
		t.Errorf("lite node exits %d", r.ExitCode())
	}
}
