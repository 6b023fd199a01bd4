package health

import (
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	sh "github.com/gdrcheck/gdrcheck/suites/health"
)

var (
	now     = time.Date(2026, 12, 4, 1, 0, 0, 0, time.Local)
	policy  = Policy{ResumeAfter: 2, BreakerPercent: 20, BreakerWindow: time.Hour}
	portBad = sh.Finding{Check: sh.CheckRailPort, State: sh.StateUnhealthy, Cause: "mlx5_0 port 1 is DOWN/Disabled; want ACTIVE/LinkUp", Action: results.ActionCheckCable, Scope: results.ScopePort, Entity: "mlx5_0/1"}
	bad     = sh.Verdict{State: sh.StateUnhealthy, Action: results.ActionCheckCable, Findings: []sh.Finding{portBad}}
	good    = sh.Verdict{State: sh.StateHealthy, Action: results.ActionNone}
	stale   = sh.Verdict{State: sh.StateStale, Action: results.ActionRerun, Findings: []sh.Finding{{Check: sh.CheckDeep, State: sh.StateStale, Action: results.ActionRerun}}}
	unknown = sh.Verdict{State: sh.StateUnevaluable, Action: results.ActionRerun, Findings: []sh.Finding{{Check: sh.CheckEvaluate, State: sh.StateUnevaluable, Action: results.ActionRerun}}}
	badWhy  = DrainReason(portBad)
)

// view is a node as `scontrol show node -o` would show it.
func view(name, state, reason string, at time.Time) slurm.NodeView {
	line := "NodeName=" + name + " State=" + state + " Partitions=gpu Comment=(null) Extra=(null) Reason=" + reason
	if reason == "" {
		line = strings.TrimSuffix(line, " Reason=")
	} else if !at.IsZero() {
		line += " [root@" + at.Format("2006-01-02T15:04:05") + "]"
	}
	return slurm.ViewOf(slurm.ParseRecords(line)[0])
}

// cluster is ten nodes of partition gpu, the first self.
func cluster(self slurm.NodeView, others ...slurm.NodeView) []slurm.NodeView {
	all := []slurm.NodeView{self}
	all = append(all, others...)
	for i := len(all); i < 10; i++ {
		all = append(all, view("n"+string(rune('a'+i)), "IDLE", "", time.Time{}))
	}
	return all
}

func TestDecideFollowsNHCsEtiquette(t *testing.T) {
	ours := view("n1", "IDLE+DRAIN", badWhy, now.Add(-time.Minute))
	for _, c := range []struct {
		name    string
		v       sh.Verdict
		self    slurm.NodeView
		st      State
		op      string
		fields  string
		whyPart string
	}{
		{"unhealthy idle node: drain", bad, view("n1", "IDLE", "", time.Time{}), State{}, OpDrain, "State=DRAIN Reason=" + badWhy + ` Extra={"gdr":"failed","gdr_check":"rail-port"}`, "draining"},
		{"mixed node with jobs: drain (DRAIN lets them finish)", bad, view("n1", "MIXED", "", time.Time{}), State{}, OpDrain, "State=DRAIN Reason=" + badWhy + ` Extra={"gdr":"failed","gdr_check":"rail-port"}`, "draining"},
		{"already drained by gdrcheck, same cause: no call", bad, ours, State{Drained: badWhy}, OpNone, "", "already drained by gdrcheck"},
		{"drained by gdrcheck, same check and action, other numbers: no call", bad, view("n1", "IDLE+DRAIN", "gdrcheck: rail-port: mlx5_0 port 1 runs at 200 Gb/s action=CHECK_CABLE", now), State{}, OpNone, "", "already drained by gdrcheck"},
		{"drained by gdrcheck, new cause: new reason", bad, view("n1", "IDLE+DRAIN", "gdrcheck: xid: Xid 79 action=REBOOT", now), State{}, OpReason, "State=DRAIN Reason=" + badWhy + ` Extra={"gdr":"failed","gdr_check":"rail-port"}`, "verdict changed"},
		{"resumed by a person after our drain: leave it", bad, view("n1", "IDLE", "", time.Time{}), State{Drained: badWhy}, OpNone, "", "resumed by someone"},
		{"drained by someone else: untouched", bad, view("n1", "IDLE+DRAIN", "bad DIMM ticket 123", now), State{}, OpNone, "", "drained by someone else"},
		{"drained with no reason: untouched", bad, view("n1", "IDLE+DRAIN", "", time.Time{}), State{}, OpNone, "", "no reason"},
		{"down: untouched", bad, view("n1", "DOWN", "Not responding", now), State{}, OpNone, "", "DOWN"},
		{"down and not responding (old form): untouched", good, view("n1", "DOWN*", "gdrcheck: x action=REBOOT", now), State{HealthyRuns: 5}, OpNone, "", "left alone"},
		{"maint: untouched", bad, view("n1", "IDLE+MAINT+RESERVED", "", time.Time{}), State{}, OpNone, "", "MAINT"},
		{"reserved: untouched", bad, view("n1", "IDLE+RESERVED", "", time.Time{}), State{}, OpNone, "", "RESERVED"},
		{"pending reboot: untouched", good, view("n1", "IDLE+DRAIN+REBOOT_REQUESTED", "gdrcheck: x action=REBOOT", now), State{HealthyRuns: 5}, OpNone, "", "left alone"},
		{"unevaluable: fail open", unknown, view("n1", "IDLE", "", time.Time{}), State{}, OpNone, "", "fail open"},
		{"unevaluable on our drain: no resume", unknown, ours, State{HealthyRuns: 9}, OpNone, "", "fail open"},
		{"healthy once of two: wait", good, ours, State{HealthyRuns: 1}, OpNone, "", "1 of the 2"},
		{"healthy twice: resume", good, ours, State{HealthyRuns: 2}, OpResume, `State=RESUME Extra={"gdr":"proven","gdr_at":"2026-12-01"}`, "resuming"},
		{"stale deep counts as cleared: resume, unproven", stale, ours, State{HealthyRuns: 2}, OpResume, `State=RESUME Extra={"gdr":"unproven"}`, "resuming"},
		{"healthy, someone else's drain: untouched", good, view("n1", "IDLE+DRAIN", "NHC: check_fs_mount", now), State{HealthyRuns: 9}, OpNone, "", "someone else"},
		{"healthy idle: publish the good state", good, view("n1", "IDLE", "", time.Time{}), State{HealthyRuns: 1}, OpPublish, `Extra={"gdr":"proven","gdr_at":"2026-12-01"}`, "publishing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := goodState(Outcome{Verdict: c.v, Deep: sh.DeepState{At: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}})
			d := decide(c.v, c.self, cluster(c.self), c.st, policy, now, g)
			if d.Op != c.op || strings.Join(d.Fields, " ") != c.fields || !strings.Contains(d.Why, c.whyPart) {
				t.Fatalf("decision %+v\nwant op %s fields %q why ~%q", d, c.op, c.fields, c.whyPart)
			}
		})
	}
}

// TestBreakerCountsOurRecentDrainsInThePartition: 20 % of ten nodes is
// two; drains by others, outside the window, or in another partition do
// not count, and a drain without Slurm's stamp counts, to be safe.
func TestBreakerCountsOurRecentDrainsInThePartition(t *testing.T) {
	self := view("n1", "IDLE", "", time.Time{})
	ourDrain := func(name string, ago time.Duration) slurm.NodeView {
		return view(name, "IDLE+DRAIN", "gdrcheck: xid: Xid 79 action=REBOOT", now.Add(-ago))
	}
	for _, c := range []struct {
		name   string
		others []slurm.NodeView
		held   bool
	}{
		{"none drained", nil, false},
		{"one of two allowed", []slurm.NodeView{ourDrain("n2", time.Minute)}, false},
		{"two: held", []slurm.NodeView{ourDrain("n2", time.Minute), ourDrain("n3", 50*time.Minute)}, true},
		{"one outside the window", []slurm.NodeView{ourDrain("n2", time.Minute), ourDrain("n3", 2*time.Hour)}, false},
		{"someone else's drain does not count", []slurm.NodeView{ourDrain("n2", time.Minute), view("n3", "IDLE+DRAIN", "disk", now)}, false},
		{"no stamp counts", []slurm.NodeView{ourDrain("n2", time.Minute), view("n3", "IDLE+DRAIN", "gdrcheck: x action=REBOOT", time.Time{})}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := decide(bad, self, cluster(self, c.others...), State{}, policy, now, "")
			if held := d.Op == OpHeld; held != c.held {
				t.Fatalf("decision %+v, held %v", d, c.held)
			}
			if c.held && (len(d.Fields) != 0 || !strings.Contains(d.Breaker, "partition gpu has 2 of 10 nodes drained by gdrcheck")) {
				t.Errorf("held decision %+v: want no call and the breaker named", d)
			}
		})
	}
	other := view("m1", "IDLE+DRAIN", "gdrcheck: x action=REBOOT", now)
	other.Partitions = []string{"cpu"}
	if d := decide(bad, self, append(cluster(self, ourDrain("n2", time.Minute)), other), State{}, policy, now, ""); d.Op != OpDrain {
		t.Errorf("a drain in another partition counted: %+v", d)
	}
	zero := policy
	zero.BreakerPercent = 0
	if d := decide(bad, self, cluster(self), State{}, zero, now, ""); d.Op != OpHeld {
		t.Errorf("breaker 0 %% drained: %+v", d)
	}
	small := cluster(self)[:3]
	if d := decide(bad, self, small, State{}, Policy{ResumeAfter: 1, BreakerPercent: 10, BreakerWindow: time.Hour}, now, ""); d.Op != OpDrain {
		t.Errorf("10 %% of 3 nodes allows none: %+v (want at least one)", d)
	}
}

func TestDrainReasonIsShortOneLineAndKeepsTheAction(t *testing.T) {
	f := portBad
	f.Cause = strings.Repeat("x", 300) + "\n\"NCCL_IB_HCA=mlx5\" [evil]"
	r := DrainReason(f)
	if len(r) > maxReason || !strings.HasPrefix(r, "gdrcheck: rail-port: ") || !strings.HasSuffix(r, " action=CHECK_CABLE") {
		t.Errorf("reason %q (%d bytes)", r, len(r))
	}
	f.Cause = "NCCL_IB_HCA=mlx5 \"quoted\"\n[x]"
	r = DrainReason(f)
	if strings.ContainsAny(strings.TrimSuffix(r, " action=CHECK_CABLE"), "=\"\n[]") {
		t.Errorf("reason %q keeps a separator", r)
	}
	// scontrol's parser must read it back whole, as Decide compares it.
	v := view("n1", "IDLE+DRAIN", r, now)
	if v.Reason != r || !v.Ours() {
		t.Errorf("read back %q, wrote %q", v.Reason, r)
	}
}

func TestPublishLeavesSomeoneElsesFieldAlone(t *testing.T) {
	v := view("n1", "IDLE", "", time.Time{})
	v.Extra = `{"rack":12}`
	if fs := publish(v, `{"gdr":"unproven"}`); len(fs) != 0 {
		t.Errorf("overwrote Extra %q: %v", v.Extra, fs)
	}
	v.Extra = `{"gdr":"unproven"}`
	if fs := publish(v, `{"gdr":"unproven"}`); len(fs) != 0 {
		t.Errorf("rewrote an unchanged value: %v", fs)
	}
	v = slurm.ViewOf(slurm.ParseRecords("NodeName=n1 State=IDLE Comment=(null)")[0])
	if fs := publish(v, `{"gdr":"unproven"}`); strings.Join(fs, " ") != `Comment={"gdr":"unproven"}` {
		t.Errorf("no Extra: %v, want Comment", fs)
	}
	v = slurm.ViewOf(slurm.ParseRecords("NodeName=n1 State=IDLE")[0])
	if fs := publish(v, `{"gdr":"unproven"}`); len(fs) != 0 {
		t.Errorf("a Slurm without Extra or Comment: %v", fs)
	}
}
