package results

import "sort"

// Skip kinds (Spec.SkipKind): set by the spec that skips, in suites/.
const (
	// SkipNotApplicable: the check does not apply to this node's shape
	// (one GPU has no intra-node path, no NICs have no rails) or to what
	// the operator asked (no --expect). The verdict is unaffected.
	SkipNotApplicable = "not-applicable"
	// SkipCannotRun: the check applies but could not run here (a tool
	// missing, no permission, a library unusable); its message says what
	// to install or which flag to set. A suite left with nothing else
	// cannot run here, and the run exits 2.
	SkipCannotRun = "cannot-run"
)

// Suite statuses, as the tables print them.
const (
	SuitePass = "PASS"
	SuiteFail = "FAIL"
	SuiteSkip = "SKIP" // every spec skipped: nothing was proven
)

// Status is FAIL when a spec failed, SKIP when every spec skipped (or the
// suite has none), else PASS.
func (s Suite) Status() string {
	c := s.Counts()
	switch {
	case c.Failed > 0:
		return SuiteFail
	case c.Passed == 0:
		return SuiteSkip
	}
	return SuitePass
}

// CannotRun says the suite proved nothing because it could not run here:
// no spec passed or failed, and one skipped as SkipCannotRun.
func (s Suite) CannotRun() bool {
	if s.Status() != SuiteSkip {
		return false
	}
	for _, sp := range s.Specs {
		if sp.SkipKind == SkipCannotRun {
			return true
		}
	}
	return false
}

// Unrunnable is a suite that could not run on a node, and why.
type Unrunnable struct {
	Node, Suite string
	Reasons     []string // its distinct SkipCannotRun messages, sorted
}

// CannotRun lists every evaluated node's suites that could not run here,
// in node and suite order.
func (r *Results) CannotRun() []Unrunnable {
	var out []Unrunnable
	for _, n := range r.Nodes {
		if n.Status != NodeEvaluated {
			continue
		}
		for _, s := range n.Suites {
			if !s.CannotRun() {
				continue
			}
			seen := map[string]bool{}
			u := Unrunnable{Node: n.Name, Suite: s.Name}
			for _, sp := range s.Specs {
				if sp.SkipKind == SkipCannotRun && !seen[sp.Message] {
					seen[sp.Message] = true
					u.Reasons = append(u.Reasons, sp.Message)
				}
			}
			sort.Strings(u.Reasons)
			out = append(out, u)
		}
	}
	return out
}

// SkipReason is one distinct reason specs skipped for, with how many and
// in which suites.
type SkipReason struct {
	Kind, Message string
	Suites        []string // in the order first met
	Count         int
}

// SkipReasons groups a node's skipped specs by kind and message: one
// line per reason, could-not-run ones first, each in the order first met.
func (n Node) SkipReasons() []SkipReason {
	var out []SkipReason
	at := map[[2]string]int{}
	for _, s := range n.Suites {
		for _, sp := range s.Specs {
			if sp.State != StateSkipped && sp.State != StatePending {
				continue
			}
			k := [2]string{sp.SkipKind, sp.Message}
			i, ok := at[k]
			if !ok {
				i = len(out)
				at[k] = i
				out = append(out, SkipReason{Kind: sp.SkipKind, Message: sp.Message})
			}
			out[i].Count++
			if ss := out[i].Suites; len(ss) == 0 || ss[len(ss)-1] != s.Name {
				out[i].Suites = append(out[i].Suites, s.Name)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Kind == SkipCannotRun && out[j].Kind != SkipCannotRun
	})
	return out
}
