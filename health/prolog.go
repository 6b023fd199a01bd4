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

// DefaultStateDir is where health, prolog and epilog keep their state;
// the packages create it 0700 root (examples/slurm).
const DefaultStateDir = "/var/lib/gdrcheck"

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

// Prolog runs the quick gate on the job's GPUs and their rail NICs, and
// the deep node suites where o.Deep says and the job holds the whole
// node (a deep run drives every GPU and NIC). A fault of the node fails
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
	w := whole{list: o.GPUs}
	opt := runner.Options{HostRoot: o.HostRoot, HostLabel: o.HostLabel, Suites: QuickGate, NodeName: o.NodeName,
		Config: suites.DefaultConfig(), Sources: o.Sources, Timeout: o.Timeout, Ctx: ctx, GPUs: o.GPUs,
		Version: o.Version, Args: o.Args, Whole: w.see}
	rec := PrologRecord{Job: o.Job, GPUs: o.GPUs}
	res, _, err := runner.Run(opt)
	var sel *runner.GPUSelectionError
	switch {
	case errors.As(err, &sel):
		rec.Node = reportName(o.NodeName)
		rec.Verdict = judge.MissingJobGPU(rec.Node, sel)
	case err != nil:
		rec.Node = reportName(o.NodeName)
		rec.Verdict = unevaluable(rec.Node, err)
	default:
		rec.Node = res.Nodes[0].Name
		rec.Verdict = judge.PrologVerdict(res.Nodes[0])
	}
	if rec.Verdict.State == judge.StateHealthy {
		rec.Deep = prologDeep(ctx, o, &w, &rec, now)
	}
	rec.At = now().UTC()
	rec.Exit = exitOf(rec.Verdict)
	if f, ok := rec.Verdict.Worst(); ok && rec.Failed() {
		rec.Reason = prologReason(f)
	}
	return PrologOutcome{Record: rec, StoreErr: StoreProlog(ctx, o.StateDir, rec, o.Progress)}
}

// whole keeps what the prolog needs of the whole node, seen before the
// runner scopes the evidence to the job's GPUs.
type whole struct {
	list string // the job's GPUs, as given
	seen bool
	key  Key
	all  bool // the job holds every GPU of the node
}

func (w *whole) see(h node.Host, ev *node.Evidence) {
	w.seen, w.key, w.all = true, KeyOf(h, ev), w.list == ""
	if ids, err := ev.SelectGPUs(w.list); w.list != "" && err == nil {
		w.all = len(ids) == len(ev.GPUs)
	}
}

// prologDeep runs the deep node suites when o asks for them and the job
// holds the whole node, stores their result as the deep cache, and folds
// a failure into rec's verdict; it says what it did, for the record.
func prologDeep(ctx context.Context, o PrologOptions, w *whole, rec *PrologRecord, now func() time.Time) string {
	asked := slices.Contains(strings.FieldsFunc(o.Comment, func(r rune) bool { return r == ' ' || r == ',' || r == ';' }), DeepComment)
	why := ""
	switch {
	case o.Deep == DeepNever:
		return ""
	case asked:
		why = "the job asked (" + DeepComment + ")"
	case o.Deep == DeepAsked:
		return ""
	case !w.seen:
		return "" // the node's evidence failed: the verdict says so
	default:
		d, ok, err := LoadDeep(o.StateDir)
		switch {
		case err != nil:
			why = "the deep result could not be read: " + err.Error()
		case !ok:
			why = "no deep result yet"
		default:
			why = d.Stale(w.key, now(), o.DeepMaxAge)
		}
		if why == "" {
			return ""
		}
	}
	if !w.all {
		return "skipped: " + why + ", but the job holds only some of the node's GPUs"
	}
	d, err := RunDeep(ctx, DeepOptions{HostRoot: o.HostRoot, HostLabel: o.HostLabel, NodeName: o.NodeName,
		Timeout: o.DeepTimeout, Sources: o.Sources, Version: o.Version, Args: o.Args, Now: now})
	if err != nil {
		return "failed to run (" + why + "): " + err.Error()
	}
	if err := StoreDeep(ctx, o.StateDir, d, o.Progress); err != nil {
		fmt.Fprintf(progressOr(o.Progress), "gdrcheck prolog: %v\n", err)
	}
	if d.Exit == results.ExitFailed {
		rec.Verdict = judge.DeepFailed(rec.Node, d.Cause, d.Action)
	}
	return fmt.Sprintf("ran (%s): exit %d", why, d.Exit)
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
