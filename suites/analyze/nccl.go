package analyze

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/results"
)

// DebugHint is how to get an NCCL log the path can be judged from.
var DebugHint = "rerun with " + strings.Join(nccl.DebugEnv, " ") + ", which prints the channel lines NCCL's path is judged from"

// Log is the exit code for an NCCL log and why, in one sentence.
func Log(s *nccl.LogSummary) (int, string) {
	var errs, warns []nccl.Finding
	for _, f := range s.Findings {
		if f.Level == "ERROR" {
			errs = append(errs, f)
		} else {
			warns = append(warns, f)
		}
	}
	fatal, meaning, isFatal := firstFatalWarn(warns)
	switch {
	case s.Outcome == nccl.VerdictFallback:
		return results.ExitFailed, "NCCL fell back: " + nccl.Verdict{Verdict: s.Outcome, Reasons: s.Reasons}.Reason()
	case isFatal:
		// Fatal whatever the channels were: NCCL cannot go on after it,
		// and its error trace may not be in the log (NCCL_DEBUG=WARN).
		why := fmt.Sprintf("NCCL failed: %s: %s", meaning, warnText(fatal))
		if len(errs) > 0 {
			why += fmt.Sprintf(", then %s from line %d", Plural(len(errs), "error trace"), errs[0].Line)
		}
		return results.ExitFailed, why
	case len(errs) > 0 && len(warns) > 0:
		// The WARN names the cause; the traces are its way up the stack.
		return results.ExitFailed, fmt.Sprintf("NCCL failed: %s, then %s from line %d", warnText(warns[0]), Plural(len(errs), "error trace"), errs[0].Line)
	case len(errs) > 0:
		return results.ExitFailed, fmt.Sprintf("NCCL returned an error: %s on line %d (%s)", errs[0].Text, errs[0].Line, Plural(len(errs), "error trace"))
	case len(warns) > 0 && s.Outcome != nccl.VerdictDirect:
		return results.ExitFailed, fmt.Sprintf("NCCL warned, and no connection took the direct path: %s", warnText(warns[0]))
	case s.Partial:
		return results.ExitUnevaluable, "the log does not cover a whole run: " + s.PartialReason +
			"; judge the log of a whole run, from NCCL's start until it destroys its communicators (nccl-tests does before its footer), with " + strings.Join(nccl.DebugEnv, " ")
	case s.Outcome != nccl.VerdictDirect:
		return results.ExitUnevaluable, "no channel connection line to judge; " + DebugHint
	}
	return results.ExitPassed, "every channel connection took the direct path"
}

// warnText writes a WARN finding for a one-line reason.
func warnText(f nccl.Finding) string {
	s := fmt.Sprintf("line %d: %s", f.Line, f.Text)
	if f.Source != "" {
		s += " (" + f.Source + ")"
	}
	return s
}

// Plural writes "1 error trace" or "4 error traces".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Tests is the exit code for an nccl-tests result and why.
func Tests(t *nccl.TestsResult) (int, string) {
	switch {
	case len(t.Failures) > 0:
		f := t.Failures[0]
		return results.ExitFailed, fmt.Sprintf("nccl-tests reported a failure%s: %s", OnLine(f.Line), FailureLine(f))
	case t.OutOfBounds != nil && *t.OutOfBounds > 0:
		return results.ExitFailed, fmt.Sprintf("nccl-tests found %d out-of-bounds values", *t.OutOfBounds)
	case t.Failed():
		for _, r := range t.Rows {
			if r.Wrong > 0 {
				return results.ExitFailed, fmt.Sprintf("nccl-tests found %d wrong elements at %s", r.Wrong, results.SizeString(r.Size))
			}
		}
		return results.ExitFailed, "nccl-tests reported failures past the first 256"
	case t.Partial:
		return results.ExitUnevaluable, "partial nccl-tests output: " + t.PartialReason +
			`; rerun the test to completion and keep its whole output: a whole run ends with its "# Avg bus bandwidth" line`
	}
	return results.ExitPassed, Plural(len(t.Rows), "size") + " without a failure or a wrong element"
}

// FailureLine writes a failure the way nccl-tests prints it.
func FailureLine(f nccl.Failure) string {
	switch f.Kind {
	case "error":
		return "# error: " + f.Message
	case "test":
		return fmt.Sprintf("%s pid %d: Test failure %s", f.Host, f.PID, f.Where)
	case nccl.FailureWarn, nccl.FailureError:
		return "NCCL " + f.Kind + " inside the result table: " + f.Message
	}
	s := strings.TrimSpace(fmt.Sprintf("Test %s failure %s %s", f.Kind, f.Where, f.Message))
	if f.Host != "" {
		s = f.Host + ": " + s
	}
	return s
}

// OnLine is " on line N", or "" where the line is unknown (the JSON).
func OnLine(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" on line %d", n)
}
