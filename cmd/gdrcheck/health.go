package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/health"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	judge "github.com/gdrcheck/gdrcheck/suites/health"
)

// healthFlags are `gdrcheck health`'s own flags.
type healthFlags struct {
	o        health.Options
	slurm    string
	textfile string
}

func newHealthCmd(o *options) *cobra.Command {
	f := &healthFlags{}
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check the node's cheap GPUDirect state for slurmd's HealthCheckProgram, draining and resuming it",
		Long: `health is the HealthCheckProgram tier (docs/reference.md, "Health loop"):
no GPU kernel and no fabric traffic, a few seconds on an 8-GPU node. It
checks the peer-memory mechanism (modules, DMA-BUF facts), every GPU's
and rail NIC's PCIe link against its maximum, the rail ports' state and
rate, the link error counters and the Xids since the last run, the
versions against the known-bad table, and whether the last deep result
(gdrcheck run from an epilog or a maintenance window) still speaks for
the node: "deep result stale" is its own state, action RERUN.

Every finding carries an action (NONE, RERUN, FIX_CONFIG, RELOAD_DRIVER,
RESET_GPU, REBOOT, REIMAGE, INVESTIGATE, CHECK_CABLE, REPLACE), a scope
and an entity. With Slurm (--slurm, on by default where scontrol is
found) it makes at most one scontrol call per run, following LBNL NHC's
etiquette: it drains when the verdict changes, with the reason
"gdrcheck: <check>: <cause> action=<ACTION>"; it resumes only nodes whose
reason starts "gdrcheck:", after --resume-after healthy runs; it never
touches a node that is DOWN, in MAINT, reserved, pending a reboot, or
drained by someone else. A circuit breaker holds drains once
--breaker-percent of a partition was drained by gdrcheck within
--breaker-window. Where this Slurm shows the node's Extra (else Comment)
field, the run publishes {"gdr":"proven","gdr_at":"<date>"},
{"gdr":"unproven"} or {"gdr":"failed","gdr_check":"<check>"} there (JSON,
as Slurm's extra_constraints reads Extra: sbatch --extra gdr=proven).

Fail open: when gdrcheck cannot evaluate (NVML missing, its state
directory unwritable, its own --deadline hit) it changes nothing in Slurm
and says so on stderr, in the state file and in the textfile.

The state directory keeps health.json (the last readings, the healthy
count, the last drain by gdrcheck) and deep.json (the deep-result cache).

Exit codes: 0 healthy or only stale, 1 unhealthy, 2 unevaluable (slurmd
only logs them: the drain is the run's own scontrol call).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runHealth(cmd, o, f) },
	}
	o.addHostRoot(cmd)
	fl := cmd.Flags()
	stateDir := os.Getenv("GDRCHECK_STATE_DIR")
	if stateDir == "" {
		stateDir = health.DefaultStateDir
	}
	fl.StringVar(&f.o.StateDir, "state-dir", stateDir, "keep the health state and the deep-result cache in `DIR`; default $GDRCHECK_STATE_DIR, else "+health.DefaultStateDir)
	fl.DurationVar(&f.o.Deadline, "deadline", health.DefaultDeadline, "stop the run's own work after `DURATION` and report what it could not finish (inside slurmd's 60 s kill)")
	fl.StringVar(&f.o.Node, "node", os.Getenv("SLURMD_NODENAME"), "the Slurm `NAME` of this node; default $SLURMD_NODENAME, else the hostname")
	fl.StringVar(&f.slurm, "slurm", "auto", "drain and resume through scontrol: on, off, or auto (on where scontrol is on PATH)")
	fl.IntVar(&f.o.Policy.ResumeAfter, "resume-after", health.DefaultResumeAfter, "resume a node gdrcheck drained after `N` consecutive healthy runs")
	fl.Float64Var(&f.o.Policy.BreakerPercent, "breaker-percent", health.DefaultBreakerPercent, "drain at most `PCT` % of a partition's nodes (rounded down, at least 1) within --breaker-window; 0 drains none")
	fl.DurationVar(&f.o.Policy.BreakerWindow, "breaker-window", health.DefaultBreakerWindow, "the circuit breaker's `WINDOW`: drains older than it no longer count")
	fl.BoolVar(&f.o.Policy.Publish, "publish", true, "publish the node's GDR state ({\"gdr\":\"proven\",...}) in its Extra field, else Comment, where this Slurm has one and it is empty or gdrcheck's")
	fl.DurationVar(&f.o.DeepMaxAge, "deep-max-age", health.DefaultDeepMaxAge, "call a deep result older than `AGE` stale even on an unchanged node")
	fl.StringVar(&f.textfile, "prom-textfile", "", "also write the node's health state (state, action, findings, breaker, fail open) as a Prometheus textfile to `PATH`, ending in .prom")
	return cmd
}

func runHealth(cmd *cobra.Command, o *options, f *healthFlags) error {
	if err := checkPromTextfile(f.textfile); err != nil {
		return err
	}
	switch f.slurm {
	case "on":
		f.o.Slurm = &slurm.Client{}
	case "auto":
		if _, err := exec.LookPath("scontrol"); err == nil {
			f.o.Slurm = &slurm.Client{}
		}
	case "off":
	default:
		return fmt.Errorf("--slurm %q: want on, off or auto", f.slurm)
	}
	root, done, err := o.root()
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	defer done()
	f.o.HostRoot = root
	f.o.Stderr = cmd.ErrOrStderr()
	out, err := health.Run(cmd.Context(), f.o)
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	printHealth(cmd.OutOrStdout(), out)
	if f.textfile != "" {
		if err := reports.WriteHealthTextfile(f.textfile, out.Textfile(time.Now())); err != nil {
			return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--prom-textfile: %w", err)}
		}
	}
	if c := out.ExitCode(); c != results.ExitPassed {
		return &exitError{code: c}
	}
	return nil
}

// printFindings lists a verdict's findings, one item each, wrapped to
// the terminal as the tables are.
func printFindings(w io.Writer, fs []judge.Finding) {
	for _, f := range fs {
		fmt.Fprintln(w, reports.WrapItem(fmt.Sprintf("%s %s %s: %s", f.State, f.Scope, reports.Terminal(f.Entity), reports.Terminal(f.String()))))
	}
}

// printHealth is the run in a few lines: the verdict, each finding, what
// was done in Slurm, the breaker and a fail open, named.
func printHealth(w io.Writer, out health.Outcome) {
	t := reports.Terminal
	fmt.Fprintf(w, "gdrcheck health: %s: %s action=%s (%s)\n", t(out.Node), out.Verdict.State, out.Action, out.Elapsed.Round(time.Millisecond))
	printFindings(w, out.Verdict.Findings)
	applied := ""
	if len(out.Slurm.Fields) > 0 && !out.Applied {
		applied = " (not applied)"
	}
	fmt.Fprintln(w, reports.Wrap(fmt.Sprintf("slurm: %s%s: %s", out.Slurm.Op, applied, t(out.Slurm.Why))))
	if out.Breaker() != "" {
		fmt.Fprintln(w, reports.Wrap("breaker: "+t(out.Breaker())))
	}
	if out.Failure != "" {
		fmt.Fprintln(w, reports.Wrap("fail open: "+t(out.Failure)))
	}
}
