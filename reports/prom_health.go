package reports

import (
	"bytes"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gdrcheck/gdrcheck/results"
)

// HealthState is one `gdrcheck health` run as its textfile shows it: a
// plain value (reports import no suite), filled by the command.
type HealthState struct {
	Node    string
	State   string         // healthy, stale, unhealthy, unevaluable
	Action  results.Action // the node's overall action
	Check   string         // the check a drain reason names; "" when healthy
	Breaker string         // the circuit breaker that held a drain, "" when none
	Failure string         // why gdrcheck could not evaluate (fail open), "" when it could
	SlurmOp string         // what the run did in Slurm: none, drain, reason, resume, publish, held
	At      time.Time
	Elapsed time.Duration
	// Findings are every finding of the run.
	Findings []HealthFinding
}

// HealthFinding is one finding: the check, its state and the action,
// scope and entity of results' vocabulary.
type HealthFinding struct {
	Check, State string
	Action       results.Action
	Scope        results.Scope
	Entity       string
}

// WriteHealthPrometheus writes s as node_exporter's textfile collector
// reads it: the node's state with its action as a label, each finding,
// the breaker and whether gdrcheck could evaluate at all.
func WriteHealthPrometheus(w io.Writer, s HealthState) error {
	m := &promMetrics{reg: prometheus.NewRegistry()}
	state := m.vec("gdrcheck_health_state", "The node's state from gdrcheck health (healthy, stale, unhealthy, unevaluable) with its remediation action and the check a drain names (value 1).", "state", "action", "check")
	finding := m.vec("gdrcheck_health_finding", "A finding of gdrcheck health: its check, state, remediation action, scope and entity (bus id, mlx5_3/1, the node) (value 1).", "check", "state", "action", "scope", "entity")
	breaker := m.vec("gdrcheck_health_circuit_breaker_open", "1 where the circuit breaker held back a drain this run, naming it; 0 where it did not.", "breaker")
	evaluated := m.vec("gdrcheck_health_evaluated", "1 where gdrcheck could evaluate the node and keep its state; 0 where it failed open (NVML missing, state directory unwritable, its deadline hit) and changed nothing in Slurm.", "failure")
	slurmOp := m.vec("gdrcheck_health_slurm_operation", "What the run did in Slurm: none, drain, reason, resume, publish, or held by the breaker (value 1).", "op")
	last := m.vec("gdrcheck_health_last_run_timestamp_seconds", "When the health run ended, in seconds since the epoch.")
	dur := m.vec("gdrcheck_health_duration_seconds", "How long the health run took, in seconds.")
	n := s.Node
	state.set(1, n, s.State, string(s.Action), s.Check)
	for _, f := range s.Findings {
		finding.set(1, n, f.Check, f.State, string(f.Action), string(f.Scope), f.Entity)
	}
	if s.Breaker != "" {
		breaker.set(1, n, s.Breaker)
	} else {
		breaker.set(0, n, "")
	}
	if s.Failure != "" {
		evaluated.set(0, n, s.Failure)
	} else {
		evaluated.set(1, n, "")
	}
	slurmOp.set(1, n, orUnknown(s.SlurmOp))
	if !s.At.IsZero() {
		last.set(float64(s.At.UnixNano())/1e9, n)
	}
	dur.set(s.Elapsed.Seconds(), n)
	return m.write(w)
}

// WriteHealthTextfile writes s to path atomically (a temporary file
// renamed into place), so the collector never reads half of it.
func WriteHealthTextfile(path string, s HealthState) error {
	var b bytes.Buffer
	if err := WriteHealthPrometheus(&b, s); err != nil {
		return err
	}
	return results.WriteFile(path, b.Bytes())
}
