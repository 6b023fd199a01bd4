package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/perftest"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// perftestReport is what `analyze perftest --format json` prints: the
// parsed result, with error always present ("" for a run that succeeded).
type perftestReport struct {
	*perftest.Result
	Error string `json:"error"`
}

func newAnalyzePerftestCmd() *cobra.Command {
	var format, mem string
	var in *inputOptions
	cmd := &cobra.Command{
		Use:   "perftest FILE",
		Short: "Read the output of ib_write_bw and its siblings (text or --out_json)",
		Long: `perftest reads what ib_write_bw, ib_read_bw, ib_write_lat and the other
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
the last size read.

` + analyzeExitCodes,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			declared := perftest.Mem(mem)
			switch declared {
			case perftest.MemUnknown, perftest.MemHost, perftest.MemCUDA, perftest.MemCUDADMABuf:
			default:
				return fmt.Errorf("--mem %q: want host, cuda or cuda-dmabuf", mem)
			}
			f, err := in.open(cmd, args[0])
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: err}
			}
			defer f.Close()
			res, err := readPerftest(f)
			if errors.Is(err, perftest.ErrNoOutput) {
				err = fmt.Errorf("%w: %s", err, f.noData(perftestExpected))
			}
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: err}
			}
			if declared != perftest.MemUnknown {
				switch res.Mem {
				case perftest.MemUnknown:
					res.Mem, res.MemEvidence = declared, "--mem "+mem
				case declared:
				default:
					fmt.Fprintf(cmd.ErrOrStderr(), "gdrcheck: --mem %s ignored: the output shows %s (%s)\n", declared, res.Mem, reports.Terminal(res.MemEvidence))
				}
			}
			code, why := judgePerftest(res)
			return analyzeReport(cmd.OutOrStdout(), args[0], format, perftestReport{Result: res, Error: res.Error},
				func(w io.Writer) error { return printPerftest(w, res, code, why) }, code, why)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&mem, "mem", "", "the memory the run used, for outputs that do not say: host, cuda or cuda-dmabuf")
	in = addInput(cmd)
	return cmd
}

// perftestExpected is what analyze perftest reads, for a refusal to say.
const perftestExpected = "expected what ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw or their _lat siblings print " +
	"(the banner, the #bytes table closed by a dashed line, or perftest's errors), or the file --out_json writes (a name ending in .json)"

// judgePerftest is the exit code for a perftest result and why.
func judgePerftest(r *perftest.Result) (int, string) {
	switch f := r.Failure; {
	case f != nil && len(f.Lines) > 0:
		return results.ExitFailed, fmt.Sprintf("perftest failed (%s)%s: %s", f.Kind, onLine(f.Line), f.Cause)
	case r.Partial:
		return results.ExitUnevaluable, "partial perftest output: " + r.PartialReason +
			"; rerun it to completion and keep its whole output (standard output and error)"
	case r.Failed():
		return results.ExitFailed, r.Error
	}
	return results.ExitPassed, plural(len(r.Rows), "size") + ", no failure"
}

// readPerftest parses FILE; a name ending in .json is perftest's
// --out_json file.
func readPerftest(in *input) (*perftest.Result, error) {
	parse := perftest.Parse
	if strings.HasSuffix(in.name, ".json") {
		parse = perftest.ParseJSON
	}
	res, err := parse(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.name, err)
	}
	return res, nil
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
