package suites

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gdrcheck/gdrcheck/harness/node"
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
// calls it before each. Every spec that can fail calls it first thing:
// a failure without an action is a bug a test catches. Given no
// entities, a gpu, nic, port or link remedy names those of the node's
// devices the failure message names (entitiesIn), and becomes the
// node's where it names none.
func Remedy(a results.Action, s results.Scope, entities ...string) {
	declare(NewRemedy(a, s, entities...))
}

func declare(r results.Remedy) {
	ginkgo.AddReportEntry(RemedyEntry, r, ginkgo.ReportEntryVisibilityNever)
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

// cannotRunRemedy is what every spec that could not run here asks,
// whatever it declared for its failures: gdrcheck could not judge, so run it again where it can
// (with the tool, the permission or the source it lacked). A node is not
// taken out for gdrcheck's own failure.
var cannotRunRemedy = results.Remedy{Action: results.ActionRerun, Scope: results.ScopeNode}

// remedyOf is what to do about a spec that failed or could not run: for
// a failure the last remedy it declared (none where it declared none,
// which tests catch), for a spec that could not run cannotRunRemedy,
// whatever it declared for its failures.
func remedyOf(sp results.Spec, entries []types.ReportEntry, ev *node.Evidence) results.Remedy {
	if !sp.Failed() {
		return cannotRunRemedy
	}
	var r results.Remedy
	for _, e := range entries {
		if v, ok := e.Value.GetRawValue().(results.Remedy); ok && e.Name == RemedyEntry {
			r = v
		}
	}
	if r.Entity != "" || r.Action == "" {
		return r
	}
	switch r.Scope {
	case results.ScopeGPU, results.ScopeNIC, results.ScopePort, results.ScopeLink:
		r.Entity = strings.Join(entitiesIn(sp.Message, deviceNames(ev, r.Scope)), ",")
		if r.Entity == "" {
			r.Scope = results.ScopeNode
		}
	}
	return r
}

// deviceName is how a failure message names a device (text), and the
// entity that stands for it.
type deviceName struct{ text, entity string }

// deviceNames are the names of the node's devices of a scope: a GPU by
// its bus id, also without the function as the kernel log writes it
// ("PCI:0000:39:00"); a NIC by its name or bus id; a port as the specs
// write it ("mlx5_3 port 1") or as its entity ("mlx5_3/1"); a link by
// the GPU or NIC at its end.
func deviceNames(ev *node.Evidence, s results.Scope) []deviceName {
	if ev == nil {
		return nil
	}
	var out []deviceName
	gpus := func() {
		for _, g := range ev.GPUs {
			out = append(out, deviceName{g.BusID, g.BusID})
			if i := strings.LastIndexByte(g.BusID, '.'); i > 0 {
				out = append(out, deviceName{g.BusID[:i], g.BusID})
			}
		}
	}
	nics := func() {
		for _, n := range ev.NICs {
			out = append(out, deviceName{n.Name, n.Name})
			if n.BusID != "" {
				out = append(out, deviceName{n.BusID, n.Name})
			}
		}
	}
	switch s {
	case results.ScopeGPU:
		gpus()
	case results.ScopeNIC:
		nics()
	case results.ScopeLink:
		gpus()
		nics()
	case results.ScopePort:
		for _, n := range ev.NICs {
			for _, p := range n.Ports {
				e := fmt.Sprintf("%s/%d", n.Name, p.Port)
				out = append(out, deviceName{fmt.Sprintf("%s port %d", n.Name, p.Port), e}, deviceName{e, e})
			}
		}
	}
	return out
}

// entitiesIn is the entities of the names that msg holds as whole words
// (mlx5_1 is not in "mlx5_10"), each once, in the order of names. msg is
// gdrcheck's own failure message; only names read from the evidence are
// looked for in it, so nothing of the message becomes an entity.
func entitiesIn(msg string, names []deviceName) []string {
	var out []string
	for _, n := range names {
		if n.text != "" && !slices.Contains(out, n.entity) && holdsWord(msg, n.text) {
			out = append(out, n.entity)
		}
	}
	return out
}

func holdsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(w)
		if (at == 0 || !wordByte(s[at-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		i = at + 1
	}
}

func wordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
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
