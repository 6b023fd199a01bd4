package kernel

import (
	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/gdrcheck/gdrcheck/suites"
	"github.com/gdrcheck/gdrcheck/suites/knownbad"
)

// BeOutsideKnownBadCells succeeds when a node's []knownbad.Hit holds no
// fail-level cell; warn-level ones are the spec's warnings. Its failure
// is "in a known-bad combination:" and the cell's sentence (source, the
// facts that put the node there, what breaks, the fix), in
// suites.HaveNoFindings' form where there are more. It lives with its one
// spec so the suites framework imports none of its areas.
func BeOutsideKnownBadCells() types.GomegaMatcher {
	return outsideKnownBad{gomega.WithTransform(knownBadFindings, suites.HaveNoFindings())}
}

// knownBadFindings is one finding per fail-level cell the node is in.
func knownBadFindings(hits []knownbad.Hit) []string {
	var out []string
	for _, h := range knownbad.Failing(hits) {
		out = append(out, "in a known-bad combination: "+h.String())
	}
	return out
}

// outsideKnownBad says what a negated expectation missed in the
// matcher's own words rather than HaveNoFindings'.
type outsideKnownBad struct{ types.GomegaMatcher }

func (outsideKnownBad) NegatedFailureMessage(any) string {
	return "expected a known-bad combination, found none"
}
