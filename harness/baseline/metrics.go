package baseline

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
)

// MetricKind is one family of metrics gdrcheck measures and compares: what
// it is, its unit, which way it improves, and the range an expected value
// of it can plausibly take. A baseline may state only these metrics: a
// name no spec compares is a comparison that never happens, and a spec
// that finds nothing to compare passes.
type MetricKind struct {
	Pattern   string    // as the docs spell it: nccl.<op>.busbw
	What      string    // "a bandwidth", for messages
	Unit      string    // the unit a value is in; empty for ratios
	Direction Direction // which way is better
	// Min and Max bound an expected value: outside, it is no claim about
	// any hardware gdrcheck checks. They are plausibility bounds, not the
	// physics of one path (which the node's own evidence gives).
	Min, Max float64
	Why      string     // where Min and Max come from
	Default  *Tolerance // Record's tolerance; nil: a hard limit
}

// NCCLOps are the collectives the collectives suite runs (nccl-tests
// binaries without _perf), in harness/nccl.DefaultPlan's order.
var NCCLOps = []string{"all_reduce", "all_gather", "reduce_scatter", "sendrecv"}

// FallbackModes are the forced fallbacks the negative suite runs
// (harness/nccl modes).
var FallbackModes = []string{"p2p-disabled", "p2p-shm-disabled", "gdr-loc", "ib-disabled", "remote-hca"}

// Bandwidth bounds. The fastest GPU link announced, NVLink 6, moves
// 3.6 TB/s per GPU both ways together; no bus bandwidth can exceed it.
// The slowest path a GPU cluster has, PCIe Gen3 x1, moves 1 GB/s.
// The fastest NIC port announced is 1.6 Tb/s; the slowest RDMA port,
// InfiniBand SDR 1x, 2.5 Gb/s.
var (
	busBW = MetricKind{What: "a bus bandwidth", Unit: "GB/s", Direction: Higher, Min: 1, Max: 3600,
		Why:     "1 GB/s is PCIe Gen3 x1, 3600 GB/s NVLink 6 both ways",
		Default: &Tolerance{Relative: 0.10}}
	fallbackRatio = MetricKind{What: "a fallback's share of the direct bandwidth", Direction: Lower, Min: 0, Max: 1,
		Why:     "a forced fallback that keeps all of the direct bandwidth is not told apart from it",
		Default: &Tolerance{Relative: 0.25, Absolute: 0.05}}
	efficiency = MetricKind{What: "a scaling efficiency", Direction: Higher, Min: 0.1, Max: 2,
		Why:     "busbw at N nodes over busbw at 2: below 0.1 is a broken fabric, not a baseline; above 2 no algorithm scales",
		Default: &Tolerance{Relative: 0.10}}
	rdmaBW = MetricKind{What: "an RDMA bandwidth", Unit: "Gb/s", Direction: Higher, Min: 1, Max: 1600,
		Why:     "the slowest RDMA port is 2.5 Gb/s (InfiniBand SDR 1x), the fastest announced 1600 Gb/s",
		Default: &Tolerance{Relative: 0.10}}
	gpuHostRatio = MetricKind{What: "GPU memory's share of host memory's RDMA bandwidth", Direction: Higher, Min: 0.1, Max: 2,
		Why:     "GPU memory reaching a tenth of host memory's bandwidth is a broken path; twice is no measurement",
		Default: &Tolerance{Relative: 0.10}}
)

// fixedMetrics are the metrics with one name.
var fixedMetrics = func() map[string]MetricKind {
	m := map[string]MetricKind{
		results.ScalingEfficiencyMetric: with(efficiency, results.ScalingEfficiencyMetric),
		results.RDMAGDRMetric:           with(rdmaBW, results.RDMAGDRMetric),
		results.RDMAGPUHostRatioMetric:  with(gpuHostRatio, results.RDMAGPUHostRatioMetric),
	}
	for _, op := range NCCLOps {
		m[results.BusBWMetric(op)] = with(busBW, "nccl.<op>.busbw")
	}
	for _, mode := range FallbackModes {
		m[results.FallbackRatioMetric(mode)] = with(fallbackRatio, "nccl.fallback.<mode>.ratio")
	}
	return m
}()

func with(k MetricKind, pattern string) MetricKind { k.Pattern = pattern; return k }

// multiNode matches results.MultiNodeBusBWMetric's names.
var multiNode = regexp.MustCompile(`^nccl\.all_reduce\.busbw\.nodes([1-9][0-9]{0,4})$`)

// LookupMetric returns the kind of a metric gdrcheck measures; false for
// any other name.
func LookupMetric(name string) (MetricKind, bool) {
	if k, ok := fixedMetrics[name]; ok {
		return k, true
	}
	if m := multiNode.FindStringSubmatch(name); m != nil {
		// Runs cross 2, 4 ... nodes, up to the largest allocation.
		if n, _ := strconv.Atoi(m[1]); n >= 2 && n <= hostlist.MaxNodes {
			return with(busBW, "nccl.all_reduce.busbw.nodes<N>"), true
		}
	}
	return MetricKind{}, false
}

// KnownMetrics lists the names a baseline may state; the multi-node
// family is written as its pattern.
func KnownMetrics() []string {
	var out []string
	for _, op := range NCCLOps {
		out = append(out, results.BusBWMetric(op))
	}
	out = append(out, "nccl.all_reduce.busbw.nodes<N>", results.ScalingEfficiencyMetric)
	for _, mode := range FallbackModes {
		out = append(out, results.FallbackRatioMetric(mode))
	}
	return append(out, results.RDMAGDRMetric, results.RDMAGPUHostRatioMetric)
}

// NearestMetric is the known name closest to name in edit distance, for
// "did you mean": nccl.allreduce.busbw is one edit from
// nccl.all_reduce.busbw.
func NearestMetric(name string) string {
	best, dist := "", -1
	for _, k := range KnownMetrics() {
		cand := k
		if strings.HasSuffix(k, "<N>") && strings.HasPrefix(name, "nccl.") {
			// Compared as the user's own node count would read.
			cand = strings.TrimSuffix(k, "<N>") + trailingDigits(name)
		}
		if d := levenshtein.ComputeDistance(name, cand); dist < 0 || d < dist {
			best, dist = cand, d
		}
	}
	return best
}

func trailingDigits(s string) string {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) {
		return "<N>"
	}
	return s[i:]
}
