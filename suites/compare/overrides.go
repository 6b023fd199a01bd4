package compare

import (
	"fmt"
	"slices"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites/overrides"
)

// inherited compares the NCCL, UCX and MCA settings a job on the node
// inherits (each run's evidence keeps them), by name, each judged on its
// own run's node by the override audit (suites/overrides). A setting that
// breaks the direct path after and did not before is a regression: added
// (NCCL_NET_GDR_LEVEL=LOC appearing in /etc/nccl.conf), changed, or
// unchanged on a node that changed under it. Every other change is noted,
// and so is a breaking setting removed. A file the job reads that became
// unreadable is a regression too: the audit fails on it.
func inherited(b, a *node.Evidence) change {
	var c change
	was, now := effective(b), effective(a)
	for _, j := range now {
		old, had := find(was, j)
		switch {
		case !had && j.Verdict == overrides.Breaks:
			c.regress("%s: unset -> %s (%s): %s", label(j), j.Value, j.Where(), j.Why)
		case !had:
			c.note("%s: unset -> %s (%s)", label(j), j.Value, j.Where())
		case old.Value != j.Value || old.Where() != j.Where():
			move := fmt.Sprintf("%s: %s -> %s (%s)", label(j), old.Value, j.Value, fromTo(old, j))
			switch {
			case j.Verdict == overrides.Breaks && old.Verdict != overrides.Breaks:
				c.regress("%s: %s", move, j.Why)
			case j.Verdict == overrides.Breaks:
				c.note("%s, and still breaks the direct path: %s", move, j.Why)
			default:
				c.note("%s", move)
			}
		case j.Verdict == overrides.Breaks && old.Verdict != overrides.Breaks:
			c.regress("%s=%s (%s) breaks the direct path on this node now: %s", label(j), j.Value, j.Where(), j.Why)
		case old.Verdict == overrides.Breaks && j.Verdict != overrides.Breaks:
			c.note("%s=%s (%s) fits this node now", label(j), j.Value, j.Where())
		}
	}
	for _, old := range was {
		if _, kept := find(now, old); !kept {
			gone := fmt.Sprintf("%s: %s -> unset (was %s)", label(old), old.Value, old.Where())
			if old.Verdict == overrides.Breaks {
				gone += ", which broke the direct path"
			}
			c.note("%s", gone)
		}
	}
	var before []string
	if b.Overrides != nil {
		before = b.Overrides.Unreadable
	}
	if a.Overrides != nil {
		for _, u := range a.Overrides.Unreadable {
			if !slices.Contains(before, u) {
				c.regress("cannot read %s: a job would still read it", u)
			}
		}
	}
	return c
}

// effective are the settings a job applies: the shadowed ones aside.
func effective(ev *node.Evidence) []overrides.Judged {
	var out []overrides.Judged
	for _, j := range overrides.Judge(ev) {
		if j.Verdict != overrides.Shadowed {
			out = append(out, j)
		}
	}
	return out
}

// find is the setting of js of j's name and kind (an MCA parameter and an
// environment variable never share a name space).
func find(js []overrides.Judged, j overrides.Judged) (overrides.Judged, bool) {
	for _, x := range js {
		if x.Name == j.Name && x.MCA == j.MCA {
			return x, true
		}
	}
	return overrides.Judged{}, false
}

func label(j overrides.Judged) string {
	if j.MCA {
		return "MCA " + j.Name
	}
	return j.Name
}

func fromTo(old, now overrides.Judged) string {
	if old.Where() == now.Where() {
		return now.Where()
	}
	return old.Where() + " -> " + now.Where()
}
