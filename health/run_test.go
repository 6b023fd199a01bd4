package health

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	sh "github.com/gdrcheck/gdrcheck/suites/health"
)

// fakeScontrol stands in for scontrol on PATH, as cmd/gdrcheck's tests'
// fakes do: `show node -o` prints $FAKE_NODES, every call is logged to
// $FAKE_LOG, and an update succeeds.
const fakeScontrol = `#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$1" in
show) cat "$FAKE_NODES" ;;
update) exit 0 ;;
*) echo "fake scontrol: $*" >&2; exit 1 ;;
esac
`

// fake is a fake Slurm for Run.
type fake struct {
	t          *testing.T
	nodes, log string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte(fakeScontrol), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fake{t: t, nodes: filepath.Join(bin, "nodes"), log: filepath.Join(bin, "log")}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_NODES", f.nodes)
	t.Setenv("FAKE_LOG", f.log)
	return f
}

// show sets what `scontrol show node -o` prints: lines of "name state
// reason", padded to ten nodes of partition gpu.
func (f *fake) show(lines ...string) {
	var b strings.Builder
	for i := 0; i < 10; i++ {
		name, state, reason := "n"+string(rune('0'+i)), "IDLE", "none"
		if i < len(lines) {
			parts := strings.SplitN(lines[i], " ", 3)
			name, state = parts[0], parts[1]
			if len(parts) == 3 {
				reason = parts[2] + " [root@" + time.Now().Add(-time.Minute).Format("2006-01-02T15:04:05") + "]"
			}
		}
		b.WriteString("NodeName=" + name + " Arch=x86_64 State=" + state + " Partitions=gpu Extra=(null) Comment=(null) Reason=" + reason + "\n")
	}
	if err := os.WriteFile(f.nodes, []byte(b.String()), 0o644); err != nil {
		f.t.Fatal(err)
	}
	os.Remove(f.log)
}

// updates are the update calls since the last show.
func (f *fake) updates() []string {
	b, _ := os.ReadFile(f.log)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, "update ") {
			out = append(out, l)
		}
	}
	return out
}

var trees = map[string]string{}

// tree is a fixture node unpacked once for the package's tests.
func tree(t testing.TB, name string) string {
	t.Helper()
	if d, ok := trees[name]; ok {
		return d
	}
	d, err := os.MkdirTemp("", "health-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := ttar.ExtractFile(filepath.Join("../fixtures/nodes", name+".ttar"), d); err != nil {
		t.Fatal(err)
	}
	trees[name] = d
	return d
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range trees {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

func opts(t *testing.T, root, state string) Options {
	return Options{HostRoot: root, StateDir: state, Node: "n0", Slurm: &slurm.Client{},
		Policy: Policy{ResumeAfter: 2, BreakerPercent: 20, BreakerWindow: time.Hour, Publish: true}}
}

// TestRunDrainsOnceAndResumesAfterN: the peer-memory fault drains the
// node with gdrcheck's reason in one call; the next run, finding it
// drained for that cause, makes none; the mended node is resumed only on
// the second healthy run.
func TestRunDrainsOnceAndResumesAfterN(t *testing.T) {
	f := newFake(t)
	state := t.TempDir()
	ctx := context.Background()
	f.show("n0 IDLE")
	out, err := Run(ctx, opts(t, tree(t, "h100x8-proprietary-no-peermem"), state))
	if err != nil {
		t.Fatal(err)
	}
	u := f.updates()
	if len(u) != 1 || !strings.Contains(u[0], "NodeName=n0 State=DRAIN Reason=gdrcheck: peer-memory: ") || !strings.Contains(u[0], "action=RELOAD_DRIVER") {
		t.Fatalf("updates %q: want one drain with gdrcheck's reason", u)
	}
	if out.Slurm.Op != OpDrain || !out.Applied || out.ExitCode() != results.ExitFailed {
		t.Errorf("outcome %+v", out)
	}
	reason := DrainReason(mustWorst(t, out.Verdict))
	st, _, _ := LoadState(state)
	if st.Drained != reason || st.HealthyRuns != 0 {
		t.Errorf("state drained %q healthy %d", st.Drained, st.HealthyRuns)
	}

	f.show("n0 IDLE+DRAIN " + reason)
	if _, err := Run(ctx, opts(t, tree(t, "h100x8-proprietary-no-peermem"), state)); err != nil {
		t.Fatal(err)
	}
	if u := f.updates(); len(u) != 0 {
		t.Fatalf("an unchanged verdict called scontrol: %q", u)
	}

	healthy := tree(t, "h100x8-proprietary-peermem")
	f.show("n0 IDLE+DRAIN " + reason)
	out, err = Run(ctx, opts(t, healthy, state))
	if err != nil {
		t.Fatal(err)
	}
	if u := f.updates(); len(u) != 0 || out.Slurm.Op != OpNone {
		t.Fatalf("resumed after one healthy run of two: %q %+v", u, out.Slurm)
	}
	out, err = Run(ctx, opts(t, healthy, state))
	if err != nil {
		t.Fatal(err)
	}
	if u := f.updates(); len(u) != 1 || !strings.HasPrefix(u[0], "update NodeName=n0 State=RESUME") || out.Slurm.Op != OpResume {
		t.Fatalf("second healthy run: updates %q, decision %+v", u, out.Slurm)
	}
	if st, _, _ := LoadState(state); st.Drained != "" || st.HealthyRuns != 2 {
		t.Errorf("after the resume: drained %q healthy %d", st.Drained, st.HealthyRuns)
	}
}

func mustWorst(t *testing.T, v sh.Verdict) sh.Finding {
	t.Helper()
	w, ok := v.Worst()
	if !ok {
		t.Fatalf("no unhealthy finding: %s", v.Summary())
	}
	return w
}

func TestRunLeavesSomeoneElsesDrainAlone(t *testing.T) {
	f := newFake(t)
	for _, node := range []string{"h100x8-proprietary-no-peermem", "h100x8-proprietary-peermem"} {
		f.show("n0 IDLE+DRAIN replacing PSU, ticket 4711")
		out, err := Run(context.Background(), opts(t, tree(t, node), t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if u := f.updates(); len(u) != 0 || !strings.Contains(out.Slurm.Why, "someone else") {
			t.Errorf("%s: updates %q, why %q", node, u, out.Slurm.Why)
		}
	}
}

// TestRunHoldsTheDrainPastTheBreaker: two of ten already drained by
// gdrcheck within the hour and a 20 % breaker: the bad node is reported,
// not drained, and the breaker is named.
func TestRunHoldsTheDrainPastTheBreaker(t *testing.T) {
	f := newFake(t)
	f.show("n0 IDLE", "n1 IDLE+DRAIN gdrcheck: xid: Xid 79 action=REBOOT", "n2 MIXED+DRAIN gdrcheck: rail-port: down action=CHECK_CABLE")
	out, err := Run(context.Background(), opts(t, tree(t, "h100x8-proprietary-no-peermem"), t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if u := f.updates(); len(u) != 0 {
		t.Fatalf("drained past the breaker: %q", u)
	}
	if out.Slurm.Op != OpHeld || !strings.Contains(out.Breaker(), "circuit breaker open: partition gpu has 2 of 10") {
		t.Errorf("decision %+v: want held, the breaker named", out.Slurm)
	}
	var b bytes.Buffer
	if err := reports.WriteHealthPrometheus(&b, out.Textfile(time.Now())); err != nil || !strings.Contains(b.String(), "breaker") {
		t.Errorf("textfile %q %v: want the breaker named", b.String(), err)
	}
}

// TestRunFailsOpen: gdrcheck's own failures change nothing in Slurm: a
// state directory it cannot write, NVML it cannot use, its deadline.
func TestRunFailsOpen(t *testing.T) {
	f := newFake(t)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	slow := func(ctx context.Context, root string) (gathered, error) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond)
		return gathered{}, nil
	}
	for _, c := range []struct {
		name, node, state string
		gather            func(context.Context, string) (gathered, error)
		want              string
	}{
		{"state directory unwritable", "h100x8-proprietary-no-peermem", filepath.Join(file, "state"), nil, "state directory"},
		{"NVML missing", "h100x8-nvml-version-mismatch", "", nil, "fail open"},
		{"deadline hit", "h100x8-proprietary-no-peermem", "", slow, "fail open"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.show("n0 IDLE")
			o := opts(t, tree(t, c.node), c.state)
			if o.StateDir == "" {
				o.StateDir = t.TempDir()
			}
			var stderr bytes.Buffer
			o.Stderr, o.gather, o.Deadline = &stderr, c.gather, 200*time.Millisecond
			if c.gather == nil {
				o.Deadline = 0
			}
			out, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if u := f.updates(); len(u) != 0 {
				t.Fatalf("changed Slurm: %q", u)
			}
			if out.ExitCode() != results.ExitUnevaluable || !strings.Contains(out.Slurm.Why+out.Failure, c.want) {
				t.Errorf("outcome exit %d why %q failure %q", out.ExitCode(), out.Slurm.Why, out.Failure)
			}
			if c.name == "state directory unwritable" && !strings.Contains(stderr.String(), "fail open") {
				t.Errorf("stderr %q does not say it failed open", stderr.String())
			}
			if c.name == "deadline hit" && !strings.Contains(out.Verdict.Summary(), "deadline") {
				t.Errorf("verdict %s does not name the deadline", out.Verdict.Summary())
			}
		})
	}
}

// TestRunKeepsReadingsForTheNextRun: the counters and Xids the next run
// compares with are in the state file, and an unevaluable run keeps the
// last ones rather than its own.
func TestRunKeepsReadingsForTheNextRun(t *testing.T) {
	state := t.TempDir()
	o := Options{HostRoot: tree(t, "h100x8-nvswitch-cx7-pix"), StateDir: state, Node: "n0"}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	st, ok, err := LoadState(state)
	if err != nil || !ok || st.Counters == nil || len(st.Counters.Ports) == 0 || st.HealthyRuns != 1 {
		t.Fatalf("state %v %v: counters %v healthy %d", ok, err, st.Counters, st.HealthyRuns)
	}
	o.gather = func(ctx context.Context, _ string) (gathered, error) { <-ctx.Done(); return gathered{}, nil }
	o.Deadline = 50 * time.Millisecond
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	st2, _, _ := LoadState(state)
	if st2.Counters == nil || len(st2.Counters.Ports) != len(st.Counters.Ports) || st2.HealthyRuns != 1 || st2.Failure == "" {
		t.Errorf("after an unevaluable run: counters %v healthy %d failure %q", st2.Counters != nil, st2.HealthyRuns, st2.Failure)
	}
}
