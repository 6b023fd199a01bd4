package suites

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/results"
)

// Compare compares a measured value with the matched baseline's metric at
// a message size (0 for none); false when no baseline matched or it has no
// such metric.
func Compare(metric string, value float64, size int64) (baseline.Comparison, bool) {
	b := Current().Baseline
	if b == nil {
		return baseline.Comparison{}, false
	}
	return b.Compare(metric, value, size)
}

// Profile names the matched baseline profile, or says none matched.
func Profile() string {
	if b := Current().Baseline; b != nil {
		return b.Profile.Name
	}
	return "none"
}

// RequireBaseline fails a comparing spec when no baseline matched the
// node, with the error naming the profile looked for; with
// --allow-missing-baseline it only notes it.
func RequireBaseline() {
	c := Current()
	if c.Baseline == nil && c.BaselineUnknowable {
		ginkgo.Skip(baselineAbsence(c))
	}
	if c.Baseline == nil && c.Config.AllowMissingBaseline {
		Note("not compared: %s", baselineAbsence(c))
		return
	}
	gomega.Expect(c).To(HaveMatchedBaseline())
}

// RatioLimit is the largest share of the direct bandwidth a forced
// fallback may keep and still count as detected, and whether that is
// required of it. The baseline's nccl.fallback.<mode>.ratio band (its
// expected value plus the tolerance; a hard limit where it has none)
// knows the hardware and always applies. Without it the configured
// default applies only where the fallback cannot help costing bandwidth:
// off NVLink (a tenth of it at best over SHM or the network), and onto
// sockets. Off PCIe P2P, SHM or host-staged RDMA may cost little, so there
// the transport NCCL reports detects the fallback and the ratio is noted.
func RatioLimit(mode string, shape nccl.Shape) (limit float64, required bool) {
	if b := Current().Baseline; b != nil {
		if c, ok := b.Compare(results.FallbackRatioMetric(mode), 0, 0); ok {
			return c.High, true
		}
	}
	limit = Current().Config.FallbackRatioLimit
	switch mode {
	case nccl.ModeIBDisabled.Name:
		return limit, true
	case nccl.ModeP2PDisabled.Name, nccl.ModeP2PSHMDisabled.Name:
		return limit, shape.NVLink
	}
	return limit, false
}
