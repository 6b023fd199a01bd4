package suites

import (
	"fmt"
	"math"

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
