package suites

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// The runner calls ginkgo.RunSpecs with a testing.T of its own, outside
// `go test`, so nothing else tells Gomega where a failed expectation goes:
// it fails the running spec, at the line of the Expect.
func init() {
	gomega.RegisterFailHandler(ginkgo.Fail)
}
