package health

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// CheckProlog names the prolog's findings: the quick gate on the job's
// GPUs (`gdrcheck prolog`) failed, so the job must not start here.
const CheckProlog = "prolog"

// CheckJobGPUs names a job GPU the node does not show.
const CheckJobGPUs = "job-gpus"

// remedy is what remediation does about a failed spec of a gate, and
// what it acts on: the spec's own action, scope and entity (every failing
// spec carries them, suites.Remedy), else INVESTIGATE on the node, as
// results.Node.Settle reads a failure without one.
func remedy(sp results.Spec, node string) (results.Action, results.Scope, string) {
	a, sc, e := sp.Action, sp.Scope, sp.Entity
	if a == "" {
		a = results.ActionInvestigate
	}
	if sc == "" {
		sc = results.ScopeNode
	}
	if e == "" {
		e = node
	}
	return a, sc, e
}

// PrologVerdict judges the quick gate's results on the job's GPUs (one
// node's entry): every failed spec is a fault the job must not start on;
// a node that could not be evaluated is unevaluable, which never fails a
// job (gdrcheck's own failure is not the node's).
func PrologVerdict(n results.Node) Verdict { return gateVerdict(CheckProlog, n) }

// DeepVerdict judges a deep run's results (the node suites, from an
// epilog or a prolog) as PrologVerdict does the quick gate's.
func DeepVerdict(n results.Node) Verdict { return gateVerdict(CheckDeep, n) }

func gateVerdict(check string, n results.Node) Verdict {
	var fs []Finding
	for _, s := range n.Suites {
		for _, sp := range s.Specs {
			if !sp.Failed() {
				continue
			}
			a, sc, e := remedy(sp, n.Name)
			fs = append(fs, Finding{Check: check, State: StateUnhealthy,
				Cause:  s.Name + ": " + firstLine(sp.Message), // the spec names are long: the message is the cause
				Action: a, Scope: sc, Entity: e})
		}
	}
	if n.Status != results.NodeEvaluated {
		fs = append(fs, Finding{Check: CheckEvaluate, State: StateUnevaluable,
			Cause:  fmt.Sprintf("node %s: %s", n.Status, firstLine(n.Reason)),
			Action: results.ActionRerun, Scope: results.ScopeNode, Entity: n.Name})
	}
	return verdictOf(fs)
}

// MissingJobGPU is the finding for a job GPU the node does not show
// (the list Slurm gave names a GPU NVML does not list): a GPU lost from
// the bus, which a reboot brings back or shows gone for good, or a
// gres.conf that does not match the node; either way the job would run
// on fewer GPUs than it was given.
func MissingJobGPU(nodeName string, err error) Verdict {
	return verdictOf([]Finding{{Check: CheckJobGPUs, State: StateUnhealthy, Cause: firstLine(err.Error()),
		Action: results.ActionReboot, Scope: results.ScopeNode, Entity: nodeName}})
}

// firstLine is s up to its first line break, trimmed: a drain reason
// and a finding are one line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}
