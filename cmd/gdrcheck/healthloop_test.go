package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/health"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
	"github.com/gdrcheck/gdrcheck/slurm"
	"github.com/gdrcheck/gdrcheck/slurm/localcluster"
)

// The health loop's cluster: slurmd itself runs gdrcheck health every
// healthInterval and gdrcheck prolog before each job; the test only
// plants recordings and watches what Slurm shows.
const (
	healthInterval = 5 * time.Second
	loopNodes      = 10
	resumeAfter    = 2
)

// healthLoop is the running cluster and what each node replays.
type healthLoop struct {
	t      *testing.T
	c      *localcluster.Cluster
	sc     slurm.Client
	roots  map[string]string // fixture name -> unpacked directory
	states string            // the nodes' state directories: states/nodeK
	plant  map[string]string // node -> fixture it replays
	extra  map[string]map[string]string
}

func startHealthLoop(t *testing.T) *healthLoop {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the local Slurm cluster needs root (slurmd runs jobs and hooks as root)")
	}
	if testing.Short() {
		t.Skip("-short: no Slurm daemons")
	}
	l := &healthLoop{t: t, roots: map[string]string{}, states: t.TempDir(), plant: map[string]string{}, extra: map[string]map[string]string{}}
	// Unpacked once: each of the ten nodes' runs every interval reads a
	// directory instead of unpacking an archive.
	for _, f := range []string{"h100x8-nvswitch-cx7-pix", "h100x8-proprietary-no-peermem", "h100x8-acs-redirect"} {
		dir := filepath.Join(t.TempDir(), f)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := ttar.ExtractFile(nodes+f+".ttar", dir); err != nil {
			t.Fatal(err)
		}
		l.roots[f] = dir
	}
	pid := os.Getpid()
	// Its own cluster, apart from the one the submit tests share: the
	// hooks are slurm.conf's, set at start.
	stateDir := fmt.Sprintf("/tmp/gdrcheck-slurm-hl-%d", pid)
	for k := 1; k <= loopNodes; k++ {
		l.plant["node"+strconv.Itoa(k)] = "h100x8-nvswitch-cx7-pix"
	}
	// The recordings are in place before slurmd's first health run.
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	l.c = &localcluster.Cluster{StateDir: stateDir}
	l.writeEnv()
	began := time.Now()
	// A seed apart from the submit tests' pid keeps the two clusters of
	// one test binary from trying the same window first.
	port, err := localcluster.FreePorts(pid+7919, loopNodes+1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := localcluster.Start(context.Background(), localcluster.Options{
		StateDir: stateDir, Port: port, Nodes: loopNodes, Install: true,
		Hooks: localcluster.Hooks{
			Health:          bin + " health --resume-after " + strconv.Itoa(resumeAfter) + " --breaker-percent 20 --breaker-window 1h",
			HealthInterval:  healthInterval,
			HealthNodeState: "ANY",
			Prolog:          bin + " prolog --deep never",
			PrologFlags:     "Alloc",
			// gdrcheck's own limits are far inside it.
			PrologEpilogTimeout: time.Minute,
			SchedulerParameters: "nohold_on_prolog_fail",
		},
	})
	if err != nil {
		t.Fatalf("starting the local Slurm cluster: %v", err)
	}
	t.Logf("10-node cluster with the health loop up in %v", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for k := 1; k <= loopNodes; k++ {
				b, _ := os.ReadFile(c.HookLog("health", "node"+strconv.Itoa(k)))
				t.Logf("health log of node%d (last lines):\n%s", k, lastLines(string(b), 12))
			}
		}
		c.Stop()
		os.RemoveAll(stateDir)
	})
	l.c, l.sc = c, slurm.Client{Env: c.Vars()}
	return l
}

// writeEnv gives every node its recording and state directory, as the
// hooks read them (GDRCHECK_HOST_ROOT, GDRCHECK_STATE_DIR).
func (l *healthLoop) writeEnv() {
	l.t.Helper()
	env := map[string]map[string]string{}
	for n, f := range l.plant {
		env[n] = map[string]string{"GDRCHECK_HOST_ROOT": l.roots[f], "GDRCHECK_STATE_DIR": filepath.Join(l.states, n)}
		for k, v := range l.extra[n] {
			env[n][k] = v
		}
	}
	if err := l.c.WriteNodeEnv(env); err != nil {
		l.t.Fatal(err)
	}
}

func (l *healthLoop) set(fixture string, names ...string) {
	for _, n := range names {
		l.plant[n] = fixture
	}
	l.writeEnv()
}

// views reads every node as health reads it.
func (l *healthLoop) views() map[string]slurm.NodeView {
	l.t.Helper()
	recs, err := l.sc.Nodes(l.t.Context())
	if err != nil {
		l.t.Fatal(err)
	}
	out := map[string]slurm.NodeView{}
	for _, r := range recs {
		v := slurm.ViewOf(r)
		out[v.Name] = v
	}
	return out
}

// await polls until ok holds of the nodes, at most within; it returns
// how long that took.
func (l *healthLoop) await(what string, within time.Duration, ok func(map[string]slurm.NodeView) bool) time.Duration {
	l.t.Helper()
	began := time.Now()
	for {
		v := l.views()
		if ok(v) {
			return time.Since(began)
		}
		if time.Since(began) > within {
			l.t.Fatalf("%s: not within %s; nodes:\n%s", what, within, describe(v))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// runs counts the health runs slurmd started on node so far.
func (l *healthLoop) runs(node string) int {
	b, _ := os.ReadFile(l.c.HookLog("health", node))
	return strings.Count(string(b), " health on "+node+" ")
}

func describe(vs map[string]slurm.NodeView) string {
	var b strings.Builder
	for k := 1; k <= loopNodes; k++ {
		v := vs["node"+strconv.Itoa(k)]
		fmt.Fprintf(&b, "  %s %s %q\n", v.Name, strings.Join(v.Flags, "+"), v.Reason)
	}
	return b.String()
}

func drainedOurs(v slurm.NodeView) bool {
	return v.Drained() && strings.HasPrefix(v.Reason, slurm.DrainPrefix)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// issue 33's acceptance: slurmd runs gdrcheck health as its
// HealthCheckProgram and gdrcheck prolog as its Prolog; the test plants
// recordings and watches Slurm, in the order.
func TestSlurmdRunsGdrcheckAsItsHealthCheckAndProlog(t *testing.T) {
	t.Parallel()
	l := startHealthLoop(t)
	began := time.Now()
	// Every node has run health once, healthy (the deep result is absent:
	// stale, RERUN, never a drain), and none is drained.
	l.await("a first health run on every node", 4*healthInterval, func(vs map[string]slurm.NodeView) bool {
		for k := 1; k <= loopNodes; k++ {
			if l.runs("node"+strconv.Itoa(k)) == 0 {
				return false
			}
		}
		return true
	})
	for n, v := range l.views() {
		if v.Drained() {
			t.Fatalf("%s drained on healthy recordings: %q", n, v.Reason)
		}
	}

	// (c) from the start: an admin's drain, on a node planted bad too.
	const admin = "bad DIMM, ticket 4711"
	if err := l.sc.UpdateNode(t.Context(), "node10", "State=DRAIN", "Reason="+admin); err != nil {
		t.Fatal(err)
	}
	l.set("h100x8-proprietary-no-peermem", "node10")
	adminKept := func(vs map[string]slurm.NodeView) {
		t.Helper()
		if v := vs["node10"]; !v.Drained() || v.Reason != admin {
			t.Fatalf("node10, drained by an admin: now %s %q, want drained %q", strings.Join(v.Flags, "+"), v.Reason, admin)
		}
	}

	// (a) node3 loses its peer memory: drained within one interval.
	l.set("h100x8-proprietary-no-peermem", "node3")
	took := l.await("node3 drained by gdrcheck", 3*healthInterval, func(vs map[string]slurm.NodeView) bool { return drainedOurs(vs["node3"]) })
	v := l.views()["node3"]
	if !strings.HasPrefix(v.Reason, "gdrcheck: peer-memory: ") || !strings.Contains(v.Reason, " action=") {
		t.Errorf("node3's reason %q: want gdrcheck: peer-memory: ... action=...", v.Reason)
	}
	// A run already under way when the recording changed saw the old
	// one: one interval, plus a run's length.
	if took > healthInterval+3*time.Second {
		t.Errorf("node3 drained %v after the fault, more than one interval (%v)", took.Round(time.Millisecond), healthInterval)
	}
	t.Logf("(a) node3 drained %v after its fault: %s", took.Round(time.Millisecond), v.Reason)
	adminKept(l.views())

	// (b) the fault removed: resumed after resumeAfter healthy runs.
	l.set("h100x8-nvswitch-cx7-pix", "node3")
	before := l.runs("node3")
	took = l.await("node3 resumed", (resumeAfter+3)*healthInterval, func(vs map[string]slurm.NodeView) bool { return !vs["node3"].Drained() })
	if n := l.runs("node3") - before; n < resumeAfter {
		t.Errorf("node3 resumed after %d health runs, want at least %d", n, resumeAfter)
	}
	t.Logf("(b) node3 resumed %v after its fault was removed, after %d runs", took.Round(time.Millisecond), l.runs("node3")-before)
	adminKept(l.views())

	adminKept(l.breaker())
	adminKept(l.failOpen())
	l.prolog()
	adminKept(l.views())
	t.Logf("the health loop's acceptance took %v", time.Since(began).Round(time.Second))
}

// breaker is (d): four nodes bad at once, the breaker at 20 % of 10:
// exactly two drained, the others naming the breaker; then all four
// good again and resumed. It returns the nodes as they were with two.
func (l *healthLoop) breaker() map[string]slurm.NodeView {
	t := l.t
	bad := []string{"node5", "node6", "node7", "node8"}
	l.set("h100x8-proprietary-no-peermem", bad...)
	count := func(vs map[string]slurm.NodeView) int {
		n := 0
		for _, b := range bad {
			if drainedOurs(vs[b]) {
				n++
			}
		}
		return n
	}
	l.await("two of the four drained", 3*healthInterval, func(vs map[string]slurm.NodeView) bool { return count(vs) >= 2 })
	// Nodes that drained in the same second put it right on their next
	// run (pastBreaker), and the ones held name the breaker on the run
	// after: three intervals, every bad node has run three times since.
	if vs := l.views(); count(vs) > 2 {
		t.Logf("(d) %d drained in the same round; the breaker's next run resumes those past the limit", count(vs))
	}
	time.Sleep(3 * healthInterval)
	vs := l.views()
	if n := count(vs); n != 2 {
		t.Errorf("%d of the 4 bad nodes drained with a 20%% breaker on 10 nodes, want exactly 2:\n%s", n, describe(vs))
	}
	held := 0
	for _, b := range bad {
		if drainedOurs(vs[b]) {
			continue
		}
		log, _ := os.ReadFile(l.c.HookLog("health", b))
		if strings.Contains(string(log), "circuit breaker open: partition gpu has 2 of 10 nodes drained by gdrcheck") {
			held++
		}
	}
	if held != 2 {
		t.Errorf("%d of the 2 held nodes name the breaker in their output, want 2", held)
	}
	t.Logf("(d) 2 of 4 bad nodes drained, 2 held by the breaker")
	l.set("h100x8-nvswitch-cx7-pix", bad...)
	l.await("the four resumed", (resumeAfter+3)*healthInterval, func(vs map[string]slurm.NodeView) bool { return count(vs) == 0 })
	return vs
}

// failOpen is (e): a node planted bad whose state directory cannot be
// written is left alone. It returns the nodes after its two runs.
func (l *healthLoop) failOpen() map[string]slurm.NodeView {
	t := l.t
	file := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l.extra["node4"] = map[string]string{"GDRCHECK_STATE_DIR": file}
	l.set("h100x8-proprietary-no-peermem", "node4")
	before := l.runs("node4")
	l.await("two health runs on node4", 4*healthInterval, func(map[string]slurm.NodeView) bool { return l.runs("node4")-before >= 2 })
	vs := l.views()
	if vs["node4"].Drained() {
		t.Errorf("node4, whose state directory cannot be written, was drained: %q", vs["node4"].Reason)
	}
	if log, _ := os.ReadFile(l.c.HookLog("health", "node4")); !strings.Contains(string(log), "fail open") {
		t.Errorf("node4's health output does not say it failed open:\n%s", lastLines(string(log), 8))
	}
	t.Logf("(e) node4 with an unwritable state directory left alone")
	delete(l.extra, "node4")
	l.set("h100x8-nvswitch-cx7-pix", "node4")
	return vs
}

// prolog: a job lands on a node whose fault health cannot see (ACS
// redirect: a topology fault, which the quick gate finds); the prolog
// fails, Slurm drains the node and requeues the job, and the next health
// run writes gdrcheck's reason in place of "Prolog error".
func (l *healthLoop) prolog() {
	t := l.t
	l.set("h100x8-acs-redirect", "node2")
	// The job's script would mark that it ran: it must not, on node2.
	dir := t.TempDir()
	id, err := l.sc.Submit(t.Context(), []string{"sbatch", "--parsable", "-N1", "-w", "node2", "-o", filepath.Join(dir, "out-%j"),
		"-D", dir, "--wrap", "touch " + filepath.Join(dir, "ran")}, "")
	if err != nil {
		t.Fatal(err)
	}
	var sawSlurms bool
	l.await("node2 drained by its prolog, with gdrcheck's reason", 6*healthInterval, func(vs map[string]slurm.NodeView) bool {
		v := vs["node2"]
		if v.Drained() && strings.HasPrefix(v.Reason, health.SlurmPrologReason) {
			sawSlurms = true
		}
		return drainedOurs(v)
	})
	v := l.views()["node2"]
	if !strings.HasPrefix(v.Reason, "gdrcheck: prolog: topology: ") || !strings.Contains(v.Reason, "ACS") || !strings.Contains(v.Reason, " action=") {
		t.Errorf("node2's reason %q: want gdrcheck: prolog: topology: <the ACS cause> action=...", v.Reason)
	}
	job, err := l.sc.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if job["Restarts"] == "0" || !strings.HasPrefix(job["JobState"], "PENDING") || strings.Contains(job["Reason"], "Held") {
		t.Errorf("job %s after its prolog failed: JobState=%s Restarts=%s Reason=%s, want requeued, pending, not held", id, job["JobState"], job["Restarts"], job["Reason"])
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Errorf("job %s's script ran on node2 although its prolog failed", id)
	}
	rec, ok, err := health.LoadProlog(filepath.Join(l.states, "node2"))
	if err != nil || !ok || rec.Job != id || rec.Reason != v.Reason {
		t.Errorf("node2's prolog record %+v (%v): want job %s and the reason Slurm now shows", rec, err, id)
	}
	t.Logf("prolog: job %s requeued (Restarts=%s), node2 drained %q (Slurm's \"Prolog error\" seen first: %v)", id, job["Restarts"], v.Reason, sawSlurms)
	if err := l.sc.Cancel(t.Context(), id); err != nil {
		t.Error(err)
	}
}
