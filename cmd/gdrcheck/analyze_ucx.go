package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/analyze"
	mpisuite "github.com/gdrcheck/gdrcheck/suites/mpi"
)

func newAnalyzeUCXLogCmd() *cobra.Command {
	a := analyzer[analyze.UCXLog]{
		parse: func(_ *cobra.Command, in *input) (analyze.UCXLog, error) {
			s, err := ucx.ParseLog(in)
			if err != nil {
				return analyze.UCXLog{}, err
			}
			return analyze.JudgeUCXLog(s), nil
		},
		noData: ucx.ErrNoData, sep: "; ", want: mpisuite.HintUCXLog,
		judge: analyze.UCX,
		print: printUCXLog,
	}
	return a.command("ucx-log FILE", "Classify the GPU-memory paths in a UCX_PROTO_INFO=y log", `ucx-log reads a log with UCX's protocol tables (UCX_PROTO_INFO=y, UCX 1.13
and later) and its endpoint lines (UCX_LOG_LEVEL=info), and classifies each
transfer from or into GPU memory by the protocol of its largest sizes:
RDMA zero-copy on an IB/RoCE lane (GPUDirect RDMA), cuda_ipc (inside a
node), or staged through host memory (pipeline, copy-in/copy-out, bcopy, a
cuda_copy bounce, tcp). Host-memory tables and endpoint lines are listed,
not judged: they do not say where GPU data goes. Where the log also holds
the node's `+"`ucx_info -d`"+` listing, a staged transfer gets a hint naming the
NIC whose memory domain registers no cuda memory (GPUDirect RDMA off for
UCX), or the missing cuda_ipc.

Each process's tables are read apart (UCX's [host:pid] and the launcher's
rank: srun -l, pdsh, mpirun --tag-output), and each table is judged by its
rows for the sizes a ucx_perftest header names ("Message size:"), or by
its bulk (..inf) row. UCX's ERROR, DIAG and FATAL lines and the transport
errors of its error handler fail the log with their meaning (no cuda
transport, a memory type the peer cannot serve, retry exceeded, local
protection).

Exit 0: every judged GPU-memory transfer took a direct path. Exit 1: one
was staged through host memory, or UCX printed an error. Exit 2: no
table, endpoint line or error, no GPU-memory transfer to judge, or a
GPU-memory table cut before the rows that decide it.`)
}

// maxUCXErrorsShown bounds the error lines the text lists; the JSON has
// all that were kept.
const maxUCXErrorsShown = 20

func printUCXLog(w io.Writer, s analyze.UCXLog, code int, why string) error {
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
	for i, e := range s.Errors {
		if i == maxUCXErrorsShown {
			fmt.Fprintf(w, "... %d more UCX error lines\n", len(s.Errors)-i)
			break
		}
		fmt.Fprintf(w, "UCX %s (line %d, %s): %s\n", e.Level, e.Line, e.Kind, reports.Terminal(e.Text))
	}
	for _, c := range s.Cut {
		fmt.Fprintf(w, "cut: %s\n", reports.Terminal(c))
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
