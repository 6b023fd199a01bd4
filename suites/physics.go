package suites

import (
	"fmt"
	"math"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// PhysicsMargin is how far above its path's limit a measured bandwidth
// may read before it is called impossible. The limits are signalling
// rates net of the line code only, already above what any transfer
// reaches (PCIe packet headers and NVLink flit headers cost 5-20 % more),
// so a true measurement sits below them; 5 % leaves room for the timer
// and rounding of the tools (nccl-tests averages CUDA-event times over
// 20 iterations; perftest rounds to two decimals) and for a link that
// runs a little fast, and is still far below what a wrong unit (x8, x1000)
// or a broken number gives.
const PhysicsMargin = 0.05

// Impossible says why a measured bandwidth cannot be right on a path of
// limit l: not a finite number, or above the limit by more than
// PhysicsMargin; "" when it can. what names the measurement
// ("all_reduce_perf busbw at 2 GiB"). An unknown limit judges only
// finiteness.
func Impossible(what string, v float64, l node.Limit) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprintf("%s is %v: not a measurement", what, v)
	case l.Known() && v > l.Value*(1+PhysicsMargin):
		return fmt.Sprintf("%s reads %s %s, above the %s the path can carry (%s, plus %g %%): the measurement cannot be right",
			what, results.FormatValue(v), l.Unit, results.FormatValue(l.Value)+" "+l.Unit, l.How, PhysicsMargin*100)
	}
	return ""
}

// ImpossibleSample says why a bandwidth a baseline would take from a
// node's direct runs (baseline.AddSamples) cannot be right on that node
// (Impossible against nccl.BusBWLimit from its own evidence), for the
// first that cannot; "" when all can. A results.json may come from
// anywhere, so `gdrcheck baseline record` judges it again rather than
// trusting it to have failed.
func ImpossibleSample(n results.Node, ev *node.Evidence) string {
	for _, r := range n.Runs {
		if r.Error != "" || r.Mode != "direct" {
			continue
		}
		limit := nccl.BusBWLimit(r.Op, ev)
		if why := Impossible(r.Op+"_perf busbw", r.BusBW, limit); why != "" {
			return why
		}
		for _, p := range r.Points {
			if why := Impossible(fmt.Sprintf("%s_perf busbw at %s", r.Op, results.SizeString(p.Size)), p.BusBW, limit); why != "" {
				return why
			}
		}
	}
	return ""
}
