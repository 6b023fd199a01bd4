package health

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/slurm"
	sh "github.com/gdrcheck/gdrcheck/suites/health"
)

// The etiquette of LBNL NHC's helpers (github.com/mej/nhc,
// helpers/node-mark-offline and helpers/node-mark-online, Slurm
// branch), point by point, as decide applies it:
//  1. offline: a node DOWN is never changed ("Not changing state of
//     down node"); neither is one in a state NHC does not handle (a
//     pending reboot, "@" in sinfo: REBOOT_REQUESTED/REBOOT_ISSUED).
//  2. offline: a node already drained (drain, drng, fail, maint) with no
//     note is left alone ("Already offline with no note set"); so is one
//     pending "Reboot ASAP".
//  3. offline: a note another party set is preserved. NHC re-drains
//     with the old note; gdrcheck goes further and does not touch the
//     node at all, so that the other party's evidence is all there is.
//  4. online: only a node whose note carries the leader ("NHC:", here
//     DrainPrefix) is resumed; no note, or another's, is "Down for
//     non-NHC reason" and stays.
//  5. online: a node already online is left alone; a pending reboot is
//     never cancelled by a resume.
//
// Beyond NHC (issue 33): MAINT and reserved nodes are never touched
// (an admin owns them for now); a drain or resume is one scontrol call
// at most, and only when the verdict changed; a resume waits for
// ResumeAfter consecutive healthy runs; and the breaker caps the drains.

// Policy is how the health loop may change Slurm.
type Policy struct {
	ResumeAfter    int           // consecutive healthy runs before a resume (>= 1)
	BreakerPercent float64       // at most this share of a partition drained by gdrcheck...
	BreakerWindow  time.Duration // ...within this window; 0 percent drains nothing
	Publish        bool          // publish the good state in Extra (or Comment)
}

// Defaults of the flags.
const (
	DefaultResumeAfter    = 3
	DefaultBreakerPercent = 10
	DefaultBreakerWindow  = time.Hour
)

// The operations a run may do in Slurm.
const (
	OpNone    = "none"
	OpDrain   = "drain"   // State=DRAIN Reason=...
	OpReason  = "reason"  // a node gdrcheck drained gets the new verdict's reason
	OpResume  = "resume"  // State=RESUME
	OpPublish = "publish" // the good state in Extra or Comment alone
	OpHeld    = "held"    // a drain the breaker held back
)

// Decision is what one run does in Slurm: Fields for one `scontrol
// update NodeName=<node>` call, none for OpNone and OpHeld.
type Decision struct {
	Op      string   `json:"op"`
	Fields  []string `json:"fields,omitempty"`
	Why     string   `json:"why"`
	Breaker string   `json:"breaker,omitempty"` // the breaker that held a drain, named
}

// untouchable are the flags NHC's rules and issue 33 leave alone.
var untouchable = []string{"DOWN", "MAINT", "RESERVED", "REBOOT_REQUESTED", "REBOOT_ISSUED", "NOT_RESPONDING",
	"POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "POWER_DOWN", "FUTURE", "FAIL", "FAILING"}

// maxReason keeps a drain reason short: Slurm stores it whole, but
// sinfo -R, sacctmgr and remediation regexes read its first columns.
const maxReason = 120

// DrainReason is "gdrcheck: <check>: <cause> action=<ACTION>", cut to
// maxReason with the action kept. The cause comes from the node: no
// newline, quote or "=" (a field separator to scontrol's parser) stays.
func DrainReason(f sh.Finding) string {
	head := slurm.DrainPrefix + " " + f.Check + ": "
	tail := " action=" + string(f.Action)
	cause := strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f || r == '"' || r == '\'':
			return ' '
		case r == '=':
			return ':'
		case r == '[' || r == ']':
			return '('
		}
		return r
	}, f.Cause)
	if room := maxReason - len(head) - len(tail); len(cause) > room {
		cause = strings.ToValidUTF8(cause[:max(room-3, 0)], "") + "..."
	}
	return head + strings.TrimSpace(cause) + tail
}

// decide picks the one Slurm operation of a run. v is this run's
// verdict, self the node as Slurm shows it, all every node (for the
// breaker), st the state with this run's HealthyRuns counted, and good
// the good-state value ("" publishes nothing).
func decide(v sh.Verdict, self slurm.NodeView, all []slurm.NodeView, st State, p Policy, now time.Time, good string) Decision {
	if v.State == sh.StateUnevaluable {
		return Decision{Op: OpNone, Why: "fail open: gdrcheck could not evaluate the node, so Slurm is left as it is"}
	}
	for _, f := range untouchable {
		if self.Has(f) {
			return Decision{Op: OpNone, Why: fmt.Sprintf("node is %s: left alone (NHC: never change a node that is down, pending reboot or an admin's)", strings.Join(self.Flags, "+"))}
		}
	}
	if self.Drained() && !self.Ours() {
		if self.Reason == "" {
			return Decision{Op: OpNone, Why: "drained with no reason: left alone (NHC: already offline with no note set)"}
		}
		return Decision{Op: OpNone, Why: "drained by someone else (" + clipWhy(self.Reason) + "): left alone"}
	}
	worst, bad := v.Worst()
	if bad {
		return decideBad(DrainReason(worst), self, all, st, p, now, good)
	}
	if self.Drained() {
		if st.HealthyRuns < p.ResumeAfter {
			return Decision{Op: OpNone, Why: fmt.Sprintf("cause cleared %d of the %d consecutive runs a resume waits for", st.HealthyRuns, p.ResumeAfter)}
		}
		fields := append([]string{"State=RESUME"}, publish(self, good)...)
		return Decision{Op: OpResume, Fields: fields, Why: fmt.Sprintf("cause cleared %d consecutive runs: resuming the node gdrcheck drained (%s)", st.HealthyRuns, clipWhy(self.Reason))}
	}
	if fs := publish(self, good); len(fs) > 0 {
		return Decision{Op: OpPublish, Fields: fs, Why: "publishing the good state " + good}
	}
	return Decision{Op: OpNone, Why: "healthy: nothing to change"}
}

// decideBad is decide for an unhealthy verdict with drain reason r; the
// call that drains also publishes the failed state.
func decideBad(r string, self slurm.NodeView, all []slurm.NodeView, st State, p Policy, now time.Time, good string) Decision {
	if self.Drained() {
		if b := pastBreaker(self, all, p, now); b != "" {
			return Decision{Op: OpResume, Fields: []string{"State=RESUME"}, Why: "undoing its own drain (" + r + "): " + b, Breaker: b}
		}
		if sameCause(self.Reason, r) {
			return Decision{Op: OpNone, Why: "already drained by gdrcheck for this cause"}
		}
		return Decision{Op: OpReason, Fields: append([]string{"State=DRAIN", "Reason=" + r}, publish(self, good)...), Why: "the verdict changed: new reason for the node gdrcheck drained"}
	}
	if st.Drained != "" && sameCause(st.Drained, r) {
		// Someone resumed the node gdrcheck drained for this very cause:
		// theirs is the later word until the verdict changes.
		return Decision{Op: OpNone, Why: "resumed by someone after gdrcheck drained it for this cause: drains again only when the verdict changes"}
	}
	if b := breaker(self, all, p, now); b != "" {
		return Decision{Op: OpHeld, Why: "would drain (" + r + ") but " + b, Breaker: b}
	}
	return Decision{Op: OpDrain, Fields: append([]string{"State=DRAIN", "Reason=" + r}, publish(self, good)...), Why: "unhealthy: draining"}
}

// sameCause says two of gdrcheck's reasons name the same check and
// action: the verdict has not changed, though the cause's numbers (a
// counter's delta, a time) may have, which is no reason for a call.
func sameCause(a, b string) bool {
	check := func(r string) string {
		r = strings.TrimPrefix(r, slurm.DrainPrefix+" ")
		c, _, _ := strings.Cut(r, ":")
		return c
	}
	action := func(r string) string {
		i := strings.LastIndex(r, " action=")
		if i < 0 {
			return ""
		}
		return r[i:]
	}
	return check(a) == check(b) && action(a) != "" && action(a) == action(b)
}

// breaker says why a new drain would pass the circuit breaker, "" when
// it would not: in each partition of the node, the nodes gdrcheck
// drained within the window (by their reason's prefix and Slurm's stamp;
// a reason without a stamp counts, to be safe) stay below BreakerPercent
// of the partition, rounded down but at least one node while it is
// above zero. A node in no partition counts against the whole cluster.
func breaker(self slurm.NodeView, all []slurm.NodeView, p Policy, now time.Time) string {
	parts := self.Partitions
	if len(parts) == 0 {
		parts = []string{""}
	}
	for _, part := range parts {
		total, ours := 0, 0
		for _, n := range all {
			if part != "" && !slices.Contains(n.Partitions, part) {
				continue
			}
			total++
			if n.Name != self.Name && n.Drained() && n.Ours() && (n.ReasonAt.IsZero() || now.Sub(n.ReasonAt) <= p.BreakerWindow) {
				ours++
			}
		}
		allowed := int(math.Floor(p.BreakerPercent / 100 * float64(total)))
		if p.BreakerPercent > 0 && allowed < 1 {
			allowed = 1
		}
		if ours >= allowed {
			name := part
			if name == "" {
				name = "(all nodes)"
			}
			return fmt.Sprintf("circuit breaker open: partition %s has %d of %d nodes drained by gdrcheck within %s (limit %g%%: %d)", name, ours, total, p.BreakerWindow, p.BreakerPercent, allowed)
		}
	}
	return ""
}

// publish is the field that sets the good state, where this Slurm shows
// Extra (else Comment), the field is empty or already gdrcheck's
// (GoodPrefix), and the value differs; none otherwise.
func publish(self slurm.NodeView, good string) []string {
	if good == "" {
		return nil
	}
	key, cur := "", ""
	switch {
	case self.HasExtra:
		key, cur = "Extra", self.Extra
	case self.HasComment:
		key, cur = "Comment", self.Comment
	default:
		return nil
	}
	if cur == good || (cur != "" && !strings.HasPrefix(cur, GoodPrefix)) {
		return nil
	}
	return []string{key + "=" + good}
}

// GoodPrefix starts the good state gdrcheck publishes:
// {"gdr":"proven","gdr_at":"2026-12-04"}. A field starting otherwise is
// someone else's and is left alone.
const GoodPrefix = `{"gdr":`

func clipWhy(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
