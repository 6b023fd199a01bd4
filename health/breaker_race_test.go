package health

import (
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/slurm"
)

func TestDrainsOfOneRoundPastTheBreakerAreUndoneInStampOrder(t *testing.T) {
	now := time.Date(2026, 12, 4, 1, 20, 0, 0, time.Local)
	at := func(d time.Duration) string { return " [root@" + now.Add(-d).Format("2006-01-02T15:04:05") + "]" }
	var all []slurm.NodeView
	add := func(name, state, reason string) {
		all = append(all, slurm.ViewOf(slurm.Record{"NodeName": name, "State": state, "Reason": reason, "Partitions": "gpu"}))
	}
	ours := "gdrcheck: peer-memory: none action=RELOAD_DRIVER"
	// Ten nodes, 20 %: two may be drained. node9 drained a minute ago;
	// node5..node8 all in one second, just now; an admin's node10 and
	// an old drain of gdrcheck's (node1, out of the window) do not count.
	for _, n := range []string{"node2", "node3", "node4"} {
		add(n, "IDLE", "")
	}
	add("node1", "IDLE+DRAIN", ours+at(3*time.Hour))
	for _, n := range []string{"node7", "node5", "node8", "node6"} {
		add(n, "IDLE+DRAIN", ours+at(5*time.Second))
	}
	add("node9", "IDLE+DRAIN", ours+at(time.Minute))
	add("node10", "IDLE+DRAIN", "bad DIMM"+at(time.Minute))
	p := Policy{BreakerPercent: 20, BreakerWindow: time.Hour, ResumeAfter: 2}
	want := map[string]bool{"node9": false, "node5": false, "node6": true, "node7": true, "node8": true, "node1": false, "node10": false, "node2": false}
	for _, self := range all {
		w, ok := want[self.Name]
		if !ok {
			continue
		}
		b := pastBreaker(self, all, p, now)
		if (b != "") != w {
			t.Errorf("%s: pastBreaker = %q, want undone %v", self.Name, b, w)
		}
		if w && !strings.Contains(b, "partition gpu had 5 of 10 nodes drained by gdrcheck within 1h0m0s at once (limit 20%: 2)") {
			t.Errorf("%s: %q does not name the breaker and its count", self.Name, b)
		}
	}
	// The decision of a node past it: its one call resumes it, naming the
	// breaker.
	var node7 slurm.NodeView
	for _, n := range all {
		if n.Name == "node7" {
			node7 = n
		}
	}
	d := decideBad(ours, node7, all, State{}, p, now, "")
	if d.Op != OpResume || d.Breaker == "" || strings.Join(d.Fields, " ") != "State=RESUME" {
		t.Errorf("node7's decision %+v: want a resume naming the breaker", d)
	}
	if pastBreaker(node7, all, Policy{BreakerPercent: 0, BreakerWindow: time.Hour}, now) != "" {
		t.Error("a breaker of 0 % undid a drain")
	}
}
