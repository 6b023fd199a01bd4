package suites

import (
	"github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

// AcrossNodes says what proves the path where one node cannot.
const AcrossNodes = "prove it across nodes with gdrcheck submit (or rehearse with gdrcheck run --suites scaling --emulate-nodes N)"

// Measurements returns the nccl-tests runs, skipping (or failing, when the
// operator asked for them) the spec where there are none.
func Measurements() *nccl.Measurements {
	c := Current()
	if c.NCCL != nil {
		return c.NCCL
	}
	if c.Config.RequireNCCLTests && !c.NCCLBlocked {
		gomega.Expect(c).To(HaveNCCLRuns())
	}
	CannotRun(ncclAbsence(c))
	return nil
}
