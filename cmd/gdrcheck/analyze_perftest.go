package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/perftest"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/analyze"
)

// perftestReport is what `analyze perftest --format json` prints: the
// parsed result, with error always present ("" for a run that succeeded).
type perftestReport struct {
	*perftest.Result
	Error string `json:"error"`
}

func newAnalyzePerftestCmd() *cobra.Command {
	var mem string
	a := analyzer[*perftest.Result]{
		check: func() error {
			switch perftest.Mem(mem) {
			case perftest.MemUnknown, perftest.MemHost, perftest.MemCUDA, perftest.MemCUDADMABuf:
				return nil
			}
			return fmt.Errorf("--mem %q: want host, cuda or cuda-dmabuf", mem)
		},
		parse: func(cmd *cobra.Command, in *input) (*perftest.Result, error) {
			res, err := readPerftest(in)
			if err == nil {
				declareMem(cmd, res, perftest.Mem(mem))
			}
			return res, err
		},
		noData: perftest.ErrNoOutput, sep: ": ", want: perftestExpected,
		judge:  analyze.Perftest,
		report: func(r *perftest.Result) any { return perftestReport{Result: r, Error: r.Error} },
		print:  printPerftest,
	}
	cmd := a.command("perftest FILE", "Read the output of ib_write_bw and its siblings (text or --out_json)", `perftest reads what ib_write_bw, ib_read_bw, ib_write_lat and the other
perftest binaries printed, or the file written by --out_json (a name ending
in .json), and says how fast the run went, where its buffers lived and why
it failed if it did. FILE "-" reads standard input.

Memory is host, cuda (--use_cuda: GPU memory registered through
nvidia_peermem) or cuda-dmabuf (--use_cuda_dmabuf), as the output shows it
(the echoed command line, the CUDA and DMA-BUF lines). An output that does
not say (an excerpt starting at the banner; the JSON never tells the CUDA
paths apart) leaves it empty; --mem says what the run used.

The JSON has bw_peak_gbps, bw_avg_gbps and msg_size (from the largest
message size), mem, error ("" when the run succeeded), the decoded failure
(with line, the line of its cause in the output), partial and
partial_reason, the banner settings and every row. Bandwidths are in Gb/s
whatever unit perftest printed.

Exit 0: a whole run (its table closed by perftest's dashed line) that
printed no failure. Exit 1: perftest printed a failure (a completion
error, a memory registration that failed, a connection that failed), even
in a partial output. Exit 2: the file cannot be read, is not perftest
output (an NCCL log, a line of text that only says "failed"), or is
partial: cut mid-line (a cut row is not read as a result), a table that
stops before its closing line, or no result row at all; the reason names
the last size read.`)
	cmd.Flags().StringVar(&mem, "mem", "", "the memory the run used, for outputs that do not say: host, cuda or cuda-dmabuf")
	return cmd
}

// perftestExpected is what analyze perftest reads, for a refusal to say.
const perftestExpected = "expected what ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw or their _lat siblings print " +
	"(the banner, the #bytes table closed by a dashed line, or perftest's errors), or the file --out_json writes (a name ending in .json)"

// readPerftest parses FILE; a name ending in .json is perftest's
// --out_json file.
func readPerftest(in *input) (*perftest.Result, error) {
	if strings.HasSuffix(in.name, ".json") {
		return perftest.ParseJSON(in)
	}
	return perftest.Parse(in)
}

// declareMem takes --mem for a run whose output does not say where its
// buffers lived; where the output says otherwise, it wins, and stderr
// says --mem was ignored.
func declareMem(cmd *cobra.Command, res *perftest.Result, declared perftest.Mem) {
	switch {
	case declared == perftest.MemUnknown:
	case res.Mem == perftest.MemUnknown:
		res.Mem, res.MemEvidence = declared, "--mem "+string(declared)
	case res.Mem != declared:
		fmt.Fprintf(cmd.ErrOrStderr(), "gdrcheck: --mem %s ignored: the output shows %s (%s)\n", declared, res.Mem, reports.Terminal(res.MemEvidence))
	}
}

func printPerftest(w io.Writer, r *perftest.Result, code int, why string) error {
	test := r.Test
	if test == "" {
		test = "perftest"
	}
	title := test
	if r.Device != "" {
		title += " on " + r.Device
	}
	if r.LinkType != "" {
		title += " (" + r.LinkType + ")"
	}
	mem := string(r.Mem)
	if mem == "" {
		mem = "unknown"
	}
	title += ", memory " + mem
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	t := reports.Table{Title: title}
	if r.Kind == perftest.KindLat {
		unit := r.LatencyUnit
		if unit == "" {
			unit = "usec"
		}
		t.Header = []string{"size", "iterations", "t_min " + unit, "t_typical " + unit, "t_avg " + unit, "t_max " + unit, "99% " + unit}
		for _, row := range r.Rows {
			t.Rows = append(t.Rows, []string{results.SizeString(row.Bytes), strconv.FormatInt(row.Iterations, 10), num(row.TMin), num(row.TTypical), num(row.TAvg), num(row.TMax), num(row.P99)})
		}
	} else {
		t.Header = []string{"size", "iterations", "BW peak Gb/s", "BW average Gb/s", "MsgRate Mpps"}
		for _, row := range r.Rows {
			t.Rows = append(t.Rows, []string{results.SizeString(row.Bytes), strconv.FormatInt(row.Iterations, 10), num(row.BWPeakGbps), num(row.BWAvgGbps), strconv.FormatFloat(row.MsgRateMpps, 'f', -1, 64)})
		}
	}
	if err := t.Render(w, reports.FormatText); err != nil {
		return err
	}
	if r.Kind != perftest.KindLat && len(r.Rows) > 0 {
		at := results.SizeString(r.MsgSize)
		if r.Partial {
			at = "the largest size read, " + at // not the run's largest
		}
		fmt.Fprintf(w, "bandwidth at %s: peak %s Gb/s, average %s Gb/s\n", at, num(r.BWPeakGbps), num(r.BWAvgGbps))
	}
	if r.MemEvidence != "" {
		fmt.Fprintf(w, "memory %s: %s\n", mem, reports.Terminal(r.MemEvidence))
	}
	if r.GPU != "" {
		fmt.Fprintf(w, "GPU: %s\n", reports.Terminal(r.GPU))
	}
	if f := r.Failure; f != nil && len(f.Lines) > 0 {
		fmt.Fprintf(w, "error: %s\n", reports.Terminal(r.Error))
		where := f.Kind
		if f.Line > 0 {
			where += fmt.Sprintf(", line %d", f.Line)
		}
		fmt.Fprintf(w, "cause (%s): %s\n", where, reports.Terminal(f.Cause))
	}
	if r.Partial && code != results.ExitUnevaluable { // else the result says why
		fmt.Fprintf(w, "partial: %s\n", r.PartialReason)
	}
	fmt.Fprintf(w, "result: %s: %s\n", judgement(code), reports.Terminal(why))
	return nil
}
