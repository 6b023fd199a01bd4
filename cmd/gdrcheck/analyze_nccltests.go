package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// testsExpected is what analyze nccl-tests reads, for a refusal to say.
const testsExpected = `expected what all_reduce_perf and the other nccl-tests binaries print (the "#" header, the size table and its "# Avg bus bandwidth" footer), or the file -J writes (a name ending in .json)`

func newAnalyzeNCCLTestsCmd() *cobra.Command {
	var format string
	var in *inputOptions
	cmd := &cobra.Command{
		Use:   "nccl-tests FILE",
		Short: "Read the result table of an nccl-tests run (text or -J JSON)",
		Long: `nccl-tests reads the output of all_reduce_perf and the other nccl-tests
binaries, as text or as the JSON file written by -J (a name ending in .json),
and prints per message size the out-of-place and in-place bus bandwidth and
wrong elements, the average bus bandwidth, and the failures the run printed
with their line in the output.

The JSON has rows (each with size, busbw_oop, busbw_ip, wrong), avg_busbw,
failures (each with kind, where, message and line), partial and
partial_reason.

Exit 0: a whole run (its table ends with the "# Avg bus bandwidth" footer)
without failures. Exit 1: a failure line ("Test NCCL failure", "Test
failure", "# error:", an NCCL WARN or error trace among the rows), wrong
elements or out-of-bounds values, even in a partial output. Exit 2: no
nccl-tests output, no result table, or a partial output: cut mid-line, a
table that stops without its footer (the reason names the last size
read), or a damaged table: a size that repeats or goes back, or a row that
does not parse (a value that is inf, nan or past int64, NCCL's log
interleaved into it); the reason names the line and the row.

The path NCCL took is not in the table: analyze nccl-log judges it from
the same output when the run had NCCL_DEBUG=INFO.

` + analyzeExitCodes,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			f, err := in.open(cmd, args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			parse := nccl.ParseTests
			if strings.HasSuffix(args[0], ".json") {
				parse = nccl.ParseTestsJSON
			}
			t, err := parse(f)
			if errors.Is(err, nccl.ErrNoData) {
				return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: %w: %s", args[0], err, f.noData(testsExpected))}
			}
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			code, why := judgeTests(t)
			return analyzeReport(cmd.OutOrStdout(), args[0], format, t, func(w io.Writer) error { return printTests(w, t, code, why) }, code, why)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	in = addInput(cmd)
	return cmd
}

// judgeTests is the exit code for an nccl-tests result and why.
func judgeTests(t *nccl.TestsResult) (int, string) {
	switch {
	case len(t.Failures) > 0:
		f := t.Failures[0]
		return results.ExitFailed, fmt.Sprintf("nccl-tests reported a failure%s: %s", onLine(f.Line), failureLine(f))
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
	return results.ExitPassed, plural(len(t.Rows), "size") + " without a failure or a wrong element"
}

// failureLine writes a failure the way nccl-tests prints it.
func failureLine(f nccl.Failure) string {
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

// onLine is " on line N", or "" where the line is unknown (the JSON).
func onLine(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" on line %d", n)
}

// testsHeading names the collective and the NCCL version, leaving out
// what the output does not say rather than printing "-, NCCL -".
func testsHeading(t *nccl.TestsResult) string {
	version := ncclVersionHeading(t.NCCLVersion)
	if t.Collective == "" {
		return "nccl-tests, " + version
	}
	return t.Collective + ", " + version
}

// ncclVersionHeading is "NCCL 2.26.6", or "NCCL version unknown" for an
// output without a version line.
func ncclVersionHeading(v string) string {
	if v == "" {
		return "NCCL version unknown"
	}
	return "NCCL " + v
}

func printTests(w io.Writer, t *nccl.TestsResult, code int, why string) error {
	tb := reports.Table{Title: testsHeading(t), Header: []string{"size", "busbw oop GB/s", "busbw ip GB/s", "wrong"}}
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
		fmt.Fprintf(w, "failure%s: %s\n", onLine(fl.Line), reports.Terminal(failureLine(fl)))
	}
	if t.FailuresOmitted > 0 {
		fmt.Fprintf(w, "... and %d more failure lines\n", t.FailuresOmitted)
	}
	if t.Partial && code != results.ExitUnevaluable { // else the result says why
		fmt.Fprintf(w, "partial: %s\n", t.PartialReason)
	}
	fmt.Fprintf(w, "result: %s: %s\n", judgement(code), reports.Terminal(why))
	return nil
}
