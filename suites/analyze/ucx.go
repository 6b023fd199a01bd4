package analyze

import (
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/results"
	mpisuite "github.com/gdrcheck/gdrcheck/suites/mpi"
)

// UCXLog is a UCX log judged: what `analyze ucx-log --format json`
// prints, the parsed log with each table's path, its error lines with
// their meaning, and the outcome suites/mpi judged (mpisuite.JudgeLog,
// as the mpi suite judges its runs).
type UCXLog struct {
	Transfers     []mpisuite.JudgedTransfer `json:"transfers"`
	EPConfigs     []ucx.EPConfig            `json:"ep_configs"`
	Errors        []mpisuite.JudgedError    `json:"errors,omitempty"`
	Failure       string                    `json:"failure,omitempty"`
	Cut           []string                  `json:"cut_tables,omitempty"`
	MessageSizes  []uint64                  `json:"message_sizes,omitempty"`
	Outcome       string                    `json:"outcome"`
	Reasons       []string                  `json:"reasons"`
	Hints         []string                  `json:"ucx_info_hints,omitempty"`
	Partial       bool                      `json:"partial"`
	PartialReason string                    `json:"partial_reason,omitempty"`
	Info          *ucx.Info                 `json:"ucx_info,omitempty"`
}

// JudgeUCXLog judges a UCX log with the ucx_info listing it holds, if any.
func JudgeUCXLog(s *ucx.LogSummary) UCXLog {
	v := mpisuite.JudgeLog(s, nil)
	return UCXLog{Transfers: v.Transfers, EPConfigs: s.EPConfigs, Errors: v.Errors, Failure: v.Failure, Cut: v.Cut,
		MessageSizes: s.MessageSizes, Outcome: v.Outcome, Reasons: v.Reasons, Hints: v.Hints,
		Partial: s.Partial, PartialReason: s.PartialReason, Info: s.Info}
}

// UCX is the exit code for a judged UCX log and why. An error line or a
// staged transfer already read fails even in a partial log; a direct one
// in a partial log, or beside a GPU-memory table cut before the rows it
// needs, cannot stand, as the part not read may be staged.
func UCX(l UCXLog) (int, string) {
	switch {
	case l.Failure != "" && l.Outcome == mpisuite.OutcomeFallback:
		return results.ExitFailed, "UCX failed: " + l.Failure + "; and it staged GPU memory through the host: " + l.Reasons[0]
	case l.Failure != "":
		return results.ExitFailed, "UCX failed: " + l.Failure
	case l.Outcome == mpisuite.OutcomeFallback:
		return results.ExitFailed, "UCX staged GPU memory through the host: " + l.Reasons[0]
	case l.Partial:
		return results.ExitUnevaluable, "the log does not cover a whole run: " + l.PartialReason
	case len(l.Cut) > 0:
		return results.ExitUnevaluable, "a GPU-memory table is cut before the rows that decide it, so the sizes it lacks may be staged: " +
			strings.Join(l.Cut, "; ") + "; judge the whole log of the run"
	case l.Outcome == mpisuite.OutcomeDirect:
		return results.ExitPassed, "every GPU-memory transfer took a direct path"
	}
	return results.ExitUnevaluable, "no GPU-memory transfer to judge; " + mpisuite.HintUCXLog
}
