package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/health"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/runner"
	"github.com/gdrcheck/gdrcheck/slurm"
)

type prologOptions struct {
	stateDir    string
	gpus        string
	deep        string
	timeout     time.Duration
	deepTimeout time.Duration
	deepMaxAge  time.Duration
	nodeName    string
}

func newPrologCmd(o *options) *cobra.Command {
	p := &prologOptions{}
	cmd := &cobra.Command{
		Use:   "prolog",
		Short: "Slurm Prolog: the quick gate on the job's GPUs before the job starts",
		Long: `prolog is slurm.conf's Prolog (examples/slurm/slurm.conf). It checks only the
job's GPUs (--gpus, default $SLURM_JOB_GPUS, else $CUDA_VISIBLE_DEVICES: host
indices or UUIDs; none given: every GPU) and their rail NICs: the quick gate
(suites topology, kernel and bar1), which registers a buffer of each GPU with
its rail NIC, in seconds.

The deep node suites (those of gdrcheck run) run as well, and refresh the
deep-result cache, when the job asks for them with
  sbatch --comment gdrcheck=deep ...
(slurmd gives a Prolog the comment as $SLURM_JOB_COMMENT; a job's own
environment never reaches it), or, with --deep auto, when the cached deep
result is stale; only for a job that holds every GPU of the node, and within
--deep-timeout (PrologEpilogTimeout must allow it).

A fault of the node exits 1: Slurm drains the node ("Prolog error") and
requeues the job. The real reason, "gdrcheck: prolog: <cause> action=<ACTION>",
goes to --state-dir/prolog.json, and the next gdrcheck health run writes it in
place of Slurm's. When gdrcheck itself cannot evaluate the node (no NVML, a
state directory it cannot read, its own deadline) it exits 0 and says so on
stderr and in the record: a node is never drained for gdrcheck's own failure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return p.run(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&p.stateDir, "state-dir", stateDirDefault(), "keep the prolog record and the deep-result cache in `DIR`; default $GDRCHECK_STATE_DIR, else "+health.DefaultStateDir)
	f.StringVar(&p.gpus, "gpus", jobGPUs(), "the job's GPUs, host indices or UUIDs, comma-separated (default $SLURM_JOB_GPUS, else $CUDA_VISIBLE_DEVICES; empty: every GPU)")
	f.StringVar(&p.deep, "deep", health.DeepAuto, "when to run the deep node suites too: auto (the job asks, or the cached deep result is stale), asked (only when the job asks), never")
	f.DurationVar(&p.timeout, "timeout", 25*time.Second, "give up on the quick gate after this long (fail open: exit 0); keep it under PrologEpilogTimeout")
	f.DurationVar(&p.deepTimeout, "deep-timeout", 10*time.Minute, "give up on the deep suites after this long")
	f.DurationVar(&p.deepMaxAge, "deep-max-age", health.DefaultDeepMaxAge, "a deep result older than this is stale")
	f.StringVar(&p.nodeName, "node-name", "", "name of this node (default: $SLURMD_NODENAME, then the host name)")
	o.addHostRoot(cmd)
	return cmd
}

// stateDirDefault is $GDRCHECK_STATE_DIR, else health's default, as
// gdrcheck health reads it: the three hooks share one directory.
func stateDirDefault() string {
	if d := os.Getenv("GDRCHECK_STATE_DIR"); d != "" {
		return d
	}
	return health.DefaultStateDir
}

// jobGPUs is the job's GPU list as Slurm gives it to a Prolog
// (SLURM_JOB_GPUS) or to a task (CUDA_VISIBLE_DEVICES).
func jobGPUs() string {
	if v := os.Getenv("SLURM_JOB_GPUS"); v != "" {
		return v
	}
	return os.Getenv("CUDA_VISIBLE_DEVICES")
}

func (p *prologOptions) run(cmd *cobra.Command, o *options) error {
	stderr := cmd.ErrOrStderr()
	switch p.deep {
	case health.DeepAuto, health.DeepAsked, health.DeepNever:
	default:
		return failOpen(stderr, "prolog", fmt.Errorf("--deep %q: want auto, asked or never", p.deep))
	}
	root, done, err := o.root()
	if err != nil {
		return failOpen(stderr, "prolog", err)
	}
	defer done()
	out := health.Prolog(cmd.Context(), health.PrologOptions{
		HostRoot: root, HostLabel: o.hostRoot, StateDir: p.stateDir, NodeName: p.nodeName,
		Job: os.Getenv("SLURM_JOB_ID"), GPUs: p.gpus, Comment: os.Getenv("SLURM_JOB_COMMENT"), Deep: p.deep,
		Timeout: p.timeout, DeepTimeout: p.deepTimeout, DeepMaxAge: p.deepMaxAge,
		Progress: stderr, Version: version, Args: os.Args[1:],
	})
	rec := out.Record
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "gdrcheck prolog on %s, job %s: %s action=%s\n", reports.Terminal(rec.Node), reports.Terminal(orDash(rec.Job)), rec.Verdict.State, rec.Verdict.Action)
	printFindings(w, rec.Verdict.Findings)
	if rec.Deep != "" {
		fmt.Fprintf(w, "deep check: %s\n", reports.Terminal(rec.Deep))
	}
	if out.StoreErr != nil {
		fmt.Fprintf(stderr, "gdrcheck prolog: the record was not kept: %s\n", reports.Terminal(out.StoreErr.Error()))
	}
	switch rec.Exit {
	case results.ExitFailed:
		fmt.Fprintln(stderr, reports.Terminal(rec.Reason))
		return &exitError{code: results.ExitFailed}
	case results.ExitUnevaluable:
		fmt.Fprintln(stderr, "gdrcheck prolog: could not evaluate the node; the job starts (fail open)")
	}
	return nil
}

// failOpen reports a hook's own failure and lets the job (and the node)
// be: exit 0, since slurmd drains the node of any Prolog or Epilog that
// exits otherwise.
func failOpen(stderr io.Writer, hook string, err error) error {
	fmt.Fprintf(stderr, "gdrcheck %s: %s; changing nothing (fail open)\n", hook, reports.Terminal(err.Error()))
	return nil
}

type epilogOptions struct {
	stateDir   string
	deep       string
	timeout    time.Duration
	deepMaxAge time.Duration
	nodeName   string
}

func newEpilogCmd(o *options) *cobra.Command {
	e := &epilogOptions{}
	cmd := &cobra.Command{
		Use:   "epilog",
		Short: "Slurm Epilog: refresh the deep-result cache while the node is idle",
		Long: `epilog is slurm.conf's Epilog (examples/slurm/slurm.conf). After a job, when no
other job runs on the node and the cached deep result is stale (--deep auto)
or always (--deep always), it runs the deep node suites (those of gdrcheck
run) within --timeout and stores their verdict as the deep-result cache in
--state-dir, which gdrcheck health reads. Slurm keeps the node COMPLETING
meanwhile, so no job lands on it; PrologEpilogTimeout must allow --timeout.

It always exits 0: a failed deep result is the next health run's to drain,
with its etiquette and breaker (a failing Epilog has slurmd drain the node at
once). A run cut short by --timeout keeps the cache as it was.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return e.run(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&e.stateDir, "state-dir", stateDirDefault(), "keep the deep-result cache in `DIR`; default $GDRCHECK_STATE_DIR, else "+health.DefaultStateDir)
	f.StringVar(&e.deep, "deep", health.DeepAuto, "when to run the deep node suites: auto (the cached deep result is stale), always, never")
	f.DurationVar(&e.timeout, "timeout", 10*time.Minute, "time box of the deep suites; keep it under PrologEpilogTimeout")
	f.DurationVar(&e.deepMaxAge, "deep-max-age", health.DefaultDeepMaxAge, "a deep result older than this is stale")
	f.StringVar(&e.nodeName, "node-name", "", "name of this node (default: $SLURMD_NODENAME, then the host name)")
	o.addHostRoot(cmd)
	return cmd
}

func (e *epilogOptions) run(cmd *cobra.Command, o *options) error {
	stderr := cmd.ErrOrStderr()
	root, done, err := o.root()
	if err != nil {
		return failOpen(stderr, "epilog", err)
	}
	defer done()
	ctx, cancel := context.WithTimeoutCause(cmd.Context(), e.timeout, fmt.Errorf("gdrcheck epilog's time box (--timeout %s)", e.timeout))
	defer cancel()
	node, job := runner.NodeName(e.nodeName, ""), os.Getenv("SLURM_JOB_ID")
	out, err := health.Epilog(ctx, health.EpilogOptions{
		DeepOptions: health.DeepOptions{HostRoot: root, HostLabel: o.hostRoot, NodeName: e.nodeName,
			Timeout: e.timeout, Version: version, Args: os.Args[1:]},
		StateDir: e.stateDir, Deep: e.deep, DeepMaxAge: e.deepMaxAge, Progress: stderr,
		Busy: func(ctx context.Context) (string, error) { return slurm.Client{}.OtherJobsOn(ctx, node, job) },
	})
	if err != nil {
		return failOpen(stderr, "epilog", err)
	}
	w := cmd.OutOrStdout()
	if !out.Ran {
		fmt.Fprintf(w, "gdrcheck epilog on %s: no deep run: %s\n", reports.Terminal(node), reports.Terminal(out.Skipped))
		return nil
	}
	d := out.Deep
	fmt.Fprintf(w, "gdrcheck epilog on %s: deep run (%d suites) exit %d", reports.Terminal(node), len(d.Suites), d.Exit)
	if d.Cause != "" {
		fmt.Fprintf(w, ": %s action=%s", reports.Terminal(d.Cause), d.Action)
	}
	fmt.Fprintf(w, "; cached in %s\n", reports.Terminal(e.stateDir))
	return nil
}
