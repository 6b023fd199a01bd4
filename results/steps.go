package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Step is one step of a node's run that is not a spec (reading the host,
// NVML, the GPUDirect probe, a benchmark), with the wall time it took:
// beside the specs' own durations, they say where a run's time went.
type Step struct {
	Name     string  `json:"name"`
	Duration float64 `json:"duration_s"`
}

// checkSteps refuses a duration no clock gives.
func checkSteps(steps []Step, where string) error {
	for i, s := range steps {
		if math.IsNaN(s.Duration) || math.IsInf(s.Duration, 0) || s.Duration < 0 {
			return fmt.Errorf("%s: steps[%d] (%q): duration_s %v is not a wall time", where, i, s.Name, s.Duration)
		}
	}
	return nil
}

// Timed is a step or a spec and how long it took, for the table of a
// run's slowest parts.
type Timed struct {
	Kind     string // "step", or the suite of a spec
	Name     string
	Duration float64
}

// Slowest returns the node's n slowest steps and specs, slowest first.
func (n Node) Slowest(k int) []Timed {
	var all []Timed
	for _, s := range n.Steps {
		all = append(all, Timed{Kind: "step", Name: s.Name, Duration: s.Duration})
	}
	for _, su := range n.Suites {
		for _, sp := range su.Specs {
			all = append(all, Timed{Kind: su.Name, Name: sp.Name, Duration: sp.Duration})
		}
	}
	slices.SortStableFunc(all, func(a, b Timed) int { return cmp.Compare(b.Duration, a.Duration) })
	return all[:min(k, len(all))]
}
