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
	gomega.Expect(Evidence()).To(HaveCollectedEvidence())
})
