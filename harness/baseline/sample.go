package baseline

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// minSampleSize is the smallest message size whose bus bandwidth a
// baseline takes from a run: the sizes where the path, not the latency,
// sets the number.
const minSampleSize = 256 << 20

// AddSamples takes the metrics a baseline holds from one node's runs, as
// Record reads them: the direct runs' bus bandwidth per message size from
// minSampleSize up, and each forced fallback's ratio to direct. Runs that
// failed give none.
func AddSamples(s map[string][]float64, n results.Node) {
	for _, r := range n.Runs {
		if r.Error != "" {
			continue
		}
		switch {
		case r.Mode == "direct":
			metric := results.BusBWMetric(r.Op)
			for _, p := range r.Points {
				if p.Size >= minSampleSize {
					k := SampleKey(metric, p.Size)
					s[k] = append(s[k], p.BusBW)
				}
			}
		case r.RatioToDirect != nil:
			k := SampleKey(results.FallbackRatioMetric(r.Mode), 0)
			s[k] = append(s[k], *r.RatioToDirect)
		}
	}
}

// ProfileName derives a profile's name from the hardware, like
// h200x2-nv18 or h100x8-nv18-cx7.
func ProfileName(f Facts) string {
	model := strings.ToLower(strings.TrimPrefix(f.GPUModel, "NVIDIA "))
	model, _, _ = strings.Cut(model, " ")
	name := fmt.Sprintf("%sx%d-%s", model, f.GPUsPerNode, strings.ToLower(f.Interconnect))
	if f.NICModel != "" && f.NICModel != NoNIC {
		name += "-" + strings.ToLower(strings.ReplaceAll(f.NICModel, "ConnectX-", "cx"))
	}
	return name
}

// RecordedFrom is a recorded baseline's Source: how many runs, on which
// nodes, each named once in the order first seen.
func RecordedFrom(runs int, nodes []string) string {
	return fmt.Sprintf("%d run(s) on %s", runs, strings.Join(dedupe(nodes), ", "))
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
