package nccl

import (
	"fmt"
	"slices"
	"strings"
)

// Verdict names.
const (
	VerdictDirect   = "direct"   // every connection took the direct path the topology allows
	VerdictFallback = "fallback" // some connection was staged through the host or left RDMA
	VerdictUnknown  = "unknown"  // the log shows no channel connections to judge
)

// Verdict says whether NCCL used direct paths, and why.
type Verdict struct {
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"` // short, stable sentences with classes and counts
}

// Expect is what the topology says about one kind of path.
type Expect int8

const (
	ExpectUnknown Expect = iota // nothing known: judge by the offline defaults
	ExpectYes
	ExpectNo
)

// Expectation is what the topology expects NCCL to use. The zero value is
// the offline default: intra-node P2P and inter-node NET with GDRDMA are
// direct; SHM, NET without GDRDMA and Socket are fallbacks.
type Expectation struct {
	// P2P: are the GPUs of one node NVLink/NVSwitch (or P2P-capable PCIe)
	// peers? ExpectNo makes SHM the expected path, e.g. across sockets.
	P2P Expect
	// GDR: does each GPU have a PIX/PXB NIC? ExpectNo makes host-staged NET
	// expected, since NCCL does not use GDR across the CPU (PHB/SYS) unless
	// NCCL_NET_GDR_LEVEL allows it.
	GDR Expect
	// Nodes is the number of hosts in the job, 0 if unknown. NCCL counting
	// more nodes than that means it split a host and sends between GPUs of
	// one host over the network.
	Nodes int
}

// Verdict judges the connections in the log against exp. Classes are
// compared by name only.
func (s *LogSummary) Verdict(exp Expectation) Verdict {
	type group struct {
		label, why string
		direct     bool
		n          int
	}
	groups := map[string]*group{}
	for _, c := range s.Connections {
		label, why, direct := judge(c, exp)
		g, ok := groups[label]
		if !ok {
			g = &group{label: label, why: why, direct: direct}
			groups[label] = g
		}
		g.n++
	}
	var fallback, direct []string
	total := len(s.Connections)
	for _, label := range sortedKeys(groups) {
		g := groups[label]
		r := fmt.Sprintf("%d of %d connections used %s", g.n, total, g.label)
		if g.why != "" {
			r += "; " + g.why
		}
		if g.direct {
			direct = append(direct, r)
		} else {
			fallback = append(fallback, r)
		}
	}
	if exp.Nodes > 0 && s.Nodes > 0 && s.Nodes != exp.Nodes {
		fallback = append(fallback, fmt.Sprintf("NCCL counted %d nodes; the job has %d", s.Nodes, exp.Nodes))
	}
	switch {
	case len(fallback) > 0:
		return Verdict{Verdict: VerdictFallback, Reasons: append(fallback, direct...)}
	case total == 0:
		return Verdict{Verdict: VerdictUnknown, Reasons: []string{
			"no channel connection lines in the log; NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM prints them",
		}}
	}
	return Verdict{Verdict: VerdictDirect, Reasons: direct}
}

// judge says how one connection counts: the label it is reported under,
// why (empty for the plain direct case), and whether it is direct.
func judge(c Connection, exp Expectation) (label, why string, direct bool) {
	switch {
	case strings.HasPrefix(c.Class, "P2P"):
		return c.Class, "", true
	case c.Class == ClassSHM:
		switch exp.P2P {
		case ExpectYes:
			return c.Class, "P2P was expected between NVLink peers", false
		case ExpectNo:
			return c.Class, "P2P was not expected between these GPUs", true
		}
		return c.Class, "P2P is the direct path between GPUs of one node", false
	case c.Class == ClassNetSocket:
		return c.Class, "sockets bypass RDMA", false
	case c.GDR:
		return c.Class, "", true
	}
	// NET or CollNet without GDRDMA: staged through host memory.
	label = c.Class
	if c.Class == ClassCollNet {
		label = ClassCollNet + " without GDRDMA"
	}
	switch exp.GDR {
	case ExpectYes:
		return label, "GDRDMA was expected (GPU has a PIX/PXB NIC)", false
	case ExpectNo:
		return label, "GDRDMA was not expected (no PIX/PXB NIC)", true
	}
	return label, "without GDRDMA the data is staged through host memory", false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
