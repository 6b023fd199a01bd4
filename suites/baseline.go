package suites

import (
	"fmt"
	"strings"

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
// --allow-missing-baseline it only notes it. Given the metrics the spec
// measured, it fails the same way when the matched profile states none
// of them: a profile that matches but compares nothing judges nothing,
// and a spec it judged would pass whatever was measured. A failure, not
// a skip: the suite was selected to compare, and a skip exits 0.
func RequireBaseline(metrics ...string) {
	c := Current()
	if c.Baseline == nil && c.BaselineUnknowable {
		CannotRun(baselineAbsence(c))
	}
	if c.Baseline == nil && c.Config.AllowMissingBaseline {
		Note("not compared: %s", baselineAbsence(c))
		return
	}
	gomega.Expect(c).To(HaveMatchedBaseline())
	if len(metrics) == 0 {
		return
	}
	var missing []string
	for _, m := range metrics {
		if _, ok := c.Baseline.Metric(m); !ok {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		return
	}
	why := fmt.Sprintf("baseline %s (%s) states none of %s, so nothing measured here was compared", c.Baseline.Profile.Name, baselineFile(c.Baseline), strings.Join(missing, ", "))
	if len(missing) < len(metrics) {
		Note("not compared: baseline %s states no %s", c.Baseline.Profile.Name, strings.Join(missing, ", "))
		return
	}
	if c.Config.AllowMissingBaseline {
		Note("not compared: %s", why)
		return
	}
	gomega.Expect([]string{why + " (--allow-missing-baseline only reports)"}).To(HaveNoFindings())
}

func baselineFile(b *baseline.Baseline) string {
	if b.File == "" {
		return "recorded"
	}
	return b.File
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

// RecordRatio records a forced fallback's bandwidth over its direct
// run's (ratio_to_direct for subject), judged against limit where the
// limit is required; where it is not, the ratio is information and
// unjudged says why. The negative suite (NCCL) and the mpi suite (UCX)
// judge their fallbacks alike.
func RecordRatio(subject string, ratio, limit float64, required bool, unjudged string) {
	m := results.Metric{Name: "ratio_to_direct", Value: ratio, Subject: subject, Baseline: &limit, Verdict: "pass"}
	switch {
	case !required:
		m.Baseline, m.Verdict = nil, "info"
		Note("%s", unjudged)
	case ratio >= limit:
		m.Verdict = "fail"
	}
	Record(m)
}
