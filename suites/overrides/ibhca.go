package overrides

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// hcaEntry is one entry of an NCCL device list as parseStringList reads
// it (src/misc/utils.cc:189-214, NCCL 2.30): entries split at every ','
// by strtok_r, so empty ones vanish and nothing is trimmed; then
// name[:port[:rail[:plane]]] split at ':' (strsep), the port by atoi,
// -1 where absent or empty.
type hcaEntry struct {
	raw, name string
	port      int
}

// ibHCAList is NCCL_IB_HCA as ncclIbInitDevices reads it
// (src/transport/net_ib/init.cc:320-324): one leading '^' excludes, then
// one leading '=' matches whole names; at most MAX_IB_DEVS (32,
// src/transport/net_ib/common.h:112) entries are kept.
type ibHCAList struct {
	exclude, exact bool
	entries        []hcaEntry
}

func parseIBHCA(v string) ibHCAList {
	var l ibHCAList
	if strings.HasPrefix(v, "^") {
		l.exclude, v = true, v[1:]
	}
	if strings.HasPrefix(v, "=") {
		l.exact, v = true, v[1:]
	}
	for _, e := range strings.Split(v, ",") {
		name, rest, _ := strings.Cut(e, ":")
		if name == "" || len(l.entries) == 32 {
			continue
		}
		port := -1
		if p, _, _ := strings.Cut(rest, ":"); p != "" {
			port = atoi(p)
		}
		l.entries = append(l.entries, hcaEntry{raw: e, name: name, port: port})
	}
	return l
}

// atoi is C's atoi, strtol base 10: leading space, a sign, digits; 0
// where there are none.
func atoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+"), "")
	n := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 1<<31; i++ {
		n = n*10 + int(s[i]-'0')
	}
	if neg {
		return -n
	}
	return n
}

// matches is matchIfList (src/misc/utils.cc:219-245): a prefix of the
// device name, or the whole name where exact, and a port of -1 matches
// any port.
func (l ibHCAList) matches(dev string, port int) (hcaEntry, bool) {
	if len(l.entries) == 0 {
		return hcaEntry{}, true
	}
	for _, e := range l.entries {
		if (dev == e.name || !l.exact && strings.HasPrefix(dev, e.name)) && (e.port == -1 || e.port == port) {
			return e, true
		}
	}
	return hcaEntry{}, false
}

// used are the NIC ports NCCL takes: the active ones (init.cc:365) that
// the list matches, or does not where it excludes (:373).
func (l ibHCAList) used(ev *node.Evidence) (nics []string, hit map[string]bool) {
	hit = map[string]bool{}
	for _, n := range ev.NICs {
		took := false
		for _, p := range n.Ports {
			if p.State != "" && !strings.Contains(strings.ToUpper(p.State), "ACTIVE") {
				continue
			}
			e, ok := l.matches(n.Name, int(p.Port))
			if ok {
				hit[e.raw] = true
			}
			if ok != l.exclude && !took {
				nics, took = append(nics, n.Name), true
			}
		}
	}
	return nics, hit
}

// judgeIBHCA judges NCCL_IB_HCA by the NIC ports NCCL will take from
// it: none, or none near enough for GPUDirect RDMA to some GPU, breaks.
func judgeIBHCA(ev *node.Evidence, v string) (Verdict, string) {
	if len(ev.NICs) == 0 {
		return fits()
	}
	l := parseIBHCA(v)
	nics, hit := l.used(ev)
	var dead []string
	for _, e := range l.entries {
		if !hit[e.raw] {
			dead = append(dead, deadEntry(ev, e))
		}
	}
	if len(nics) == 0 {
		return breaks("NCCL takes no NIC port from it (%s; the node has %s): NET/IB finds no device and NCCL falls back to sockets; set it from `gdrcheck inventory --format env`",
			orNone(dead), nicNames(ev))
	}
	far := gdrFar(ev, nics)
	if len(far) == 0 {
		return fits()
	}
	lost := ""
	if len(dead) > 0 && !l.exclude {
		lost = "; " + strings.Join(dead, ", ")
	}
	return breaks("NCCL uses only %s%s: %d GPU(s) have none of them near enough for GPUDirect RDMA (%s); set it from `gdrcheck inventory --format env` or unset it",
		strings.Join(firstN(nics, 8), ", "), lost, len(far), strings.Join(firstN(far, 3), ", "))
}

// deadEntry says why an entry matches no port of the node.
func deadEntry(ev *node.Evidence, e hcaEntry) string {
	if t := strings.TrimSpace(e.name); t != e.name {
		return fmt.Sprintf("names %q, which matches no NIC: NCCL does not trim spaces (src/misc/utils.cc:197)", e.raw)
	}
	if n, ok := ev.NIC(e.name); ok && e.port != -1 {
		return fmt.Sprintf("%q names port %d, which %s lacks or has down (it has %d port(s))", e.raw, e.port, n.Name, len(n.Ports))
	}
	return fmt.Sprintf("names %s, not on this node", e.raw)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "it excludes every NIC"
	}
	return strings.Join(firstN(s, 3), ", ")
}

// gdrFar are the GPUs whose nearest NIC among nics is farther than the
// level NCCL allows GPUDirect RDMA at (src/graph/paths.cc:511-528).
func gdrFar(ev *node.Evidence, nics []string) []string {
	limit := gdrLimit(ev)
	var far []string
	for _, g := range ev.GPUs {
		best := -1
		for _, p := range ev.Paths {
			if p.GPU != g.BusID || !contains(nics, p.NIC) {
				continue
			}
			if d := ncclDistance(p.Class, ncclVersion(ev)); best < 0 || d < best {
				best = d
			}
		}
		if best > limit {
			far = append(far, fmt.Sprintf("%s is %s from them", g.BusID, levelName[best]))
		}
	}
	return far
}

// gdrLimit is the farthest path NCCL uses GPUDirect RDMA over: P2C by
// default where NCCL knows P2C (NCCL_NET_GDR_C2C=1, src/graph/paths.cc:465,
// :511), else PXB; an honoured NCCL_NET_GDR_LEVEL replaces it (:512-513).
func gdrLimit(ev *node.Evidence) int {
	limit := levelPXB
	if indexOf(levelNames(ncclVersion(ev)), "P2C") >= 0 {
		limit = levelP2C
	}
	if ev.Overrides != nil {
		if s, ok := ev.Overrides.Effective("NCCL_NET_GDR_LEVEL"); ok {
			if l, _ := level(s.Value, ncclVersion(ev)); l >= 0 {
				limit = l
			}
		}
	}
	return limit
}

func contains(s []string, v string) bool { return indexOf(s, v) >= 0 }
