package health

import (
	"time"

	"github.com/gdrcheck/gdrcheck/reports"
)

// Textfile is the outcome as reports.WriteHealthPrometheus renders it,
// stamped at.
func (o Outcome) Textfile(at time.Time) reports.HealthState {
	s := reports.HealthState{Node: o.Node, State: o.Verdict.State, Action: o.Action, Breaker: o.Breaker(),
		Failure: o.Failure, SlurmOp: o.Slurm.Op, At: at, Elapsed: o.Elapsed}
	if w, ok := o.Verdict.Worst(); ok {
		s.Check = w.Check
	}
	for _, f := range o.Verdict.Findings {
		s.Findings = append(s.Findings, reports.HealthFinding{Check: f.Check, State: f.State, Action: f.Action, Scope: f.Scope, Entity: f.Entity})
	}
	return s
}
