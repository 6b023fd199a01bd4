package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	"github.com/gdrcheck/gdrcheck/suites"
	"github.com/gdrcheck/gdrcheck/suites/allocation"
)

func newSubmitCmd() *cobra.Command {
	s := &slurm.Submission{Job: slurm.JobConfig{Scaling: true, ScalingPairs: "auto", StepTimeout: time.Hour}}
	var dryRun, wait bool
	var poll time.Duration
	var format string
	cmd := &cobra.Command{
		Use:   "submit -N NODES [flags]",
		Short: "Run the validation over a Slurm allocation (sbatch)",
		Long: `Submit renders one sbatch script for one allocation and submits it. Inside
the job, the node suites run on every node (srun --ntasks-per-node=1), each
node writing its own results; the first node then runs all_reduce across
1, 2, 4 ... N nodes as srun steps (bus bandwidth, scaling efficiency over
2 nodes, small-message latency) and, when a multi-node run falls below the
baseline, re-pairs the nodes to isolate the slow one. Everything is merged
into DIR/job-<id>/: results.json, junit.xml, and each node's own files.

A node whose step fails, hangs (the watchdog stops it) or never reports
still appears in the report, failed, with the reason. The job gets USR1
--signal-seconds before its time limit and writes the report then; with
--wait, a job that ends TIMEOUT, CANCELLED, NODE_FAIL or PREEMPTED is
collected from here. A REQUEUED job is waited for again.

  gdrcheck submit -N 4 -p gpu --wait
  gdrcheck submit -N 16 -p gpu --time 30 --drain-on-fail --wait
  gdrcheck submit -N 2 --dry-run            # print the script, submit nothing

With --wait the exit code is that of run: 0 passed, 1 a check failed, 2 a
node could not be evaluated or never reported.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return submit(cmd, s, dryRun, wait, poll, format) },
	}
	f := cmd.Flags()
	f.IntVarP(&s.Nodes, "nodes", "N", 1, "nodes in the allocation")
	f.StringVarP(&s.Partition, "partition", "p", "", "Slurm partition")
	f.StringVarP(&s.Account, "account", "A", "", "Slurm account")
	f.StringVar(&s.QOS, "qos", "", "Slurm QOS")
	f.StringVarP(&s.Time, "time", "t", "", "time limit (sbatch --time: minutes, H:M:S, D-H:M:S)")
	f.StringVar(&s.Reservation, "reservation", "", "Slurm reservation")
	f.StringVarP(&s.Constraint, "constraint", "C", "", "node features (sbatch --constraint)")
	f.IntVar(&s.GPUsPerNode, "gpus-per-node", 0, "GPUs to request per node, and ranks per node for the multi-node collectives (default: the GPUs the first node reports)")
	f.BoolVar(&s.Exclusive, "exclusive", true, "request whole nodes: benchmarks need them, and the multi-node steps start one rank per GPU")
	f.StringArrayVar(&s.SbatchArgs, "sbatch-arg", nil, "extra sbatch option, one --option[=value] per flag (repeatable)")
	f.StringVar(&s.JobName, "job-name", "gdrcheck", "job name")
	f.IntVar(&s.SignalSeconds, "signal-seconds", 120, "send the job USR1 this long before its time limit, so it writes the report")
	f.StringVar(&s.Out, "out", "gdrcheck-jobs", "`DIR` on a shared filesystem; each job writes DIR/job-<id>")
	f.StringVar(&s.Gdrcheck, "gdrcheck", "", "path of gdrcheck as the nodes see it (default: this binary)")
	s.Job.AddSubmitFlags(f)
	f.StringVar(&s.ContainerImage, "container-image", "", "run the node suites in this container (pyxis), gdrcheck mounted in")
	f.StringVar(&s.ContainerMounts, "container-mounts", "", "extra pyxis mounts for the container")
	f.BoolVar(&dryRun, "dry-run", false, "print the sbatch script and submit nothing")
	f.BoolVar(&wait, "wait", false, "wait for the job, print the tables and exit 0/1/2 like run")
	f.DurationVar(&poll, "poll", 5*time.Second, "how often --wait asks Slurm about the job")
	f.StringVar(&format, "format", "text", "table format: text or markdown")
	return cmd
}

// submit renders the job's script and submits it (with dryRun, prints
// it); with wait, it follows the job and prints its tables.
func submit(cmd *cobra.Command, s *slurm.Submission, dryRun, wait bool, poll time.Duration, format string) error {
	if s.Gdrcheck == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		s.Gdrcheck = exe
	}
	abs, err := filepath.Abs(s.Out)
	if err != nil {
		return err
	}
	s.Out = abs
	// The job reads it on its first node: an absolute path, and
	// one that reads here, or the job would fail at its end.
	ct := compareTo{path: s.Job.CompareTo, tolerance: s.Job.CompareTolerance}
	if ct.path != "" {
		if ct.path, err = filepath.Abs(ct.path); err != nil {
			return err
		}
		s.Job.CompareTo = ct.path
		if err := ct.load(); err != nil {
			return err
		}
	}
	if err := checkPromTextfile(s.Job.PromTextfile); err != nil {
		return err
	}
	if s.Job.PromTextfile != "" {
		// The batch step starts in sbatch's working directory,
		// not necessarily this one.
		if s.Job.PromTextfile, err = filepath.Abs(s.Job.PromTextfile); err != nil {
			return err
		}
	}
	if err := suites.CheckLabels(s.Job.Suites); err != nil {
		return fmt.Errorf("--suites: %w", err)
	}
	script, err := s.Render(version)
	if err != nil {
		return err
	}
	if dryRun {
		_, err := io.WriteString(cmd.OutOrStdout(), script)
		return err
	}
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	c := slurm.Client{}
	id, err := c.Submit(cmd.Context(), s.SbatchArgv(), script)
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	dir := filepath.Join(s.Out, "job-"+id)
	fmt.Fprintf(cmd.OutOrStdout(), "submitted job %s; results in %s\n", id, dir)
	if !wait {
		return nil
	}
	return waitAndReport(cmd, c, id, dir, poll, format, s.Job.DrainOnFail, ct.before.Amend())
}

// waitAndReport follows the job to its end, collects from here what the
// job itself could not (killed, timed out, node lost), and prints the
// tables.
func waitAndReport(cmd *cobra.Command, c slurm.Client, id, dir string, poll time.Duration, format string, drained bool, amend slurm.Amend) error {
	stderr := cmd.ErrOrStderr()
	last := ""
	var rec slurm.Record
	for {
		r, err := c.Job(context.Background(), id)
		if err != nil {
			return &exitError{code: results.ExitUnevaluable, err: err}
		}
		rec = r
		state := rec["JobState"]
		if state != last {
			fmt.Fprintf(stderr, "job %s: %s %s\n", id, reports.Terminal(state), reports.Terminal(rec["Reason"]))
			last = state
		}
		if slurm.Final(state) {
			break
		}
		select {
		case <-cmd.Context().Done():
			fmt.Fprintf(stderr, "interrupted: job %s keeps running; gdrcheck collect %s merges it later\n", id, dir)
			return &exitError{code: results.ExitUnevaluable}
		case <-time.After(poll):
		}
	}
	state := rec["JobState"]
	// A leader that outlives its job's state (a slow node) is done
	// with the directory before it is read or collected here.
	release, err := lockOut(cmd, dir, defaultLockTimeout)
	if err != nil {
		return err
	}
	defer release()
	res, err := results.ReadFolded(filepath.Join(dir, "results.json"))
	if err != nil || state != "COMPLETED" {
		// The job did not finish its own report, or ended abnormally
		// after it: collect here, saying how it ended.
		note := fmt.Sprintf("job %s ended %s", id, state)
		if reason := rec["Reason"]; reason != "" && reason != "None" {
			note += " (" + reason + ")"
		}
		// Judged as the job's leader judges it: a job that ended
		// FAILED for its verdict (exit 1) keeps the allocation's specs.
		m, err := slurm.Collect(dir, slurm.CollectOptions{Note: note, Amend: amend, Judge: allocation.NewTally()})
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("job %s ended %s before writing anything to %s", id, state, dir)}
			}
			return &exitError{code: results.ExitUnevaluable, err: err}
		}
		// The job's own textfile is the first node's (--prom-textfile):
		// this host's node_exporter is not the one that reads it.
		if err := m.Write(reports.WriteOptions{}); err != nil {
			return err
		}
		res = m.Results
	}
	w := cmd.OutOrStdout()
	if err := printTables(w, res, format); err != nil {
		return err
	}
	printBlamed(w, res, drained)
	printPaths(w, dir)
	if code := res.ExitCode(); code != results.ExitPassed {
		return &exitError{code: code}
	}
	return nil
}

// printBlamed names each node that failed or never reported, with its
// first reason: what an admin acts on, and what --drain-on-fail drained.
// Past maxBlamedLines the console would scroll the verdict away.
func printBlamed(w io.Writer, res *results.Results, drained bool) {
	failed := slurm.FailedNodes(res)
	if len(failed) == 0 {
		return
	}
	what := "Nodes that failed"
	if drained {
		what += " (drained by the job, Reason \"gdrcheck: ...\"; gdrcheck undrain resumes them)"
	}
	fmt.Fprintln(w, reports.Wrap(what+":"))
	names := slices.Sorted(maps.Keys(failed))
	for i, n := range names {
		if i == maxBlamedLines {
			// The causes table above names every one of them.
			fmt.Fprintln(w, reports.WrapItem(fmt.Sprintf("... and %d more (\"Failing nodes by cause\" names them all)", len(names)-i)))
			break
		}
		reason, _, _ := strings.Cut(failed[n], "\n")
		fmt.Fprintln(w, reports.WrapItem(reports.Terminal(n)+": "+reports.Terminal(reason)))
	}
	fmt.Fprintln(w)
}

const maxBlamedLines = 50
