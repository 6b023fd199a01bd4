package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// Formats gdrcheck report writes besides the tables.
const (
	formatHTML  = "html"
	formatJUnit = "junit"
)

type reportOptions struct {
	format  string
	out     string
	tcProps bool
	node    string
}

func newReportCmd() *cobra.Command {
	r := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report DIR|results.json",
		Short: "Rebuild a report (tables, HTML, JUnit) from results.json",
		Long: `Report rebuilds any view of a run from its results.json alone, on any
machine: the tables gdrcheck run prints (text or markdown), one
self-contained HTML page with plots that opens offline, or the JUnit for
Jenkins. DIR is a directory holding results.json (gdrcheck run --out DIR),
or the path of a results.json.

  gdrcheck report gdrcheck-results --format html --out report.html

--out writes the file atomically; the default is standard output.

A job of more than 8 nodes is folded: alike nodes are one group, and the
failing ones are listed by cause. --node NAME shows one node in full,
with every table and chart of a one-node run:

  gdrcheck report gdrcheck-jobs/job-4711 --node gpu00137 --format html -o gpu00137.html

Exit 0 when the results passed, 1 when they record a failed spec, 2 when
they record a node that could not be evaluated, or results.json is missing
or unreadable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return r.run(cmd, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&r.format, "format", reports.FormatText, "text, markdown, html or junit")
	f.StringVarP(&r.out, "out", "o", "", "write the report to `FILE` (atomically) instead of standard output")
	f.StringVar(&r.node, "node", "", "report this `NAME` alone, in full (a node of a merged job; \"allocation\" for the multi-node runs)")
	f.BoolVar(&r.tcProps, "junit-testcase-properties", false, "add <properties> to JUnit testcases (Jenkins JUnit plugin keepProperties; not valid xUnit junit-10.xsd)")
	return cmd
}

func (r *reportOptions) run(cmd *cobra.Command, arg string) error {
	switch r.format {
	case reports.FormatText, reports.FormatMarkdown, formatHTML, formatJUnit:
	default:
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--format %q: want text, markdown, html or junit", r.format)}
	}
	path := resultsPath(arg)
	read := results.ReadFolded
	if r.node != "" {
		read = func(p string) (*results.Results, error) { return readNode(p, r.node) }
	}
	res, err := readResultsArg(arg, read)
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	var buf bytes.Buffer
	switch r.format {
	case formatHTML:
		err = reports.WriteHTML(&buf, res)
	case formatJUnit:
		err = reports.WriteJUnit(&buf, res, reports.JUnitOptions{TestcaseProperties: r.tcProps})
	default:
		err = printTables(&buf, res, r.format)
	}
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	if r.out == "" {
		if _, err := cmd.OutOrStdout().Write(buf.Bytes()); err != nil {
			return &exitError{code: results.ExitUnevaluable, err: err}
		}
	} else {
		if err := results.WriteFile(r.out, buf.Bytes()); err != nil {
			return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--out: %w", err)}
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s report of %s: %s\n", r.format, path, r.out)
	}
	if code := res.ExitCode(); code != results.ExitPassed {
		return &exitError{code: code}
	}
	return nil
}

// resultsPath is DIR/results.json for a directory, else the path itself.
func resultsPath(arg string) string {
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return filepath.Join(arg, "results.json")
	}
	return arg
}

// readNode reads one node of a results.json, in full but for its raw
// evidence, with the cross-node runs where it is the allocation: of a
// merged job, only that node's own file is read.
func readNode(path, name string) (*results.Results, error) {
	x, err := results.OpenIndex(path)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	var kept []results.Node
	for i, n := range x.Names() {
		if n != name {
			continue
		}
		node, err := x.At(i)
		if err != nil {
			return nil, err
		}
		kept = append(kept, node.Slim())
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("--node %q: no such node in %s", name, path)
	}
	r := x.Head
	r.Nodes = kept
	if name != results.AllocationNode {
		r.Runs = nil
	}
	return r, nil
}
