package suites

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// A node whose evidence could not be collected fails here, once, as a
// visible setup failure; every spec is then skipped rather than failing
// with a misleading message of its own.
var _ = ginkgo.BeforeSuite(func() {
	// An allocation-level run (scaling) has no node evidence.
	if Current().Evidence == nil {
		return
	}
	declare(evidenceRemedy(Evidence()))
	gomega.Expect(Evidence()).To(HaveCollectedEvidence())
})

// A node judged without one of its sources (NVML, libcuda, libibverbs
// could not be used) or with sources that disagree fails here, after the
// specs judged what the others answered: one case that names each error
// and its likely cause, where the specs that needed the source only skip.
// It comes after the specs because a failed BeforeSuite would skip them.
var _ = ginkgo.AfterSuite(func() {
	ev := Current().Evidence
	// The BeforeSuite said it already.
	if ev == nil || ev.Fatal() != nil {
		return
	}
	declare(evidenceRemedy(ev))
	gomega.Expect(ev).To(HaveCompleteEvidence())
})

// SkipWithout skips the running spec when source (node.SourceNVML...)
// could not be used, saying what it would have told: "BAR1 is known only
// to NVML, which could not be used: NVML: initialising: ...". The cause is
// told once, by the AfterSuite.
func SkipWithout(source, what string) {
	if p, ok := Evidence().Unusable(source); ok {
		CannotRun(what + ", which could not be used: " + p.Message)
	}
}

// A run stopped by a signal skips every spec it has not reached, so the
// report it still writes lists them all, each saying why it did not run.
var _ = ginkgo.BeforeEach(func() {
	if err := Current().Interrupted(); err != nil {
		CannotRun("not run: " + err.Error())
	}
})
