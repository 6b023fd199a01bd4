package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/analyze"
)

// analyzeExitCodes is the contract every analyze command keeps, for a CI
// gate to rely on.
const analyzeExitCodes = `Exit codes:
  0  what it judged passed
  1  it judged a failure: a failed run, a fallback, errors
  2  nothing it can judge: the file is unreadable, empty, not the tool's
     output, or partial (cut mid-line, killed, trimmed, stopping before its
     last size); standard error says why and how to get one it can judge.
     A failure already in a partial output is still judged: exit 1.
     An input is read up to --max-bytes (default 4 GiB) and until the
     first SIGINT or SIGTERM: what was read is judged, as partial, and
     the reason names the cap or the signal; a second signal kills.`

func newAnalyzeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Read recorded tool output offline: which path did NCCL take?",
		Long: `Analyze reads the output of a run that already happened, on any machine,
and says what it shows. FILE "-" reads standard input.

  gdrcheck analyze nccl-log FILE      transports per channel, GDR per HCA, verdict
  gdrcheck analyze nccl-tests FILE    the result table of an nccl-tests run
  gdrcheck analyze perftest FILE      bandwidth, memory and failure of a perftest run
  gdrcheck analyze ucx-log FILE       GPU-memory paths in a UCX_PROTO_INFO=y log, verdict

The NCCL log needs NCCL_DEBUG=INFO and, for the channel and per-HCA GDR
lines, NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM. Each command's --help
says what it judges.

` + analyzeExitCodes,
	}
	cmd.AddCommand(newAnalyzeNCCLLogCmd(), newAnalyzeNCCLTestsCmd(), newAnalyzePerftestCmd(), newAnalyzeUCXLogCmd())
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return fmt.Errorf("--format %q: want text or json", format)
	}
	return nil
}

// An analyzer is what one analyze subcommand gives the skeleton they
// share (command): how it reads FILE, how it judges what it read
// (suites/analyze) and how it prints it.
type analyzer[T any] struct {
	// check refuses the command's own flags before FILE is opened.
	check func() error
	// parse reads FILE. An error wrapping noData is an input that is not
	// the tool's output: the refusal says, after sep, what the command
	// reads (want).
	parse     func(cmd *cobra.Command, in *input) (T, error)
	noData    error
	sep, want string
	judge     func(T) (code int, why string)
	// report is what --format json writes (nil: what parse returned).
	report func(T) any
	print  func(w io.Writer, v T, code int, why string) error
}

// command is the analyze subcommand: --format and --max-bytes, FILE
// opened, parsed, judged, printed as text or JSON, and the judgement's
// exit code.
func (a analyzer[T]) command(use, short, long string) *cobra.Command {
	var format string
	var in *inputOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long + "\n\n" + analyzeExitCodes,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if a.check != nil {
				if err := a.check(); err != nil {
					return err
				}
			}
			return a.run(cmd, in, args[0], format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	in = addInput(cmd)
	return cmd
}

func (a analyzer[T]) run(cmd *cobra.Command, in *inputOptions, name, format string) error {
	f, err := in.open(cmd, name)
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	defer f.Close()
	v, err := a.parse(cmd, f)
	if errors.Is(err, a.noData) {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: %w%s%s", name, err, a.sep, f.noData(a.want))}
	}
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: %w", name, err)}
	}
	code, why := a.judge(v)
	w := cmd.OutOrStdout()
	if format == "json" {
		var report any = v
		if a.report != nil {
			report = a.report(v)
		}
		err = writeJSON(w, report)
	} else {
		err = a.print(w, v, code, why)
	}
	if err != nil {
		return err
	}
	return analyzeExit(name, code, why)
}

// analyzeExit is the error that carries an analyze command's exit code;
// for 2 it says on standard error why nothing could be judged.
func analyzeExit(name string, code int, why string) error {
	switch code {
	case results.ExitPassed:
		return nil
	case results.ExitUnevaluable:
		return &exitError{code: code, err: fmt.Errorf("%s: %s", name, why)}
	}
	return &exitError{code: code}
}

func newAnalyzeNCCLLogCmd() *cobra.Command {
	a := analyzer[*nccl.LogSummary]{
		parse:  func(_ *cobra.Command, in *input) (*nccl.LogSummary, error) { return nccl.ParseLog(in) },
		noData: nccl.ErrNoData, sep: ": no NCCL debug line; ", want: analyze.DebugHint,
		judge: analyze.Log,
		print: printLog,
	}
	return a.command("nccl-log FILE", "Classify the transports of an NCCL_DEBUG=INFO log",
		`nccl-log reads an NCCL debug log (NCCL 2.18 and later) and classifies every
channel connection: P2P/CUMEM, P2P/IPC, P2P/direct, SHM, NET/IB/GDRDMA,
NET/IB (host-staged), NET/Socket, CollNet, other net plugins. It reports the
NCCL version, the network, per HCA whether GPU Direct RDMA is enabled, and a
verdict: direct, fallback or unknown, with the reasons. Offline the verdict
takes intra-node P2P and inter-node NET with GDRDMA as direct.

The text lists the findings with their line in the log: errors (NCCL's
error traces, "transport/net.cc:1134 -> 6"), warnings (WARN lines) and
hints (NCCL saying why it will not use GPU Direct RDMA, as "GPU Direct RDMA
Disabled for HCA 0 'mlx5_0' (no module)", with what to do about it).

The JSON has nccl_version, network, transports (class -> connections),
gdr_hcas, verdict and reasons, findings (level, source, text, count, line),
hints (kind, text, line, count, advice), partial and partial_reason.

Exit 0: every channel connection took the direct path, in a log of a whole
run (warnings may be listed). Exit 1: a fallback; an error NCCL reported;
or a warning in a log without a direct connection. Exit 2: no NCCL debug
line, no channel connection line, or a log that does not cover a whole run
(cut, an excerpt, or stopping before NCCL destroyed its communicators).`)
}

// judgement names an exit code in the text output.
func judgement(code int) string {
	switch code {
	case results.ExitPassed:
		return "pass"
	case results.ExitFailed:
		return "failure"
	}
	return "cannot judge"
}

func printLog(w io.Writer, s *nccl.LogSummary, code int, why string) error {
	t := reports.Table{Title: fmt.Sprintf("%s, network %s: %s", ncclVersionHeading(s.NCCLVersion), orDash(s.Network), s.Outcome), Header: []string{"transport", "connections"}}
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
		fmt.Fprintf(w, "- %s\n", reports.Terminal(r))
	}
	for _, f := range s.Findings {
		level, text := "warning", f.Text
		if f.Level == "ERROR" {
			level = "error"
		} else if f.Source != "" {
			text = f.Source + ": " + text
		}
		fmt.Fprintf(w, "%s (%s): %s\n", level, lineAndCount(f.Line, f.Count, "times"), reports.Terminal(text))
	}
	if s.FindingsOmitted > 0 {
		fmt.Fprintf(w, "... and %d more lines of findings\n", s.FindingsOmitted)
	}
	for _, h := range s.Hints {
		fmt.Fprintf(w, "hint (%s): %s\n  %s\n", lineAndCount(h.Line, h.Count, "NICs"), reports.Terminal(h.Text), reports.Terminal(h.Advice))
	}
	if s.Partial && code != results.ExitUnevaluable { // else the result says why
		fmt.Fprintf(w, "partial: %s\n", s.PartialReason)
	}
	fmt.Fprintf(w, "result: %s: %s\n", judgement(code), reports.Terminal(why))
	return nil
}

// lineAndCount writes "line 12" or "line 12, 3 times".
func lineAndCount(line, count int, what string) string {
	s := "line " + strconv.Itoa(line)
	if count > 1 {
		s += fmt.Sprintf(", %d %s", count, what)
	}
	return s
}
