package suites

import (
	"github.com/onsi/ginkgo/v2"

	"github.com/gdrcheck/gdrcheck/results"
)

// SkipKindEntry is the report entry that carries a skip's kind
// (results.SkipNotApplicable, results.SkipCannotRun) to the runner.
const SkipKindEntry = "gdrcheck.skip"

// NotApplicable skips the running spec because the check does not apply
// to this node's shape (one GPU, no NICs) or to what the operator asked;
// the verdict is unaffected.
func NotApplicable(why string) {
	skip(results.SkipNotApplicable, why)
}

// CannotRun skips the running spec because it applies but could not run
// here: a tool missing, no permission, a library unusable. why says what
// to install or which flag to set. A suite left with nothing else makes
// the run exit 2 (results.Results.ExitCode).
func CannotRun(why string) {
	skip(results.SkipCannotRun, why)
}

func skip(kind, why string) {
	ginkgo.AddReportEntry(SkipKindEntry, kind, ginkgo.ReportEntryVisibilityNever)
	ginkgo.Skip(why, 2)
}
