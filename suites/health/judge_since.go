package health

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/knownbad"
)

// linkCounters are the port counters a health run judges between runs:
// the physical layer's (IBTA vol. 1, 16.1.3.5 PortCounters). Jobs ran
// since the last run, so retransmissions, CNPs, discards and CQE errors
// move with the traffic and the applications; these move only with a
// bad cable, transceiver or port.
var linkCounters = []string{"symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
	"port_rcv_remote_physical_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors"}

// counters: the physical-layer counters of a rail port that grew since
// the last run. A first run has nothing to compare: it only reads.
func counters(in Input) []Finding {
	if in.Counters == nil || in.Prev == nil || in.Prev.Counters == nil {
		return nil
	}
	d := node.Delta(*in.Prev.Counters, *in.Counters)
	byPort := map[string][]string{}
	var ports []string
	for _, g := range d.Grown(node.ClassError) {
		if g.Reset || !slices.Contains(linkCounters, g.Name) || !rail(in.Evidence, g.NIC) {
			continue
		}
		entity := fmt.Sprintf("%s/%d", g.NIC, g.Port)
		if _, ok := byPort[entity]; !ok {
			ports = append(ports, entity)
		}
		byPort[entity] = append(byPort[entity], fmt.Sprintf("%s +%d", g.Name, g.Delta))
	}
	var fs []Finding
	for _, p := range ports {
		cause := fmt.Sprintf("%s %s since the last run (%s ago)", p, strings.Join(byPort[p], ", "), d.Elapsed().Round(time.Second))
		fs = append(fs, unhealthy(CheckCounters, cause, results.ActionCheckCable, results.ScopePort, p))
	}
	return fs
}

// xidNumber reads the Xid and the GPU from an NVRM line: "NVRM: Xid
// (PCI:0000:18:00): 79, pid=...".
var xidNumber = regexp.MustCompile(`Xid \(PCI:([0-9A-Fa-f:.]+)\): ([0-9]+),`)

// xids: the Xids that break the direct path (harness/node keeps 79, 74
// and 144-149) logged since the last run. NVIDIA's Xid catalogue: 79
// "GPU has fallen off the bus" needs the node rebooted; 74 and 144-149
// (NVLink) a GPU reset.
func xids(in Input) []Finding {
	var fs []Finding
	for _, l := range NewXids(in.Evidence, in.Prev) {
		m := xidNumber.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a, entity := results.ActionResetGPU, m[1]
		if m[2] == "79" {
			a = results.ActionReboot
		}
		fs = append(fs, unhealthy(CheckXid, "Xid "+m[2]+" on GPU "+entity+" since the last run: "+clip(l, 80), a, results.ScopeGPU, entity))
	}
	return fs
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// knownBad: the node's versions in a fail-level cell of the known-bad
// table. The fix is a package change: FIX_CONFIG, or a reimage where
// the cell is the kernel or driver itself (REIMAGE is for the image).
func knownBad(name string, ev *node.Evidence) []Finding {
	var fs []Finding
	for _, h := range knownbad.Failing(knownbad.Match(knownbad.FromEvidence(ev, ""))) {
		fs = append(fs, unhealthy(CheckKnownBad, h.Rule.ID+": "+h.Why+": "+h.Rule.Breaks, results.ActionFixConfig, results.ScopeNode, name))
	}
	return fs
}

// deep: a cached deep result that failed is the node's fault; one that
// is absent or stale asks for a deep run (RERUN), which is its own
// state, never a drain.
func deep(name string, d DeepState) []Finding {
	switch {
	case d.Err != "":
		return []Finding{{Check: CheckDeep, State: StateStale, Cause: "deep result unreadable: " + oneLine(d.Err), Action: results.ActionRerun, Scope: results.ScopeNode, Entity: name}}
	case !d.Found:
		return []Finding{{Check: CheckDeep, State: StateStale, Cause: "deep result absent: no deep run recorded", Action: results.ActionRerun, Scope: results.ScopeNode, Entity: name}}
	case d.Stale != "":
		return []Finding{{Check: CheckDeep, State: StateStale, Cause: "deep result stale: " + d.Stale, Action: results.ActionRerun, Scope: results.ScopeNode, Entity: name}}
	case d.Exit == results.ExitFailed:
		a := d.Action
		if !a.Valid() || a == results.ActionNone {
			a = results.ActionInvestigate
		}
		cause := "deep run failed"
		if d.Check != "" {
			cause += ": " + d.Check
		}
		if d.Cause != "" {
			cause += ": " + d.Cause
		}
		return []Finding{unhealthy(CheckDeep, cause, a, results.ScopeNode, name)}
	case d.Exit != results.ExitPassed:
		return []Finding{{Check: CheckDeep, State: StateStale, Cause: "deep result unevaluable: the last deep run could not judge the node", Action: results.ActionRerun, Scope: results.ScopeNode, Entity: name}}
	}
	return nil
}
