package suites

import (
	"github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
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
	if c.Baseline == nil && c.Config.AllowMissingBaseline {
		Note("not compared: %s", baselineAbsence(c))
		return
	}
	gomega.Expect(c).To(HaveMatchedBaseline())
}

// RatioLimit is the largest share of the direct bandwidth a forced
// fallback may keep and still count as detected: the upper edge of the
// baseline's nccl.fallback.<mode>.ratio band (its expected value plus the
// tolerance; a hard limit where it has none), else the configured default.
func RatioLimit(mode string) float64 {
	if b := Current().Baseline; b != nil {
		if c, ok := b.Compare(results.FallbackRatioMetric(mode), 0, 0); ok {
			return c.High
		}
	}
	return Current().Config.FallbackRatioLimit
}
