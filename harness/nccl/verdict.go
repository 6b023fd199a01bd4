package nccl

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// Verdict names, as results.json records them (Run.PathVerdict).
const (
	VerdictDirect   = results.PathDirect
	VerdictFallback = results.PathFallback
	VerdictUnknown  = results.PathUnknown
)

// Verdict says whether NCCL used direct paths, and why.
type Verdict struct {
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"` // short, stable sentences with classes and counts
}

// Reason is the first reason, for a one-line failure message.
func (v Verdict) Reason() string {
	if len(v.Reasons) == 0 {
		return "no reason given"
	}
	return v.Reasons[0]
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
// compared by name only. The reason for each class that counts as a
// fallback names where it was seen: the channels, and the first rank pairs
// with the "via" text and the host that logged them, e.g.
//
//	2 of 4 connections used NET/IB without GDRDMA (channels 01 and 03, rank 7 -> 0 via NET/IB/1 on kg35-nvl03); the data is staged through host memory
//
// It reads Uses; a summary built by hand with only Connections is judged
// from those.
func (s *LogSummary) Verdict(exp Expectation) Verdict {
	type group struct {
		label, why string
		direct     bool
		n          int
		channels   []int
		links      []Link
		other      int // connections on links not in links
	}
	uses := s.Uses
	if len(uses) == 0 && len(s.Connections) > 0 {
		uses = usesOf(s.Connections)
	}
	groups := map[string]*group{}
	total := 0
	for _, u := range uses {
		label, why, direct := judge(u.Class, u.GDR, exp)
		g, ok := groups[label]
		if !ok {
			g = &group{label: label, why: why, direct: direct}
			groups[label] = g
		}
		g.n += u.Connections
		total += u.Connections
		g.channels = append(g.channels, u.Channels...)
		for _, l := range u.Links {
			if len(g.links) < MaxLinks {
				g.links = append(g.links, l)
			} else {
				g.other += l.Connections
			}
		}
		g.other += u.OtherLinks
	}
	var fallback, direct []string
	for _, label := range slices.Sorted(maps.Keys(groups)) {
		g := groups[label]
		r := fmt.Sprintf("%d of %d connections used %s", g.n, total, g.label)
		if !g.direct {
			if w := where(g.channels, g.links, g.other); w != "" {
				r += " (" + w + ")"
			}
		}
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

// usesOf groups connections the way ParseLog fills LogSummary.Uses.
func usesOf(conns []Connection) []TransportUse {
	var uses []TransportUse
	idx := map[viaInfo]int{}
	for _, c := range conns {
		k := viaInfo{c.Class, c.GDR}
		i, ok := idx[k]
		if !ok {
			i = len(uses)
			idx[k] = i
			uses = append(uses, TransportUse{Class: c.Class, GDR: c.GDR})
		}
		uses[i].add([]byte(c.Host), c, []byte(c.Via))
	}
	for i := range uses {
		uses[i].Channels = uses[i].channelList()
	}
	return uses
}

// judge says how one class counts: the label it is reported under, why
// (empty for the plain direct case), and whether it is direct.
func judge(class string, gdr bool, exp Expectation) (label, why string, direct bool) {
	switch {
	case strings.HasPrefix(class, "P2P"):
		return class, "", true
	case class == ClassSHM:
		switch exp.P2P {
		case ExpectYes:
			return class, "P2P was expected between NVLink peers", false
		case ExpectNo:
			return class, "P2P was not expected between these GPUs", true
		}
		return class, "P2P is the direct path between GPUs of one node", false
	case class == ClassNetSocket:
		return class, "sockets bypass RDMA", false
	case gdr:
		return class, "", true
	case !strings.HasPrefix(class, "NET/") && class != ClassCollNet:
		return class, "not a transport known to be direct", false
	}
	// NET or CollNet without GDRDMA: staged through host memory.
	label = class + " without GDRDMA"
	switch exp.GDR {
	case ExpectYes:
		return label, "GDRDMA was expected (GPU has a PIX/PXB NIC)", false
	case ExpectNo:
		return label, "GDRDMA was not expected (no PIX/PXB NIC)", true
	}
	return label, "the data is staged through host memory", false
}

// Most items where lists before it says "and N more".
const (
	shownChannelItems = 6
	shownPairs        = 4
)

// where names the channels and the first rank pairs of a fallback:
// "channels 01 and 03, rank 7 -> 0 via NET/IB/1 on kg35-nvl03".
func where(channels []int, links []Link, other int) string {
	var parts []string
	if c := ChannelList(channels); c != "" {
		parts = append(parts, c)
	}
	type pairs struct {
		via, host string
		list      []string
	}
	var groups []*pairs
	shown := 0
	for _, l := range links {
		if shown == shownPairs {
			other += l.Connections
			continue
		}
		shown++
		pair := fmt.Sprintf("%d -> %d", l.From, l.To)
		if l.To < 0 {
			pair = strconv.Itoa(l.From) // CollNet: one rank and the collective network
		}
		i := slices.IndexFunc(groups, func(g *pairs) bool { return g.via == l.Via && g.host == l.Host })
		if i < 0 {
			i = len(groups)
			groups = append(groups, &pairs{via: l.Via, host: l.Host})
		}
		groups[i].list = append(groups[i].list, pair)
	}
	for _, g := range groups {
		p := "rank " + g.list[0]
		if len(g.list) > 1 {
			p = "ranks " + joinAnd(g.list)
		}
		p += " via " + g.via
		if g.host != "" {
			p += " on " + g.host
		}
		parts = append(parts, p)
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("and %d more connections", other))
	}
	return strings.Join(parts, ", ")
}

// ChannelList writes channel numbers as NCCL does (%02d), with runs of
// three or more as ranges: "channels 00-03, 08 and 10".
func ChannelList(channels []int) string {
	ch := slices.Clone(channels)
	slices.Sort(ch)
	ch = slices.Compact(ch)
	if len(ch) == 0 {
		return ""
	}
	var items []string
	for i := 0; i < len(ch); {
		j := i
		for j+1 < len(ch) && ch[j+1] == ch[j]+1 {
			j++
		}
		if j-i >= 2 {
			items = append(items, fmt.Sprintf("%02d-%02d", ch[i], ch[j]))
		} else {
			for k := i; k <= j; k++ {
				items = append(items, fmt.Sprintf("%02d", ch[k]))
			}
		}
		i = j + 1
	}
	if len(items) > shownChannelItems {
		items = append(items[:shownChannelItems], fmt.Sprintf("%d more", len(items)-shownChannelItems))
	}
	if len(items) == 1 && len(ch) == 1 {
		return "channel " + items[0]
	}
	return "channels " + joinAnd(items)
}

// joinAnd writes "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
