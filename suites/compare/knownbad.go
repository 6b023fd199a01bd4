package compare

import (
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/knownbad"
)

// knownBad fails an upgrade that moved the node into a fail-level
// known-bad cell (suites/knownbad) it was not in before, naming the source
// and the fix; a warn-level cell, or one the node was in already, is
// noted, and so is a cell it left. be and ae are the nodes' evidence,
// nil where a run kept none: their facts stand in.
func knownBad(b, a results.Node, be, ae *node.Evidence) change {
	var c change
	was := map[string]bool{}
	before := knownbad.Match(knownbad.FromNode(b, be))
	for _, h := range before {
		was[h.Rule.ID] = true
	}
	now := map[string]bool{}
	for _, h := range knownbad.Match(knownbad.FromNode(a, ae)) {
		now[h.Rule.ID] = true
		switch {
		case was[h.Rule.ID]:
			c.note("still in a known-bad combination, as before: %s", h)
		case h.Rule.Severity == knownbad.Fail:
			c.regress("moved into a known-bad combination: %s", h)
		default:
			c.note("moved into a known-bad combination (%s): %s", h.Rule.Severity, h)
		}
	}
	for _, h := range before {
		if !now[h.Rule.ID] {
			c.note("left the known-bad combination %s (%s)", h.Rule.ID, h.Rule.Source)
		}
	}
	return c
}
