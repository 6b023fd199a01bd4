package suites

import (
	"github.com/onsi/ginkgo/v2"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

// Measurements returns the nccl-tests runs, skipping (or failing, when the
// operator asked for them) the spec where there are none.
func Measurements() *nccl.Measurements {
	c := Current()
	if c.NCCL != nil {
		return c.NCCL
	}
	why := "nccl-tests were not run"
	if c.NCCLErr != nil {
		why = c.NCCLErr.Error()
	}
	if c.Config.RequireNCCLTests {
		ginkgo.Fail(why)
	}
	ginkgo.Skip(why)
	return nil
}
