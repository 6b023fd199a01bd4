package health

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	sh "github.com/gdrcheck/gdrcheck/suites/health"
)

func TestAFailedPrologsRecordReplacesSlurmsPrologErrorAndNothingElse(t *testing.T) {
	dir := t.TempDir()
	drainedAt := time.Date(2026, 12, 4, 1, 0, 30, 0, time.Local)
	f := sh.Finding{Check: sh.CheckProlog, State: sh.StateUnhealthy, Cause: "kernel: no GPUDirect peer-memory mechanism works", Action: results.ActionReloadDriver}
	rec := PrologRecord{At: drainedAt.Add(-2 * time.Second), Job: "7", Node: "node3", Exit: results.ExitFailed, Reason: DrainReason(f)}
	if err := StoreProlog(context.Background(), dir, rec, nil); err != nil {
		t.Fatal(err)
	}
	view := func(state, reason string) slurm.NodeView {
		return slurm.ViewOf(slurm.Record{"NodeName": "node3", "State": state, "Reason": reason})
	}
	stamp := " [root@" + drainedAt.Format("2006-01-02T15:04:05") + "]"
	now := drainedAt.Add(5 * time.Minute)
	for _, c := range []struct {
		name string
		self slurm.NodeView
		now  time.Time
		want bool
	}{
		{"drained by slurmctld for the prolog", view("IDLE+DRAIN", "Prolog error"+stamp), now, true},
		{"draining with a job still on it", view("MIXED+DRAIN", "Prolog error"+stamp), now, true},
		{"another reason", view("IDLE+DRAIN", "bad DIMM"+stamp), now, false},
		{"another of gdrcheck's reasons", view("IDLE+DRAIN", "gdrcheck: peer-memory: x action=REBOOT"+stamp), now, false},
		{"not drained", view("IDLE", ""), now, false},
		{"down as well", view("DOWN+DRAIN", "Prolog error"+stamp), now, false},
		{"another node", slurm.ViewOf(slurm.Record{"NodeName": "node4", "State": "IDLE+DRAIN", "Reason": "Prolog error" + stamp}), now, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, ok := prologDrain(dir, c.self, sh.Verdict{State: sh.StateStale}, c.now)
			if ok != c.want {
				t.Fatalf("prologDrain = %v (%+v), want %v", ok, d, c.want)
			}
			if ok && (d.Op != OpReason || strings.Join(d.Fields, " ") != "State=DRAIN Reason="+rec.Reason) {
				t.Errorf("decision %+v: want the drain kept with reason %q", d, rec.Reason)
			}
		})
	}
	// A prolog record from well before the drain explains nothing: it
	// belongs to a drain someone has resumed since.
	old := view("IDLE+DRAIN", "Prolog error [root@"+drainedAt.Add(2*time.Hour).Format("2006-01-02T15:04:05")+"]")
	if d, ok := prologDrain(dir, old, sh.Verdict{}, now.Add(2*time.Hour)); ok {
		t.Errorf("an hour-old record replaced a later Prolog error: %+v", d)
	}
	// Once gdrcheck's, a prolog's drain stays until a person resumes it
	// (health cannot see the cause), unless health finds a fault itself.
	ours := view("IDLE+DRAIN", rec.Reason+stamp)
	if d, ok := prologDrain(dir, ours, sh.Verdict{State: sh.StateHealthy}, now); !ok || d.Op != OpNone {
		t.Errorf("a healthy run on the prolog's drain: %v %+v, want it held (none)", ok, d)
	}
	if _, ok := prologDrain(dir, ours, sh.Verdict{State: sh.StateUnhealthy, Findings: []sh.Finding{f}}, now); ok {
		t.Error("an unhealthy run on the prolog's drain did not go to decide")
	}
	if !strings.HasPrefix(rec.Reason, "gdrcheck: prolog: kernel: ") || !strings.HasSuffix(rec.Reason, " action=RELOAD_DRIVER") {
		t.Errorf("reason %q", rec.Reason)
	}
}
