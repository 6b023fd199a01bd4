package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	mpisuite "github.com/gdrcheck/gdrcheck/suites/mpi"
)

// ucxLogView is what --format json prints: the parsed log with each
// table's path and the outcome suites/mpi judged.
type ucxLogView struct {
	Transfers     []mpisuite.JudgedTransfer `json:"transfers"`
	EPConfigs     []ucx.EPConfig            `json:"ep_configs"`
	Outcome       string                    `json:"outcome"`
	Reasons       []string                  `json:"reasons"`
	Hints         []string                  `json:"ucx_info_hints,omitempty"`
	Partial       bool                      `json:"partial"`
	PartialReason string                    `json:"partial_reason,omitempty"`
	Info          *ucx.Info                 `json:"ucx_info,omitempty"`
}

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
not judged: they do not say where GPU data goes. Where the log also holds
the node's ` + "`ucx_info -d`" + ` listing, a staged transfer gets a hint naming the
NIC whose memory domain registers no cuda memory (GPUDirect RDMA off for
UCX), or the missing cuda_ipc.

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
				return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: %w; %s", args[0], err, f.noData(mpisuite.HintUCXLog))}
			}
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			v := mpisuite.JudgeLog(s, nil)
			code, why := mpisuite.LogExit(s, v)
			view := ucxLogView{Transfers: v.Transfers, EPConfigs: s.EPConfigs, Outcome: v.Outcome, Reasons: v.Reasons, Hints: v.Hints, Partial: s.Partial, PartialReason: s.PartialReason, Info: s.Info}
			return analyzeReport(cmd.OutOrStdout(), args[0], format, view, func(w io.Writer) error { return printUCXLog(w, view, code, why) }, code, why)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	in = addInput(cmd)
	return cmd
}

func printUCXLog(w io.Writer, s ucxLogView, code int, why string) error {
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
	for _, h := range s.Hints {
		fmt.Fprintf(w, "hint: %s\n", reports.Terminal(h))
	}
	if s.Partial && code != results.ExitUnevaluable {
		fmt.Fprintf(w, "partial: %s\n", reports.Terminal(s.PartialReason))
	}
	fmt.Fprintf(w, "result: %s: %s\n", judgement(code), reports.Terminal(why))
	return nil
}
