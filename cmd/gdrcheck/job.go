package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	"github.com/gdrcheck/gdrcheck/suites/allocation"
)

// newJobCmd is the batch step of a submitted job; users run submit.
func newJobCmd() *cobra.Command {
	l := &slurm.Leader{Config: slurm.JobConfig{Scaling: true, StepTimeout: time.Hour}}
	cmd := &cobra.Command{
		Use:    "job --out DIR",
		Short:  "The batch step of gdrcheck submit (runs inside the allocation)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkPromTextfile(l.Config.PromTextfile); err != nil {
				return err
			}
			l.JobID = os.Getenv("SLURM_JOB_ID")
			l.NodeList = os.Getenv("SLURM_JOB_NODELIST")
			if l.JobID == "" || l.NodeList == "" {
				return fmt.Errorf("gdrcheck job runs inside a Slurm allocation (SLURM_JOB_ID and SLURM_JOB_NODELIST unset); use gdrcheck submit")
			}
			l.Restart, _ = strconv.Atoi(os.Getenv("SLURM_RESTART_COUNT"))
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			l.Gdrcheck, l.Progress, l.Version = exe, cmd.ErrOrStderr(), version
			ct := compareTo{path: l.Config.CompareTo, tolerance: l.Config.CompareTolerance}
			if err := ct.load(); err != nil {
				return err
			}
			l.Amend = ct.before.Amend()
			l.Judge = allocation.NewTally()
			// The job directory is the leader's for the whole job: a
			// collect, or a leader of the same directory, waits.
			if err := os.MkdirAll(l.Out, 0o755); l.Out != "" && err != nil {
				return err
			}
			release, err := lockOut(cmd, l.Out, defaultLockTimeout)
			if err != nil {
				return err
			}
			defer release()
			// USR1 comes --signal-seconds before the time limit, TERM
			// with scancel: stop what runs and write the report.
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGUSR1, syscall.SIGTERM, os.Interrupt)
			defer stop()
			res, err := l.Run(ctx)
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: err}
			}
			if err := printTables(cmd.OutOrStdout(), res, reports.FormatText); err != nil {
				return err
			}
			if code := res.ExitCode(); code != results.ExitPassed {
				return &exitError{code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&l.Out, "out", "", "job directory")
	l.Config.AddFlags(f)
	f.StringVar(&l.ContainerImage, "container-image", "", "pyxis image for the node suites")
	f.StringVar(&l.ContainerMounts, "container-mounts", "", "pyxis mounts")
	return cmd
}

func newCollectCmd() *cobra.Command {
	var format, note, prom string
	var ct compareTo
	var lockTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "collect DIR",
		Short: "Merge what a job left in DIR into one report",
		Long: `collect merges whatever a gdrcheck job left in its directory (DIR/job-<id>):
every node's results.json and the multi-node runs, and for each node of the
allocation that never reported, a failure saying why (its step's fate and
the last lines it printed). It writes DIR/results.json and DIR/junit.xml and
prints the tables. Use it on the directory of a job that was killed or lost.

With --prom-textfile PATH it also writes a Prometheus textfile for
node_exporter's textfile collector, in the same set: the allocation's
series only, labelled node="allocation" (the verdict, nodes by status and
by failing suite, mechanism, profile and driver, the scaling runs, the
worst outliers), bounded for any node count. Each node's own series come
from its own gdrcheck run --prom-textfile.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPromTextfile(prom); err != nil {
				return err
			}
			if err := ct.load(); err != nil {
				return err
			}
			release, err := lockOut(cmd, args[0], lockTimeout)
			if err != nil {
				return err
			}
			defer release()
			mergeGC(collectHeapLimit)
			m, err := slurm.Collect(args[0], slurm.CollectOptions{Note: note, Amend: ct.before.Amend(), Judge: allocation.NewTally()})
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: err}
			}
			if err := m.Write(reports.WriteOptions{PromTextfile: prom}); err != nil {
				return err
			}
			res := m.Results
			if err := printTables(cmd.OutOrStdout(), res, format); err != nil {
				return err
			}
			if code := res.ExitCode(); code != results.ExitPassed {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "table format: text or markdown")
	cmd.Flags().StringVar(&note, "note", "", "add this to the reason of every missing node (e.g. how the job ended)")
	ct.flags(cmd.Flags())
	addPromTextfile(cmd, &prom, promJobHelp)
	addLockTimeout(cmd, &lockTimeout, "DIR")
	return cmd
}

func newUndrainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "undrain [NODE...]",
		Short: "Resume the nodes gdrcheck drained (and only those)",
		Long: `undrain resumes nodes whose drain reason starts with "gdrcheck:"; a node
drained for any other reason is left as it is and reported. Without NODE
arguments it considers every node.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			done, err := slurm.Client{}.Undrain(cmd.Context(), args)
			for _, d := range done {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s\n", d.Action, reports.Terminal(d.Node), reports.Terminal(d.Why))
			}
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: err}
			}
			return nil
		},
	}
}
