package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// ucxHint is how to get a UCX log the path can be judged from.
const ucxHint = "rerun with UCX_PROTO_INFO=y (UCX 1.13 and later) and GPU buffers, as osu_bw -d cuda D D or ucx_perftest -m cuda, which prints a protocol table per transfer"

func newAnalyzeUCXLogCmd() *cobra.Command {
	var format string
	var in *inputOptions
	cmd := &cobra.Command{
		Use:   "ucx-log FILE",
		Short: "Classify the GPU-memory paths in a UCX_PROTO_INFO=y log",
		Long: `ucx-log reads a log with UCX's protocol tables (UCX_PROTO_INFO=y, UCX 1.13
and later) and its endpoint lines (UCX_LOG_LEVEL=info), and classifies each
transfer from or into GPU memory by the protocol of its largest sizes:
RDMA zero-copy on an IB/RoCE lane (GPUDirect RDMA), cuda_ipc (inside a
node), or staged through host memory (pipeline, copy-in/copy-out, bcopy, a
cuda_copy bounce, tcp). Host-memory tables and endpoint lines are listed,
not judged: they do not say where GPU data goes.

Exit 0: every judged GPU-memory transfer took a direct path. Exit 1: one
was staged through host memory. Exit 2: no table or endpoint line, or no
GPU-memory transfer to judge.

` + analyzeExitCodes,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			f, err := in.open(cmd, args[0])
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: err}
			}
			defer f.Close()
			s, err := ucx.ParseLog(f)
			if errors.Is(err, ucx.ErrNoData) {
				return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: %w; %s", args[0], err, f.noData(ucxHint))}
			}
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			code, why := judgeUCXLog(s)
			return analyzeReport(cmd.OutOrStdout(), args[0], format, s, func(w io.Writer) error { return printUCXLog(w, s, code, why) }, code, why)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	in = addInput(cmd)
	return cmd
}

// judgeUCXLog is the exit code for a UCX log and why. A staged transfer
// already read fails even in a partial log; a direct one in a partial
// log cannot stand, as the part not read may hold a staged one.
func judgeUCXLog(s *ucx.LogSummary) (int, string) {
	switch {
	case s.Outcome == ucx.OutcomeFallback:
		return results.ExitFailed, "UCX staged GPU memory through the host: " + s.Reasons[0]
	case s.Partial:
		return results.ExitUnevaluable, "the log does not cover a whole run: " + s.PartialReason
	case s.Outcome == ucx.OutcomeDirect:
		return results.ExitPassed, "every GPU-memory transfer took a direct path"
	}
	return results.ExitUnevaluable, "no GPU-memory transfer to judge; " + ucxHint
}

func printUCXLog(w io.Writer, s *ucx.LogSummary, code int, why string) error {
	t := reports.Table{Title: "UCX protocols: " + s.Outcome, Header: []string{"line", "config", "operation", "bulk protocol", "lanes", "path"}}
	for _, x := range s.Transfers {
		t.Rows = append(t.Rows, []string{fmt.Sprint(x.Line), x.Config, x.Operation, x.Range + " " + x.Protocol, x.Lanes, x.Path})
	}
	if err := t.Render(w, reports.FormatText); err != nil {
		return err
	}
	for _, e := range s.EPConfigs {
		fmt.Fprintf(w, "endpoint (line %d): %s %s\n", e.Line, reports.Terminal(e.Config), reports.Terminal(e.Lanes))
	}
	if s.Partial && code != results.ExitUnevaluable {
		fmt.Fprintf(w, "partial: %s\n", reports.Terminal(s.PartialReason))
	}
	fmt.Fprintf(w, "result: %s: %s\n", judgement(code), reports.Terminal(why))
	return nil
}
