package suites

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/results"
)

// CPUCost judges a forced fallback's host CPU per GB against the direct
// run's: staged through host memory or pushed through sockets, the same
// bytes cost the host more, so a fallback that costs no more than direct
// means the CPU measurement cannot see the path (a replay, a remote
// launcher) or the fallback did not happen. It returns the metric to
// record and the finding, if any; ok is false where either run's CPU per
// GB was not measured (results.CPUPerGB), which judges nothing.
func CPUCost(mode string, direct, forced float64, haveDirect, haveForced bool) (m results.Metric, finding string, ok bool) {
	if !haveDirect || !haveForced {
		return results.Metric{}, "", false
	}
	d := direct
	m = results.Metric{Name: results.CPUPerGBMetric, Value: forced, Unit: "s/GB", Subject: mode, Baseline: &d, Verdict: "pass"}
	if forced <= direct {
		m.Verdict = "fail"
		finding = fmt.Sprintf("%s cost %.4g CPU s/GB, no more than the direct run's %.4g: host CPU per byte does not tell this fallback from the direct path", mode, forced, direct)
	}
	return m, finding, true
}
