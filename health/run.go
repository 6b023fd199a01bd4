package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/dirlock"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	sh "github.com/gdrcheck/gdrcheck/suites/health"
)

// DefaultDeadline is the run's own deadline: well inside slurmd's 60 s
// kill of a HealthCheckProgram, so gdrcheck, not slurmd, says what it
// could not finish.
const DefaultDeadline = 15 * time.Second

// Options are `gdrcheck health`'s flags.
type Options struct {
	HostRoot   string        // "/" (or "") live; a recorded node's tree replays it
	StateDir   string        // DefaultStateDir where empty
	Deadline   time.Duration // DefaultDeadline where zero
	Node       string        // the Slurm node name; the evidence's hostname where empty
	DeepMaxAge time.Duration // DefaultDeepMaxAge where zero
	// Slurm drains and resumes through scontrol; nil leaves Slurm alone
	// (the verdict and the state file only).
	Slurm  *slurm.Client
	Policy Policy
	Now    func() time.Time // time.Now where nil
	Stderr io.Writer        // progress and fail-open notes; io.Discard where nil
	// gather replaces the evidence collection (tests: a slow one).
	gather func(ctx context.Context, root string) (gathered, error)
}

// Outcome is what one run found and did.
type Outcome struct {
	Node    string     `json:"node"`
	Verdict sh.Verdict `json:"verdict"`
	// Failure says why gdrcheck could not evaluate or could not keep its
	// state: the run then changed nothing in Slurm (fail open).
	Failure string         `json:"failure,omitempty"`
	Deep    sh.DeepState   `json:"deep"` // the deep-result cache as this run read it
	Slurm   Decision       `json:"slurm"`
	Applied bool           `json:"applied"` // the Decision's scontrol call was made and succeeded
	Action  results.Action `json:"action"`  // the node's overall action
	Elapsed time.Duration  `json:"elapsed_ns"`
}

// Breaker names the circuit breaker that held a drain, "" when none did.
func (o Outcome) Breaker() string { return o.Slurm.Breaker }

// ExitCode is results' vocabulary: 0 healthy (or only stale), 1
// unhealthy, 2 unevaluable or a failure of gdrcheck's own (it failed
// open). slurmd only logs it.
func (o Outcome) ExitCode() int {
	if o.Failure != "" {
		return results.ExitUnevaluable // gdrcheck's own failure: it could not finish its work
	}
	switch o.Verdict.State {
	case sh.StateUnhealthy:
		return results.ExitFailed
	case sh.StateUnevaluable:
		return results.ExitUnevaluable
	}
	return results.ExitPassed
}

// gathered is the cheap evidence of one run.
type gathered struct {
	host     node.Host
	ev       *node.Evidence
	counters *node.FabricSample
	ctrErr   error
	bootID   string
}

// gather reads the node once: node.Collect without the CUDA/verbs
// probe (a CUDA context costs seconds; the deep result covers the
// registration) and one reading of the port counters.
func gather(_ context.Context, root string) (gathered, error) {
	if root == "" {
		root = "/"
	}
	h, err := node.Open(root)
	if err != nil {
		return gathered{}, err
	}
	g := gathered{host: h, ev: node.Collect(h, node.DefaultSources(h))}
	g.bootID, _ = h.BootID()
	if s, err := h.FabricCounters(); err == nil {
		g.counters = &s
	} else if !errors.Is(err, node.ErrAbsent) {
		g.ctrErr = err
	}
	return g, nil
}

// Run is one health run: gather, judge against the state file and the
// deep result, decide and apply at most one Slurm change, keep the
// state. Its own deadline cuts the gathering, never the bookkeeping.
func Run(ctx context.Context, o Options) (Outcome, error) {
	o = withDefaults(o)
	start := o.Now()
	// One deadline for the run's own work: the gathering and the
	// scontrol calls (exec.CommandContext kills one that hangs on a
	// controller that does not answer).
	work, cancel := context.WithTimeout(ctx, o.Deadline)
	defer cancel()
	g, unfinished, err := gatherBy(work, o)
	if err != nil {
		return Outcome{}, err
	}
	if g.ctrErr != nil {
		fmt.Fprintf(o.Stderr, "gdrcheck health: the port counters could not be read, so none is compared: %v\n", g.ctrErr)
	}
	out := Outcome{Node: o.Node}
	if out.Node == "" && g.ev != nil {
		out.Node = g.ev.Host.Hostname
	}
	if out.Node == "" {
		out.Node, _ = os.Hostname() // the gathering did not finish: this host's own name
	}
	// The state is read and written under the directory's lock, so two
	// runs (slurmd's and one by hand) take turns; one that cannot take it
	// still judges, with no previous readings, and changes nothing.
	unlock, lockErr := lockState(ctx, o)
	if lockErr == nil {
		defer unlock()
	}
	prev, havePrev, stateErr := LoadState(o.StateDir)
	in := sh.Input{Node: out.Node, Evidence: g.ev, Counters: g.counters, Unfinished: unfinished}
	if havePrev && prev.BootID == g.bootID { // a recording without a boot id is one boot
		in.Prev = &sh.Previous{Counters: prev.Counters, Xids: prev.Xids}
	}
	if g.ev != nil {
		in.Deep = deepState(o, g)
	}
	out.Deep = in.Deep
	out.Verdict = sh.Judge(in)
	out.Action = out.Verdict.Action
	switch {
	case lockErr != nil:
		out.Failure = lockErr.Error()
	case stateErr != nil:
		// An unreadable state file would make every counter and Xid look
		// new or none: judge, but change nothing in Slurm.
		out.Failure = "state file: " + stateErr.Error()
	}
	next := nextState(prev, out, g, o.Now())
	if o.Slurm != nil && out.Failure == "" && out.Verdict.State != sh.StateUnevaluable {
		out.Slurm, out.Applied = applySlurm(work, o, out, next)
	} else {
		out.Slurm = Decision{Op: OpNone, Why: noSlurmWhy(o, out)}
	}
	next.Slurm = out.Slurm.Op + ": " + out.Slurm.Why
	if out.Applied {
		switch out.Slurm.Op {
		case OpDrain, OpReason:
			next.Drained, next.DrainedAt = next.Reason, o.Now()
		case OpResume:
			next.Drained, next.DrainedAt = "", time.Time{}
		}
	}
	if lockErr == nil {
		if err := storeStateLocked(o.StateDir, next); err != nil {
			out.Failure = join(out.Failure, err.Error())
		}
	}
	switch {
	case out.Failure != "" && out.Applied:
		fmt.Fprintf(o.Stderr, "gdrcheck health: %s, after the %s in Slurm\n", out.Failure, out.Slurm.Op)
	case out.Failure != "":
		fmt.Fprintf(o.Stderr, "gdrcheck health: fail open: %s: Slurm is left as it is\n", out.Failure)
	}
	out.Elapsed = o.Now().Sub(start)
	return out, nil
}

func withDefaults(o Options) Options {
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.gather == nil {
		o.gather = gather
	}
	if o.Policy.ResumeAfter < 1 {
		o.Policy.ResumeAfter = 1
	}
	if o.Policy.BreakerWindow <= 0 {
		o.Policy.BreakerWindow = DefaultBreakerWindow
	}
	return o
}

// gatherBy runs the gathering until ctx's deadline. Collect reads files
// and cannot be interrupted, so past the deadline the run goes on
// without it (its goroutine ends with the process) and names it.
func gatherBy(ctx context.Context, o Options) (gathered, []string, error) {
	type res struct {
		g   gathered
		err error
	}
	ch := make(chan res, 1)
	go func() {
		g, err := o.gather(ctx, o.HostRoot)
		ch <- res{g, err}
	}()
	select {
	case r := <-ch:
		return r.g, nil, r.err
	case <-ctx.Done():
		fmt.Fprintf(o.Stderr, "gdrcheck health: the %s deadline passed before the evidence collection finished\n", o.Deadline)
		return gathered{}, []string{fmt.Sprintf("the evidence collection (deadline %s)", o.Deadline)}, nil
	}
}

// deepState reads the deep-result cache against the node's key now.
func deepState(o Options, g gathered) sh.DeepState {
	d, ok, err := LoadDeep(o.StateDir)
	if err != nil {
		return sh.DeepState{Err: err.Error()}
	}
	if !ok {
		return sh.DeepState{}
	}
	return sh.DeepState{Found: true, Stale: d.Stale(KeyOf(g.host, g.ev), o.Now(), o.DeepMaxAge), Exit: d.Exit,
		Action: d.Action, Check: d.Check, Cause: d.Cause, At: d.At}
}

// nextState is the state this run leaves: the readings for the next
// run, and the healthy count (an unevaluable run keeps the count).
func nextState(prev State, out Outcome, g gathered, now time.Time) State {
	next := State{Node: out.Node, BootID: g.bootID, At: now, Verdict: out.Verdict.State, Action: out.Action,
		HealthyRuns: prev.HealthyRuns, Drained: prev.Drained, DrainedAt: prev.DrainedAt, Counters: g.counters, Failure: out.Failure}
	if g.ev != nil {
		next.Xids = g.ev.Kernel.Xids
	}
	switch out.Verdict.State {
	case sh.StateUnevaluable:
		next.Failure = join(next.Failure, out.Verdict.Summary())
		// Keep the last readings: this run's say nothing.
		next.Counters, next.Xids, next.BootID = prev.Counters, prev.Xids, prev.BootID
		next.Verdict, next.Reason = prev.Verdict, prev.Reason
	case sh.StateUnhealthy:
		next.HealthyRuns = 0
		if w, ok := out.Verdict.Worst(); ok {
			next.Reason = DrainReason(w)
		}
	default:
		next.HealthyRuns++
	}
	return next
}

// lockState makes the state directory and takes its lock: a directory
// gdrcheck cannot write is a failure of gdrcheck, never of the node.
func lockState(ctx context.Context, o Options) (func(), error) {
	if err := ensureStateDir(o.StateDir); err != nil {
		return nil, err
	}
	l, err := dirlock.Acquire(ctx, o.StateDir, min(lockWait, o.Deadline), o.Stderr)
	if err != nil {
		return nil, fmt.Errorf("state directory %q: %w", o.StateDir, err)
	}
	if err := writable(o.StateDir); err != nil {
		l.Release()
		return nil, err
	}
	return l.Release, nil
}

// writable proves the directory takes a new file, as the state file's
// rename will need; the lock file alone may predate a read-only mount.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("state directory %q is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// applySlurm reads the nodes once, decides, and makes the one call.
func applySlurm(ctx context.Context, o Options, out Outcome, next State) (Decision, bool) {
	recs, err := o.Slurm.Nodes(ctx)
	if err != nil {
		return Decision{Op: OpNone, Why: "fail open: reading the nodes: " + err.Error()}, false
	}
	var all []slurm.NodeView
	var self slurm.NodeView
	found := false
	for _, r := range recs {
		v := slurm.ViewOf(r)
		all = append(all, v)
		if v.Name == out.Node {
			self, found = v, true
		}
	}
	if !found {
		return Decision{Op: OpNone, Why: fmt.Sprintf("Slurm knows no node %q: nothing to change", out.Node)}, false
	}
	good := ""
	if o.Policy.Publish {
		good = goodState(out)
	}
	d, ok := prologDrain(o.StateDir, self, out.Verdict, o.Now())
	if !ok {
		d = decide(out.Verdict, self, all, next, o.Policy, o.Now(), good)
	}
	if len(d.Fields) == 0 {
		return d, false
	}
	if err := o.Slurm.UpdateNode(ctx, out.Node, d.Fields...); err != nil {
		d.Why += ": " + err.Error()
		fmt.Fprintf(o.Stderr, "gdrcheck health: %s %s: %v\n", d.Op, out.Node, err)
		return d, false
	}
	return d, true
}

// goodState is the short machine-readable GDR state published in the
// node's Extra (or Comment), as JSON because Slurm's extra_constraints
// (slurm.schedmd.com/extra_constraints.html) reads Extra as JSON, so
// `sbatch --extra gdr=proven` can select on it: {"gdr":"proven",
// "gdr_at":"<date of the deep run>"} on a healthy node with a fresh
// passing deep result, {"gdr":"unproven"} while it is stale or absent,
// {"gdr":"failed","gdr_check":"<check>"} on an unhealthy node.
func goodState(out Outcome) string {
	v := out.Verdict
	if w, ok := v.Worst(); ok {
		return GoodPrefix + `"failed","gdr_check":"` + w.Check + `"}`
	}
	for _, f := range v.Findings {
		if f.Check == sh.CheckDeep {
			return GoodPrefix + `"unproven"}`
		}
	}
	return GoodPrefix + `"proven","gdr_at":"` + out.Deep.At.UTC().Format("2006-01-02") + `"}`
}

func noSlurmWhy(o Options, out Outcome) string {
	if out.Failure != "" {
		return "fail open: " + out.Failure
	}
	if out.Verdict.State == sh.StateUnevaluable {
		return "fail open: gdrcheck could not evaluate the node, so Slurm is left as it is"
	}
	if o.Slurm == nil {
		return "Slurm not asked (--slurm off, or no scontrol on PATH)"
	}
	return ""
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
