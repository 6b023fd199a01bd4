package health

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/runner"
	"github.com/gdrcheck/gdrcheck/suites"
	judge "github.com/gdrcheck/gdrcheck/suites/health"
)

// DeepOptions configure one deep run: the node suites of `gdrcheck run`
// (suites.Defaults) over the whole node.
type DeepOptions struct {
	HostRoot, HostLabel, NodeName string
	Timeout                       time.Duration // bounds the suites; 0: an hour, as run's
	Sources                       *node.Sources // tests
	Version                       string
	Args                          []string
	Now                           func() time.Time // nil: time.Now
}

// RunDeep runs the deep node suites and returns their result as the deep
// cache keeps it: keyed by the node it ran on, with the first failure's
// cause and the most disruptive action. An error is a run that could not
// start (bad options); a node that could not be evaluated is a result
// (Exit 2).
func RunDeep(ctx context.Context, o DeepOptions) (Deep, error) {
	d, _, err := runDeep(ctx, o)
	return d, err
}

// runDeep is RunDeep that also returns the run's results.
func runDeep(ctx context.Context, o DeepOptions) (Deep, *results.Results, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = time.Hour
	}
	var key Key
	res, _, err := runner.Run(runner.Options{HostRoot: o.HostRoot, HostLabel: o.HostLabel, Suites: suites.Defaults(),
		NodeName: o.NodeName, Config: suites.DefaultConfig(), Sources: o.Sources, Timeout: timeout, Ctx: ctx,
		Version: o.Version, Args: o.Args, Whole: func(h node.Host, ev *node.Evidence) { key = KeyOf(h, ev) }})
	if err != nil {
		return Deep{}, nil, err
	}
	d := DeepOf(res, key)
	d.At = now().UTC()
	if d.Exit != results.ExitPassed {
		d.Action = judge.DeepVerdict(res.Nodes[0]).Action
	}
	return d, res, nil
}

// EpilogOptions configure one `gdrcheck epilog`.
type EpilogOptions struct {
	DeepOptions
	StateDir   string        // DefaultStateDir when empty
	Deep       string        // DeepAuto (when stale), "always" or DeepNever
	DeepMaxAge time.Duration // 0: DefaultDeepMaxAge
	// Busy says why the node is not idle (another job runs on it), ""
	// when it is; nil takes it as idle.
	Busy     func(ctx context.Context) (string, error)
	Progress io.Writer // nil discards
}

// DeepAlways runs the epilog's deep suites whatever the cache says.
const DeepAlways = "always"

// EpilogOutcome says what the epilog did: Ran with the deep result
// stored, or Skipped and why.
type EpilogOutcome struct {
	Ran     bool
	Deep    Deep
	Skipped string
}

// Epilog runs the deep node suites after a job when the node is idle and
// the cached deep result is stale (or o.Deep is DeepAlways), time-boxed
// by o.Timeout, and stores the result as the deep cache. It never fails
// the job: a failed deep result is the next health run's to drain, with
// its etiquette (a non-zero epilog would have slurmd drain the node
// "Epilog error" at once, breaker or not).
func Epilog(ctx context.Context, o EpilogOptions) (EpilogOutcome, error) {
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	switch o.Deep {
	case DeepNever:
		return EpilogOutcome{Skipped: "--deep never"}, nil
	case "", DeepAuto:
		if why := skipDeep(o, now()); why != "" {
			return EpilogOutcome{Skipped: why}, nil
		}
	case DeepAlways:
	default:
		return EpilogOutcome{}, fmt.Errorf("--deep %q: want %s, %s or %s", o.Deep, DeepAuto, DeepAlways, DeepNever)
	}
	if o.Busy != nil {
		busy, err := o.Busy(ctx)
		if err != nil {
			return EpilogOutcome{Skipped: "could not tell whether the node is idle"}, err
		}
		if busy != "" {
			return EpilogOutcome{Skipped: "the node is not idle: " + busy}, nil
		}
	}
	d, err := RunDeep(ctx, o.DeepOptions)
	if err != nil {
		return EpilogOutcome{}, err
	}
	if ctx.Err() != nil {
		// Cut short (the time box, or slurmd's PrologEpilogTimeout): a
		// partial run proves nothing, so the cache keeps what it had.
		return EpilogOutcome{Skipped: "the deep run was cut short: " + context.Cause(ctx).Error()}, nil
	}
	return EpilogOutcome{Ran: true, Deep: d}, StoreDeep(ctx, o.StateDir, d, o.Progress)
}

// skipDeep says why the cached deep result still speaks for the node,
// so there is nothing to run; "" when it does not (or cannot be read:
// the run replaces it). The key needs the node's evidence, which is
// cheap (no probe).
func skipDeep(o EpilogOptions, t time.Time) string {
	d, ok, err := LoadDeep(o.StateDir)
	if err != nil || !ok {
		return ""
	}
	h, err := node.Open(o.HostRoot)
	if err != nil {
		return ""
	}
	src := node.DefaultSources(h)
	if o.Sources != nil {
		src = *o.Sources
	}
	if d.Stale(KeyOf(h, node.Collect(h, src)), t, o.DeepMaxAge) != "" {
		return ""
	}
	return "the deep result of " + d.At.UTC().Format(time.RFC3339) + " still speaks for the node"
}
