// Package health judges a node's cheap state for `gdrcheck health`, the
// HealthCheckProgram tier of issue 33: no GPU kernel and no fabric
// traffic, only what sysfs, procfs, NVML and the state file of the last
// run say. Each Finding carries the remediation action, its scope and
// entity (results/action.go), so the drain reason and the textfile can
// name them. The health package orchestrates; verdicts live here.
package health

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// The checks, as drain reasons and the textfile name them: short, since
// Slurm's reason field is short, and stable, since pipelines match them.
const (
	CheckPeerMemory = "peer-memory" // the peer-memory mechanism (DMA-BUF or nvidia_peermem)
	CheckGPULink    = "gpu-pcie"    // a GPU's PCIe link against its maximum
	CheckNICLink    = "nic-pcie"    // a NIC's PCIe link against its maximum
	CheckRailPort   = "rail-port"   // a rail NIC port's state and rate
	CheckCounters   = "counters"    // error counters that moved since the last run
	CheckXid        = "xid"         // Xids logged since the last run
	CheckKnownBad   = "known-bad"   // the node's versions in a known-bad cell
	CheckDeep       = "deep"        // the last deep result: stale, absent or failed
	CheckEvaluate   = "evaluate"    // gdrcheck could not evaluate the node itself
)

// Checks lists the checks in the order they run and are reported.
var Checks = []string{CheckPeerMemory, CheckGPULink, CheckNICLink, CheckRailPort, CheckCounters, CheckXid, CheckKnownBad, CheckDeep}

// The states of a finding and of a node.
const (
	StateHealthy     = "healthy"     // nothing found
	StateUnhealthy   = "unhealthy"   // a fault of the node: the drain decision weighs it
	StateStale       = "stale"       // the deep result no longer speaks for the node: RERUN, not a drain
	StateUnevaluable = "unevaluable" // gdrcheck could not tell: fail open, never a drain
)

// Finding is one thing a check found.
type Finding struct {
	Check  string         `json:"check"`  // one of Checks, or CheckEvaluate
	State  string         `json:"state"`  // StateUnhealthy, StateStale or StateUnevaluable
	Cause  string         `json:"cause"`  // one line, for people and the drain reason
	Action results.Action `json:"action"` // what a remediation pipeline does about it
	Scope  results.Scope  `json:"scope"`
	Entity string         `json:"entity"` // bus id, mlx5_3/1, the node's name
}

// String is the finding as a line: "gpu-pcie: 0000:18:00.0 ... action=RESET_GPU".
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s action=%s", f.Check, f.Cause, f.Action)
}

// Verdict is the node's state from its findings.
type Verdict struct {
	State    string         `json:"state"`    // the worst of the findings' states; StateHealthy when none
	Action   results.Action `json:"action"`   // the most disruptive action of the findings that count
	Findings []Finding      `json:"findings"` // in Checks order
}

// Worst is the finding a drain reason names: the most disruptive
// unhealthy one, the first of equals; false when none is unhealthy.
func (v Verdict) Worst() (Finding, bool) {
	var w Finding
	found := false
	for _, f := range v.Findings {
		if f.State != StateUnhealthy {
			continue
		}
		if !found || f.Action.Rank() > w.Action.Rank() {
			w, found = f, true
		}
	}
	return w, found
}

// Summary is the verdict in one line: the state and the worst finding.
func (v Verdict) Summary() string {
	if len(v.Findings) == 0 {
		return StateHealthy
	}
	var parts []string
	for _, f := range v.Findings {
		parts = append(parts, f.String())
	}
	return v.State + ": " + strings.Join(parts, "; ")
}

// rank orders states: a node is as bad as its worst finding. Unevaluable
// ranks above unhealthy so that a run which could not tell says so
// rather than claim a verdict.
func rank(state string) int {
	switch state {
	case StateStale:
		return 1
	case StateUnhealthy:
		return 2
	case StateUnevaluable:
		return 3
	}
	return 0
}

// verdictOf folds findings into the node's verdict.
func verdictOf(fs []Finding) Verdict {
	v := Verdict{State: StateHealthy, Action: results.ActionNone, Findings: fs}
	var as []results.Action
	for _, f := range fs {
		if rank(f.State) > rank(v.State) {
			v.State = f.State
		}
		as = append(as, f.Action)
	}
	if a := results.MostDisruptive(as...); a != "" {
		v.Action = a
	}
	return v
}
