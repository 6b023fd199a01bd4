package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/runner"
	"github.com/gdrcheck/gdrcheck/suites"
)

func newBaselineCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "baseline",
		Short: "List, compare and record per-generation baselines",
		Long: `A measured number means something only against the expected number for the
same hardware and software profile. Baselines are YAML files, one per
profile (GPU model and PCI device id, GPUs per node, NVLink or PCIe, NIC
model and rate, PCIe generation, optional driver/NCCL/CUDA ranges), holding
expected metrics with tolerances. A run matches the most specific profile.

  gdrcheck baseline show [NAME]          the profiles, or one as YAML
  gdrcheck baseline diff A B             what changed (files or profile names)
  gdrcheck baseline record DIR...        propose a baseline from good runs

--baseline-dir selects the files (default: those shipped with gdrcheck).
Schema errors name the file, the line and the field, and exit 2.`,
	}
	cmd.PersistentFlags().StringVar(&dir, "baseline-dir", "", "`DIR` of baseline YAML files (default: the baselines shipped with gdrcheck)")
	load := func() (*baseline.Store, error) {
		if dir == "" {
			return baseline.Shipped()
		}
		return baseline.Load(dir)
	}
	cmd.AddCommand(newBaselineShowCmd(load), newBaselineDiffCmd(load), newBaselineRecordCmd())
	return cmd
}

func newBaselineShowCmd(load func() (*baseline.Store, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "show [NAME]",
		Short: "List the baseline profiles, or print one",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := load()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if len(args) == 1 {
				b, ok := s.Get(args[0])
				if !ok {
					return fmt.Errorf("no baseline profile %q (gdrcheck baseline show lists them)", args[0])
				}
				return b.Write(w)
			}
			t := reports.Table{Title: "Baseline profiles", Header: []string{"profile", "gpu", "gpus", "interconnect", "nic", "pcie", "metrics", "file"}}
			for _, p := range s.Profiles() {
				b, _ := s.Get(p.Name)
				nic := p.NIC.Model
				if p.NIC.RateGbps > 0 {
					nic += fmt.Sprintf(" %g Gb/s", p.NIC.RateGbps)
				}
				t.Rows = append(t.Rows, []string{p.Name, p.GPU.Model, strconv.Itoa(p.GPUsPerNode), p.Interconnect, nic, strconv.Itoa(p.PCIeGen), strconv.Itoa(len(b.Metrics)), b.File})
			}
			return t.Render(w, reports.FormatText)
		},
	}
}

func newBaselineDiffCmd(load func() (*baseline.Store, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "diff A B",
		Short: "Show what changed between two baselines (files or profile names)",
		Long: `diff compares two baselines: each a YAML file, or the name of a profile in
--baseline-dir. It prints one sentence per change and exits 0 when they are
the same, 1 when they differ.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var bs [2]*baseline.Baseline
			for i, a := range args {
				b, err := resolveBaseline(a, load)
				if err != nil {
					return err
				}
				bs[i] = b
			}
			changes := baseline.Diff(bs[0], bs[1])
			for _, c := range changes {
				fmt.Fprintln(cmd.OutOrStdout(), c.Text)
			}
			if len(changes) > 0 {
				return &exitError{code: results.ExitFailed}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "no differences")
			return nil
		},
	}
}

// resolveBaseline reads a baseline file, or finds a profile by name.
func resolveBaseline(arg string, load func() (*baseline.Store, error)) (*baseline.Baseline, error) {
	if strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		// The named file alone: the others beside it are not asked about.
		return baseline.ReadFile(arg)
	}
	s, err := load()
	if err != nil {
		return nil, err
	}
	b, ok := s.Get(arg)
	if !ok {
		return nil, fmt.Errorf("no baseline profile %q", arg)
	}
	return b, nil
}

func newBaselineRecordCmd() *cobra.Command {
	var name, out string
	cmd := &cobra.Command{
		Use:   "record DIR...",
		Short: "Propose a baseline from the results of good runs",
		Long: `record reads DIR/results.json of one or more good runs on the same hardware
(repeat the run a few times: each metric's expected value is the median
over the runs) and writes a reviewable YAML baseline: the node's hardware
profile, nccl-tests bus bandwidth per collective and message size, the
forced fallbacks' ratios to the direct run, and the BAR1 size, with
default tolerances. Review it, then add it to the --baseline-dir of your
runs.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rec := &recording{samples: map[string][]float64{}}
			// A node that cannot be recorded is named once the runs are
			// read through: a file that cannot be read, or that reports
			// another node, is named first, as it is by every reader.
			var refused error
			for _, dir := range args {
				if err := scanResults(dir, func(n results.Node) error {
					if err := rec.add(dir, n); err != nil && refused == nil {
						refused = err
					}
					return nil
				}); err != nil {
					return err
				}
			}
			if refused != nil {
				return refused
			}
			samples, facts, bar1, nodes := rec.samples, rec.facts, rec.bar1, rec.nodes
			if facts == nil {
				return fmt.Errorf("no node in %s", strings.Join(args, " "))
			}
			p := facts.Profile()
			// Software is left open: a baseline is for the hardware, and a
			// reviewer narrows the ranges where numbers depend on them.
			p.Software = baseline.Software{}
			p.Name = name
			if p.Name == "" {
				p.Name = baseline.ProfileName(*facts)
			}
			b := baseline.Record(p, samples, baseline.RecordOptions{
				Source: baseline.RecordedFrom(len(args), nodes),
				BAR1:   bar1,
			})
			var buf bytes.Buffer
			if err := b.Write(&buf); err != nil {
				return err
			}
			if out == "" {
				_, err := cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			return results.WriteFile(out, buf.Bytes())
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "profile name (default: derived from the hardware, e.g. h200x2-nv18)")
	cmd.Flags().StringVar(&out, "out", "", "write the YAML to `FILE` (default: stdout)")
	return cmd
}

// scanResults reads DIR/results.json, or a results.json path, one node
// at a time (a merged job's nodes from their own files): a job of 16,384
// nodes is never held whole. An error of visit's is returned as it is.
func scanResults(arg string, visit func(results.Node) error) error {
	p := arg
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		p = filepath.Join(arg, "results.json")
	}
	var stop error
	_, err := results.Scan(p, func(n results.Node) error {
		stop = visit(n)
		return stop
	})
	if stop != nil {
		return stop
	}
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	return nil
}

// recording is what baseline record keeps of the nodes read so far: the
// samples, the first node's facts, the smallest BAR1 and the names.
type recording struct {
	samples map[string][]float64
	facts   *baseline.Facts
	bar1    *baseline.BAR1Limits
	nodes   []string
}

// add takes one node of the run in dir: it must have passed, and be the
// same hardware as the first.
func (r *recording) add(dir string, n results.Node) error {
	if n.Status != results.NodeEvaluated || n.Counts().Failed > 0 {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: node %s did not pass; record baselines from good runs only", dir, n.Name)}
	}
	var ev node.Evidence
	if err := json.Unmarshal(n.Evidence, &ev); err != nil {
		return fmt.Errorf("%s: evidence of %s: %w", dir, n.Name, err)
	}
	if why := suites.ImpossibleSample(n, &ev); why != "" {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("%s: node %s: %s; a baseline is never proposed from it", dir, n.Name, why)}
	}
	f := runner.BaselineFacts(&ev, "")
	if r.facts == nil {
		r.facts = &f
	} else if m := r.facts.Profile().Mismatches(f); len(m) > 0 {
		return fmt.Errorf("%s: node %s is other hardware than the first run: %s", dir, n.Name, strings.Join(m, "; "))
	}
	r.nodes = append(r.nodes, n.Name)
	baseline.AddSamples(r.samples, n)
	for _, g := range ev.GPUs {
		if g.BAR1 != nil && (r.bar1 == nil || g.BAR1.TotalMiB < r.bar1.MinTotalMiB) {
			r.bar1 = &baseline.BAR1Limits{MinTotalMiB: g.BAR1.TotalMiB, MinFreeMiB: 1024}
		}
	}
	return nil
}
