package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/runner"
	"github.com/gdrcheck/gdrcheck/suites"
	judge "github.com/gdrcheck/gdrcheck/suites/health"
)

// QuickGate are the suites the prolog runs on the job's GPUs: the wiring,
// the peer-memory path proven by a registration of each GPU's buffer with
// its rail NIC, and BAR1. Seconds, no fabric traffic.
var QuickGate = []string{"topology", "kernel", "bar1"}

// When the prolog runs the deep node suites as well.
const (
	DeepAuto  = "auto"  // when the job asks (DeepComment) or the cached deep result is stale
	DeepAsked = "asked" // only when the job asks
	DeepNever = "never"
)

// DeepComment is the word in a job's comment (sbatch --comment
// gdrcheck=deep) that asks its prolog for the deep check. slurmd 22.05
// gives a Prolog the comment as SLURM_JOB_COMMENT; a job's own
// environment never reaches it.
const DeepComment = "gdrcheck=deep"

// PrologOptions configure one `gdrcheck prolog`.
type PrologOptions struct {
	HostRoot  string // "/" or a recorded node
	HostLabel string // how reports name HostRoot
	StateDir  string // DefaultStateDir when empty
	NodeName  string // default SLURMD_NODENAME, then the host name
	Job       string // SLURM_JOB_ID, for the record
	// GPUs is the job's GPU list (SLURM_JOB_GPUS, else
	// CUDA_VISIBLE_DEVICES: host indices or UUIDs); empty checks every
	// GPU (a node given whole, a cluster without GPU gres).
	GPUs    string
	Comment string // SLURM_JOB_COMMENT: DeepComment asks for the deep check
	Deep    string // DeepAuto, DeepAsked or DeepNever; empty is DeepAuto
	// Timeout bounds the quick gate, DeepTimeout the deep suites.
	Timeout, DeepTimeout time.Duration
	DeepMaxAge           time.Duration // 0: DefaultDeepMaxAge
	Sources              *node.Sources // tests; nil picks the host's
	Progress             io.Writer     // nil discards
	Version              string
	Args                 []string
	Now                  func() time.Time // nil: time.Now
}

// PrologOutcome is what the prolog found and did.
type PrologOutcome struct {
	Record PrologRecord
	// StoreErr is why the record could not be written; the verdict
	// stands without it (a failure still fails the job).
	StoreErr error
}

// Prolog runs the quick gate on the job's GPUs and their rail NICs, or,
// where o.Deep says and the job holds the whole node (a deep run drives
// every GPU and NIC), the deep node suites, which include the gate, and
// stores their result as the deep cache (one process runs the suites
// once: Ginkgo runs its specs once a process). A fault of the node fails
// it (Record.Exit 1: the prolog exits non-zero, Slurm drains the node and
// requeues the job); one gdrcheck could not evaluate leaves the job alone
// (Exit 2, the prolog exits 0: fail open). The record goes to the state
// directory either way, for the next health run.
func Prolog(ctx context.Context, o PrologOptions) PrologOutcome {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	rec := PrologRecord{Job: o.Job, GPUs: o.GPUs}
	var res *results.Results
	var err error
	if why, skip := deepWanted(o, now()); why != "" && skip == "" {
		rec.Deep, res, err = prologDeep(ctx, o, why, now)
	} else {
		if why != "" {
			rec.Deep = "skipped: " + why + ", " + skip
		}
		res, err = quickGate(ctx, o)
	}
	var sel *runner.GPUSelectionError
	switch {
	case errors.As(err, &sel):
		rec.Node = runner.NodeName(o.NodeName, "")
		rec.Verdict = judge.MissingJobGPU(rec.Node, sel)
	case err != nil:
		rec.Node = runner.NodeName(o.NodeName, "")
		rec.Verdict = unevaluable(rec.Node, err)
	default:
		rec.Node = res.Nodes[0].Name
		rec.Verdict = judge.PrologVerdict(res.Nodes[0])
	}
	rec.At = now().UTC()
	rec.Exit = exitOf(rec.Verdict)
	if f, ok := rec.Verdict.Worst(); ok && rec.Failed() {
		rec.Reason = DrainReason(f)
	}
	return PrologOutcome{Record: rec, StoreErr: StoreProlog(ctx, o.StateDir, rec, o.Progress)}
}

// quickGate runs QuickGate on the job's GPUs, within its own deadline: a
// gate cut short is unevaluable (fail open), where slurmd killing the
// prolog at PrologEpilogTimeout would drain the node.
func quickGate(ctx context.Context, o PrologOptions) (*results.Results, error) {
	if o.Timeout > 0 {
		qctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("the quick gate's deadline (%s)", o.Timeout))
		defer cancel()
		ctx = qctx
	}
	res, _, err := runner.Run(runner.Options{HostRoot: o.HostRoot, HostLabel: o.HostLabel, Suites: QuickGate,
		NodeName: o.NodeName, Config: suites.DefaultConfig(), Sources: o.Sources, Timeout: o.Timeout, Ctx: ctx,
		GPUs: o.GPUs, Version: o.Version, Args: o.Args})
	return res, err
}

// deepWanted says why the prolog should run the deep suites ("": it
// should not), and, where it should, why it cannot (skip: the job holds
// only some GPUs). It reads the node's evidence without the probe, for
// the cache's key and the GPU count; a node whose evidence fails gets
// the quick gate, which says why.
func deepWanted(o PrologOptions, t time.Time) (why, skip string) {
	asked := slices.Contains(strings.FieldsFunc(o.Comment, func(r rune) bool { return r == ' ' || r == ',' || r == ';' }), DeepComment)
	if o.Deep == DeepNever || !asked && o.Deep == DeepAsked {
		return "", ""
	}
	h, err := node.Open(o.HostRoot)
	if err != nil {
		return "", ""
	}
	src := node.DefaultSources(h)
	if o.Sources != nil {
		src = *o.Sources
	}
	ev := node.Collect(h, src)
	if ev.Fatal() != nil {
		return "", ""
	}
	if asked {
		why = "the job asked (" + DeepComment + ")"
	} else {
		d, ok, err := LoadDeep(o.StateDir)
		switch {
		case err != nil:
			why = "the deep result could not be read: " + err.Error()
		case !ok:
			why = "no deep result yet"
		default:
			why = d.Stale(KeyOf(h, ev), t, o.DeepMaxAge)
		}
	}
	if why == "" || o.GPUs == "" {
		return why, ""
	}
	if ids, err := ev.SelectGPUs(o.GPUs); err != nil || len(ids) < len(ev.GPUs) {
		return why, "but the job holds only some of the node's GPUs"
	}
	return why, ""
}

// prologDeep runs the deep node suites on the whole node within
// o.DeepTimeout and stores their result as the deep cache; it says what
// it did, for the record, and returns the results the prolog judges.
func prologDeep(ctx context.Context, o PrologOptions, why string, now func() time.Time) (string, *results.Results, error) {
	if o.DeepTimeout > 0 {
		dctx, cancel := context.WithTimeoutCause(ctx, o.DeepTimeout, fmt.Errorf("the deep check's deadline (%s)", o.DeepTimeout))
		defer cancel()
		ctx = dctx
	}
	d, res, err := runDeep(ctx, DeepOptions{HostRoot: o.HostRoot, HostLabel: o.HostLabel, NodeName: o.NodeName,
		Timeout: o.DeepTimeout, Sources: o.Sources, Version: o.Version, Args: o.Args, Now: now})
	if err != nil {
		return "failed to run (" + why + ")", nil, err
	}
	if ctx.Err() != nil {
		// A partial run proves nothing: the cache keeps what it had.
		return "cut short (" + why + "): " + context.Cause(ctx).Error(), res, nil
	}
	if err := StoreDeep(ctx, o.StateDir, d, o.Progress); err != nil {
		fmt.Fprintf(progressOr(o.Progress), "gdrcheck prolog: %v\n", err)
	}
	return fmt.Sprintf("ran (%s): exit %d", why, d.Exit), res, nil
}

// exitOf is the prolog's verdict as an exit code: a fault of the node
// fails; a run that could not tell does not.
func exitOf(v judge.Verdict) int {
	switch v.State {
	case judge.StateUnhealthy:
		return results.ExitFailed
	case judge.StateUnevaluable:
		return results.ExitUnevaluable
	}
	return results.ExitPassed
}

// unevaluable is the verdict of a prolog that could not run its checks.
func unevaluable(nodeName string, err error) judge.Verdict {
	return judge.Verdict{State: judge.StateUnevaluable, Action: results.ActionRerun, Findings: []judge.Finding{{
		Check: judge.CheckEvaluate, State: judge.StateUnevaluable, Cause: err.Error(),
		Action: results.ActionRerun, Scope: results.ScopeNode, Entity: nodeName}}}
}

func progressOr(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
