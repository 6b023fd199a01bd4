package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/analyze"
)

// testsExpected is what analyze nccl-tests reads, for a refusal to say.
const testsExpected = `expected what all_reduce_perf and the other nccl-tests binaries print (the "#" header, the size table and its "# Avg bus bandwidth" footer), or the file -J writes (a name ending in .json)`

func newAnalyzeNCCLTestsCmd() *cobra.Command {
	a := analyzer[*nccl.TestsResult]{
		parse: func(_ *cobra.Command, in *input) (*nccl.TestsResult, error) {
			if strings.HasSuffix(in.name, ".json") {
				return nccl.ParseTestsJSON(in)
			}
			return nccl.ParseTests(in)
		},
		noData: nccl.ErrNoData, sep: ": ", want: testsExpected,
		judge: analyze.Tests,
		print: printTests,
	}
	return a.command("nccl-tests FILE", "Read the result table of an nccl-tests run (text or -J JSON)", `nccl-tests reads the output of all_reduce_perf and the other nccl-tests
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
the same output when the run had NCCL_DEBUG=INFO.`)
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
		fmt.Fprintf(w, "failure%s: %s\n", analyze.OnLine(fl.Line), reports.Terminal(analyze.FailureLine(fl)))
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
