package health

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gdrcheck/gdrcheck/slurm"
)

// pastBreaker says why a node gdrcheck drained must be resumed again,
// "" when it keeps its drain. Every node decides alone: when a fault hits
// many nodes at once (slurmctld asks them all to run health in the same
// second unless HealthCheckNodeState has CYCLE), each reads the others
// before any drain lands, finds the breaker closed and drains, and the
// partition ends past its limit. The next run puts it right, the same way
// on every node: within each partition, gdrcheck's drains inside the
// window in the order Slurm stamped them (then by name, for drains of one
// second) keep their place up to the limit; a node past it resumes, which
// is this run's one scontrol call, and its next run is held by breaker.
func pastBreaker(self slurm.NodeView, all []slurm.NodeView, p Policy, now time.Time) string {
	within := func(n slurm.NodeView) bool {
		return n.Drained() && n.Ours() && (n.ReasonAt.IsZero() || now.Sub(n.ReasonAt) <= p.BreakerWindow)
	}
	if p.BreakerPercent <= 0 || !within(self) {
		return ""
	}
	parts := self.Partitions
	if len(parts) == 0 {
		parts = []string{""}
	}
	for _, part := range parts {
		total := 0
		var ours []slurm.NodeView
		for _, n := range all {
			if part != "" && !slices.Contains(n.Partitions, part) {
				continue
			}
			total++
			if within(n) {
				ours = append(ours, n)
			}
		}
		allowed := max(int(math.Floor(p.BreakerPercent/100*float64(total))), 1)
		slices.SortFunc(ours, func(a, b slurm.NodeView) int {
			return cmp.Or(a.ReasonAt.Compare(b.ReasonAt), cmp.Compare(a.Name, b.Name))
		})
		if i := slices.IndexFunc(ours, func(n slurm.NodeView) bool { return n.Name == self.Name }); i >= allowed {
			name := part
			if name == "" {
				name = "(all nodes)"
			}
			return fmt.Sprintf("circuit breaker: partition %s had %d of %d nodes drained by gdrcheck within %s at once (limit %g%%: %d); this node drained %s in that order, past the limit", name, len(ours), total, p.BreakerWindow, p.BreakerPercent, allowed, ordinal(i+1))
		}
	}
	return ""
}

func ordinal(n int) string {
	switch {
	case n%100/10 == 1:
		return fmt.Sprintf("%dth", n)
	case n%10 == 1:
		return fmt.Sprintf("%dst", n)
	case n%10 == 2:
		return fmt.Sprintf("%dnd", n)
	case n%10 == 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}
