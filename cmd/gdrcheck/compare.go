package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/compare"
)

type compareOptions struct {
	format    string
	out       string
	tolerance float64
	tcProps   bool
}

func newCompareCmd() *cobra.Command {
	c := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BEFORE AFTER",
		Short: "Compare two runs node by node: what an upgrade changed, and what it broke",
		Long: `Compare judges AFTER against BEFORE, node by node and aspect by aspect, as
an upgrade gate: run the quick gate on a canary node, upgrade it, run the
gate again, compare. Each argument is a run directory (gdrcheck run
--out DIR), a job directory (DIR/job-<id> of gdrcheck submit) or a
results.json.

Per node it reports, each aspect one JUnit testcase ("node X: keeps its
peer-memory mechanism"), so Jenkins tracks it across builds:
  software    driver, kernel modules (open/proprietary), kernel, CUDA,
              NCCL, rdma-core, MLNX_OFED/DOCA: every change is noted; the
              proprietary modules replacing the open ones is a regression
  mechanism   dma-buf -> nvidia_peermem -> none is a regression
  BAR1        a smaller aperture; PCIe: a narrower link or lower maximum
              generation; IOMMU: translation turned on; GPU <-> NIC map:
              a GPU whose preferred NIC is gone or farther
  verdicts    a spec that passed and fails now, a node no longer evaluable
  transports  a direct run that left its path (P2P -> SHM, GDRDMA -> ...)
  bandwidth   busbw that fell by more than its baseline band allows
              (gdrcheck's default 5 % without one; --tolerance overrides)
  known-bad   a node that moved into a fail-level known-bad combination
              of versions (README "Known-bad combinations"), named with
              its source and fix; a warn-level one is noted

Nodes in only one of the runs are noted, not failed: two allocations
seldom hold the same nodes. gdrcheck run --compare-to DIR and gdrcheck
submit --compare-to DIR compare in the same step.

  gdrcheck compare before/ after/
  gdrcheck compare before/ after/ --format junit --out compare.xml

Exit 0 when nothing regressed, 1 on any regression, 2 on bad input (a
missing or malformed results.json, named with its line).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			mergeGC(compareHeapLimit)
			return c.run(cmd, args[0], args[1])
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.format, "format", reports.FormatText, "text, markdown, html or junit")
	f.StringVarP(&c.out, "out", "o", "", "write the comparison to `FILE` (atomically) instead of standard output")
	f.Float64Var(&c.tolerance, "tolerance", 0, "bandwidth drop, as a fraction (0.1 = 10 %), allowed for every run instead of its baseline band")
	f.BoolVar(&c.tcProps, "junit-testcase-properties", false, "add <properties> to JUnit testcases (Jenkins JUnit plugin keepProperties; not valid xUnit junit-10.xsd)")
	return cmd
}

func (c *compareOptions) run(cmd *cobra.Command, beforeArg, afterArg string) error {
	switch c.format {
	case reports.FormatText, reports.FormatMarkdown, formatHTML, formatJUnit:
	default:
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--format %q: want text, markdown, html or junit", c.format)}
	}
	if err := compare.CheckTolerance(c.tolerance); err != nil {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--tolerance: %w", err)}
	}
	// Indexed: a merged job's nodes are read one at a time, from their
	// own files, as the comparison reaches them.
	before, err := readResultsArg(beforeArg, results.OpenIndex)
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("BEFORE: %w", err)}
	}
	defer before.Close()
	after, err := readResultsArg(afterArg, results.OpenIndex)
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("AFTER: %w", err)}
	}
	defer after.Close()
	if err := compare.CommonSources(before, after); err != nil {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("BEFORE %s and AFTER %s: %w", beforeArg, afterArg, err)}
	}
	res, err := compare.CompareSources(before, after, compare.Options{Tolerance: c.tolerance})
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	res.Tool.Args = os.Args[1:]
	var buf bytes.Buffer
	switch c.format {
	case formatHTML:
		err = reports.WriteHTML(&buf, res)
	case formatJUnit:
		err = reports.WriteJUnit(&buf, res, reports.JUnitOptions{TestcaseProperties: c.tcProps})
	default:
		err = printComparison(&buf, res, c.format)
	}
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	if c.out == "" {
		_, err = cmd.OutOrStdout().Write(buf.Bytes())
	} else if err = results.WriteFile(c.out, buf.Bytes()); err == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s comparison of %s and %s: %s\n", c.format, beforeArg, afterArg, c.out)
	}
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	if code := res.ExitCode(); code != results.ExitPassed {
		return &exitError{code: code}
	}
	return nil
}

// printComparison is the table of every change, then one line of verdict.
func printComparison(w io.Writer, res *results.Results, format string) error {
	fmt.Fprintln(w)
	if err := reports.CompareTable(res).Render(w, format); err != nil {
		return err
	}
	var regressed []string
	for _, n := range res.Nodes {
		if n.Counts().Failed > 0 {
			regressed = append(regressed, n.Name)
		}
	}
	if len(regressed) == 0 {
		_, err := fmt.Fprintf(w, "no regression on %d node(s)\n", len(res.Nodes))
		return err
	}
	for i, n := range regressed {
		regressed[i] = reports.Terminal(n)
	}
	_, err := fmt.Fprintf(w, "REGRESSED: %d of %d node(s): %v\n", len(regressed), len(res.Nodes), regressed)
	return err
}

// readCompared reads the results.json a compare argument names, nodes
// with their evidence (the comparison reads BAR1, links and rails there).
func readCompared(arg string) (*results.Results, error) { return readResultsArg(arg, results.Read) }

// readResultsArg reads the results.json an argument names with read: the
// file, or DIR/results.json; where there is none, it says what would
// write one (for the directory submit --out wrote, which job to name).
func readResultsArg[T any](arg string, read func(string) (T, error)) (T, error) {
	path := resultsPath(arg)
	r, err := read(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	if _, serr := os.Stat(path); serr == nil {
		return r, err // a file it refers to is missing, named in err
	}
	var none T
	return none, argMissing(arg, path)
}

// argMissing says what would write the results.json arg lacks.
func argMissing(arg, path string) error {
	if jobs, _ := filepath.Glob(filepath.Join(arg, "job-*")); len(jobs) > 0 {
		slices.Sort(jobs)
		return fmt.Errorf("reading %q: no such file; %s holds gdrcheck submit jobs: name one, e.g. %s", path, arg, jobs[len(jobs)-1])
	}
	if _, serr := os.Stat(filepath.Join(arg, "job.json")); serr == nil {
		return fmt.Errorf("reading %q: no such file; the job never wrote its report: gdrcheck collect %s writes it", path, arg)
	}
	return fmt.Errorf("reading %q: no such file (gdrcheck run --out DIR writes DIR/results.json)", path)
}

// compareTo is what --compare-to adds to run and job: the run before,
// read before anything runs (it may be the directory this run rewrites).
type compareTo struct {
	path      string
	tolerance float64
	before    compare.Before
}

func (c *compareTo) flags(f interface {
	StringVar(*string, string, string, string)
	Float64Var(*float64, string, float64, string)
}) {
	f.StringVar(&c.path, "compare-to", "", "compare the results with the run before in `DIR` (a run or job directory, or a results.json), as gdrcheck compare does: the compare suite joins the report, a regression exits 1")
	f.Float64Var(&c.tolerance, "compare-tolerance", 0, "with --compare-to: bandwidth drop, as a fraction, allowed instead of each run's baseline band")
}

func (c *compareTo) load() error {
	if c.path == "" {
		return nil
	}
	if err := compare.CheckTolerance(c.tolerance); err != nil {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--compare-tolerance: %w", err)}
	}
	r, err := readCompared(c.path)
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--compare-to: %w", err)}
	}
	c.before = compare.Before{Run: r, Options: compare.Options{Tolerance: c.tolerance}}
	return nil
}
