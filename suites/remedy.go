package suites

import (
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gdrcheck/gdrcheck/results"
)

// RemedyEntry is the report entry that carries what to do about a failing
// or unevaluable spec (results.Remedy) to the runner.
const RemedyEntry = "gdrcheck.remedy"

// Remedy says what remediation does if the running spec fails from here
// on: the action, its scope and the entities it names (bus ids, NICs,
// "mlx5_3/1"; none for a node-scoped action, which names the node). A
// spec calls it with the cause, before the expectation that states it;
// a later call replaces an earlier one, so a spec of several causes
// calls it before each. Every spec calls it at least once: a failure
// without an action is a bug a test catches.
func Remedy(a results.Action, s results.Scope, entities ...string) {
	ginkgo.AddReportEntry(RemedyEntry, NewRemedy(a, s, entities...), ginkgo.ReportEntryVisibilityNever)
}

// NewRemedy is a results.Remedy naming each entity once, in the order
// given: the plain judges (allocation, compare) build their specs'
// remedies with it.
func NewRemedy(a results.Action, s results.Scope, entities ...string) results.Remedy {
	var seen []string
	for _, e := range entities {
		if e != "" && !slices.Contains(seen, e) {
			seen = append(seen, e)
		}
	}
	return results.Remedy{Action: a, Scope: s, Entity: strings.Join(seen, ",")}
}

// cannotRunRemedy is what a spec that could not run here asks unless it
// said otherwise: gdrcheck could not judge, so run it again where it can
// (with the tool, the permission or the source it lacked). A node is not
// taken out for gdrcheck's own failure.
var cannotRunRemedy = results.Remedy{Action: results.ActionRerun, Scope: results.ScopeNode}

// remedyOf is what to do about a spec that failed or could not run: for
// a failure the last remedy it declared (none where it declared none,
// which tests catch), for a spec that could not run cannotRunRemedy,
// whatever it declared for its failures.
func remedyOf(sp results.Spec, entries []types.ReportEntry) results.Remedy {
	if !sp.Failed() {
		return cannotRunRemedy
	}
	var r results.Remedy
	for _, e := range entries {
		if v, ok := e.Value.GetRawValue().(results.Remedy); ok && e.Name == RemedyEntry {
			r = v
		}
	}
	return r
}

// Remedies gathers the remedy of each finding of a spec that finds
// several things wrong; Declare declares the most disruptive.
type Remedies struct{ rs []results.Remedy }

// Add is one finding's remedy: its action, the scope its cause lies in
// and the entities there.
func (r *Remedies) Add(a results.Action, s results.Scope, entities ...string) {
	r.rs = append(r.rs, NewRemedy(a, s, entities...))
}

// Declare declares (Remedy) the most disruptive action found, with the
// scope of its first finding and the entities of every finding of that
// action and scope; nothing where nothing was added.
func (r *Remedies) Declare() {
	if len(r.rs) == 0 {
		return
	}
	var as []results.Action
	for _, x := range r.rs {
		as = append(as, x.Action)
	}
	top := results.MostDisruptive(as...)
	var scope results.Scope
	var ents []string
	for _, x := range r.rs {
		if x.Action != top || (scope != "" && x.Scope != scope) {
			continue
		}
		scope = x.Scope
		if x.Entity != "" {
			ents = append(ents, strings.Split(x.Entity, ",")...)
		}
	}
	Remedy(top, scope, ents...)
}
