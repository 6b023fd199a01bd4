package reports

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

func TestSkipsAndFailuresAreListsWithinAHundredColumns(t *testing.T) {
	long := strings.Repeat("a long finding about a GPU and its NIC ", 6)
	r := &results.Results{Nodes: []results.Node{{Name: "h100-node", Status: results.NodeEvaluated, Suites: []results.Suite{
		{Name: "kernel", Specs: []results.Spec{{Name: "registers", State: results.StateFailed, Message: "first (and 1 more)\nfirst\n" + long}}},
		{Name: "collectives", Specs: []results.Spec{
			{Name: "a", State: results.StateSkipped, SkipKind: results.SkipCannotRun, Message: "nccl-tests binary not found: all_reduce_perf on PATH (install nccl-tests, or set --nccl-tests-dir)"},
			{Name: "b", State: results.StateSkipped, SkipKind: results.SkipCannotRun, Message: "nccl-tests binary not found: all_reduce_perf on PATH (install nccl-tests, or set --nccl-tests-dir)"}}},
	}}}}
	var b strings.Builder
	WriteFailures(&b, r, FormatText)
	WriteSkips(&b, r, FormatText)
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if len(l) > listWidth() {
			t.Errorf("%d columns: %q", len(l), l)
		}
	}
	if strings.Contains(out, "(and 1 more)") {
		t.Errorf("the summary line is printed besides the list:\n%s", out)
	}
	for _, want := range []string{"Skipped: could not run here", "collectives (2 specs): nccl-tests binary not found"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// A failure decides the verdict (exit 1); without it the suite that
	// could not run does (exit 2), and says so.
	if strings.Contains(out, "exit 2") {
		t.Errorf("exit 2 said beside a failure:\n%s", out)
	}
	r.Nodes[0].Suites = r.Nodes[0].Suites[1:]
	b.Reset()
	WriteSkips(&b, r, FormatText)
	if want := "exit 2: collectives could not run here: nccl-tests binary not found"; !strings.Contains(b.String(), want) {
		t.Errorf("missing %q in:\n%s", want, b.String())
	}
	if got := SummaryTable(r).Rows[0][5]; got != results.SuiteSkip {
		t.Errorf("collectives status %s", got)
	}
}

// A job's page says why suites skipped across its nodes, grouped, as the
// console does (each node's section lists its own): a SKIP with no reason
// would be a PASS by another name.
func TestTheHTMLReportSaysWhyEachSkip(t *testing.T) {
	node := func(name string) results.Node {
		return results.Node{Name: name, Status: results.NodeEvaluated, Suites: []results.Suite{
			{Name: "topology", Specs: []results.Spec{{Name: "p", State: results.StatePassed}}},
			{Name: "collectives", Specs: []results.Spec{
				{Name: "a", State: results.StateSkipped, SkipKind: results.SkipCannotRun, Message: "nccl-tests binary not found: all_reduce_perf on PATH (install nccl-tests, or set --nccl-tests-dir)"}}},
		}}
	}
	r := &results.Results{Schema: results.Schema, Nodes: []results.Node{node("gpu1"), node("gpu2")}}
	page := renderHTML(t, r)
	for _, want := range []string{"<caption>Skipped, and why</caption>", "could not run here", "gpu[1-2]", "nccl-tests binary not found: all_reduce_perf on PATH"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
