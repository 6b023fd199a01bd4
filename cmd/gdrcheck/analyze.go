package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

func newAnalyzeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Read recorded tool output offline: which path did NCCL take?",
		Long: `Analyze reads the output of a run that already happened, on any machine,
and says what it shows. FILE "-" reads standard input.

  gdrcheck analyze nccl-log FILE      transports per channel, GDR per HCA, verdict
  gdrcheck analyze nccl-tests FILE    the result table of an nccl-tests run
  gdrcheck analyze perftest FILE      bandwidth, memory and failure of a perftest run

The NCCL log needs NCCL_DEBUG=INFO and, for the per-HCA GDR lines,
NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM.

Exit 0 when the run looks right (direct path; no nccl-tests failure), 1 when
it does not (a fallback, a failed run), 2 when the file cannot be read.`,
	}
	cmd.AddCommand(newAnalyzeNCCLLogCmd(), newAnalyzeNCCLTestsCmd(), newAnalyzePerftestCmd())
	return cmd
}

func openInput(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	return os.Open(name)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func newAnalyzeNCCLLogCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "nccl-log FILE",
		Short: "Classify the transports of an NCCL_DEBUG=INFO log",
		Long: `nccl-log reads an NCCL debug log (NCCL 2.18 and later) and classifies every
channel connection: P2P/CUMEM, P2P/IPC, P2P/direct, SHM, NET/IB/GDRDMA,
NET/IB (host-staged), NET/Socket, CollNet, other net plugins. It reports the
NCCL version, the network, per HCA whether GPU Direct RDMA is enabled, and a
verdict: direct, fallback or unknown, with the reasons. Offline the verdict
takes intra-node P2P and inter-node NET with GDRDMA as direct.

The JSON has nccl_version, network, transports (class -> connections),
gdr_hcas, verdict and reasons.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := openInput(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			s, err := nccl.ParseLog(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			w := cmd.OutOrStdout()
			switch format {
			case "json":
				if err := writeJSON(w, s); err != nil {
					return err
				}
			case "text":
				t := reports.Table{Title: fmt.Sprintf("NCCL %s, network %s: %s", orDash(s.NCCLVersion), orDash(s.Network), s.Outcome), Header: []string{"transport", "connections"}}
				for _, c := range slices.Sorted(maps.Keys(s.Transports)) {
					t.Rows = append(t.Rows, []string{c, strconv.Itoa(s.Transports[c])})
				}
				if err := t.Render(w, reports.FormatText); err != nil {
					return err
				}
				for _, h := range s.GDRHCAs {
					b, _ := json.Marshal(h)
					fmt.Fprintf(w, "GDR HCA: %s\n", b)
				}
				for _, r := range s.Reasons {
					fmt.Fprintf(w, "- %s\n", r)
				}
				if s.Partial {
					fmt.Fprintf(w, "partial: %s\n", s.PartialReason)
				}
			default:
				return fmt.Errorf("--format %q: want text or json", format)
			}
			if s.Outcome != nccl.VerdictDirect {
				return &exitError{code: results.ExitFailed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func newAnalyzeNCCLTestsCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "nccl-tests FILE",
		Short: "Read the result table of an nccl-tests run (text or -J JSON)",
		Long: `nccl-tests reads the output of all_reduce_perf and the other nccl-tests
binaries, as text or as the JSON file written by -J (a name ending in .json),
and prints per message size the out-of-place and in-place bus bandwidth and
wrong elements, the average bus bandwidth, and the failures the run printed.

The JSON has rows (each with size, busbw_oop, busbw_ip, wrong), avg_busbw and
failures.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := openInput(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			parse := nccl.ParseTests
			if strings.HasSuffix(args[0], ".json") {
				parse = nccl.ParseTestsJSON
			}
			t, err := parse(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			w := cmd.OutOrStdout()
			switch format {
			case "json":
				if err := writeJSON(w, t); err != nil {
					return err
				}
			case "text":
				tb := reports.Table{Title: fmt.Sprintf("%s, NCCL %s", orDash(t.Collective), orDash(t.NCCLVersion)), Header: []string{"size", "busbw oop GB/s", "busbw ip GB/s", "wrong"}}
				for _, r := range t.Rows {
					tb.Rows = append(tb.Rows, []string{results.SizeString(r.Size), strconv.FormatFloat(r.BusBWOOP, 'f', 2, 64), strconv.FormatFloat(r.BusBWIP, 'f', 2, 64), strconv.FormatInt(r.Wrong, 10)})
				}
				if err := tb.Render(w, reports.FormatText); err != nil {
					return err
				}
				if t.AvgBusBW != nil {
					fmt.Fprintf(w, "average busbw: %.3f GB/s\n", *t.AvgBusBW)
				}
				for _, fl := range t.Failures {
					fmt.Fprintf(w, "failure: Test %s failure %s %s\n", fl.Kind, fl.Where, fl.Message)
				}
				if t.Partial {
					fmt.Fprintf(w, "partial: %s\n", t.PartialReason)
				}
			default:
				return fmt.Errorf("--format %q: want text or json", format)
			}
			if t.Failed() {
				return &exitError{code: results.ExitFailed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}
