package analyze

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/perftest"
	"github.com/gdrcheck/gdrcheck/results"
)

// Perftest is the exit code for a perftest result and why.
func Perftest(r *perftest.Result) (int, string) {
	switch f := r.Failure; {
	case f != nil && len(f.Lines) > 0:
		return results.ExitFailed, fmt.Sprintf("perftest failed (%s)%s: %s", f.Kind, OnLine(f.Line), f.Cause)
	case r.Partial:
		return results.ExitUnevaluable, "partial perftest output: " + r.PartialReason +
			"; rerun it to completion and keep its whole output (standard output and error)"
	case r.Failed():
		return results.ExitFailed, r.Error
	}
	return results.ExitPassed, Plural(len(r.Rows), "size") + ", no failure"
}
