// Package overrides judges the NCCL and UCX settings a job on a node
// inherits (harness/node.Overrides) against the node's GPU <-> NIC paths:
// whether each fits, or breaks the direct path and why. It runs no Ginkgo,
// so the topology suite's spec, inventory and compare share one judgement.
package overrides

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// Verdict is the audit's word on one setting.
type Verdict string

const (
	Fits      Verdict = "fits"
	Breaks    Verdict = "breaks the direct path"
	Shadowed  Verdict = "shadowed"   // an earlier setting of the name wins
	NotJudged Verdict = "not judged" // an MCA parameter: listed only
)

// Judged is one inherited setting and the audit's word on it.
type Judged struct {
	node.Setting
	Verdict Verdict `json:"verdict"`
	Why     string  `json:"why,omitempty"` // why it breaks the path, and the fix
}

// Judge judges every setting of ev.Overrides, in their order; none where
// the node inherits nothing.
func Judge(ev *node.Evidence) []Judged {
	if ev.Overrides == nil {
		return nil
	}
	var out []Judged
	for _, s := range ev.Overrides.Settings {
		j := Judged{Setting: s, Verdict: Fits}
		switch {
		case s.Shadowed:
			j.Verdict = Shadowed
		case s.MCA:
			j.Verdict = NotJudged
		default:
			if j.Why = Why(ev, s); j.Why != "" {
				j.Verdict = Breaks
			}
		}
		out = append(out, j)
	}
	return out
}

// Why is why a setting breaks the direct path on the node, "" if it does
// not.
func Why(ev *node.Evidence, s node.Setting) string {
	v := strings.TrimSpace(s.Value)
	on := v == "1" || strings.EqualFold(v, "true") || strings.EqualFold(v, "yes")
	switch s.Name {
	case "NCCL_P2P_DISABLE":
		if on && len(ev.GPUs) > 1 {
			return "NVLink/PCIe peer-to-peer between this node's GPUs is off, NCCL stages through host memory (SHM); unset it"
		}
	case "NCCL_SHM_DISABLE":
		if on && len(ev.GPUs) > 1 {
			return "shared-memory transport off: where P2P is not possible NCCL falls to the network; unset it"
		}
	case "NCCL_IB_DISABLE":
		if on && len(ev.NICs) > 0 {
			return fmt.Sprintf("InfiniBand/RoCE off: NCCL uses sockets, never GPUDirect RDMA, on a node with %d RDMA NIC(s); unset it", len(ev.NICs))
		}
	case "NCCL_NET_GDR_READ":
		if v == "0" && len(ev.NICs) > 0 {
			return "NICs read send buffers from host memory, not GPU memory: sends are staged; unset it"
		}
	case "NCCL_NET_GDR_LEVEL":
		return judgeGDRLevel(ev, v)
	case "NCCL_IB_HCA":
		return judgeIBHCA(ev, v)
	case "UCX_NET_DEVICES":
		return judgeUCXDevices(ev, v)
	case "UCX_TLS":
		return judgeUCXTLS(v)
	case "NCCL_TOPO_FILE":
		if t := ev.Overrides.Topo; t != nil {
			return judgeTopo(ev, t)
		}
	}
	return ""
}

// gdrLevels maps NCCL_NET_GDR_LEVEL's names and its old integers (0 LOC,
// 1 PIX, 2 PXB, 3 PHB, 4 SYS) to path ranks; LOC is 0, below every path.
var gdrLevels = map[string]int{"LOC": 0, "PIX": node.PathPIX.Rank(), "PXB": node.PathPXB.Rank(), "PHB": node.PathPHB.Rank(), "SYS": node.PathSYS.Rank()}

func judgeGDRLevel(ev *node.Evidence, v string) string {
	level, ok := gdrLevels[strings.ToUpper(v)]
	if !ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 4 {
			return "not a level NCCL knows (LOC, PIX, PXB, PHB, SYS): NCCL ignores it; fix or unset it"
		}
		level = gdrLevels[[]string{"LOC", "PIX", "PXB", "PHB", "SYS"}[n]]
	}
	var off []string
	for _, g := range ev.GPUs {
		p, ok := ev.PreferredPath(g.BusID)
		if !ok {
			continue
		}
		rank := p.Class.Rank()
		if p.Class == node.PathP2C {
			rank = node.PathPXB.Rank() // NCCL counts C2C as PXB for GDR
		}
		if rank > level {
			off = append(off, fmt.Sprintf("%s -> %s is %s", g.BusID, p.NIC, p.Class))
		}
	}
	if len(off) == 0 {
		return ""
	}
	return fmt.Sprintf("GPUDirect RDMA off for %d GPU(s) (%s): the level is below the path; unset it (NCCL's default allows PXB) or set it to the node's path class", len(off), strings.Join(firstN(off, 3), ", "))
}

// judgeIBHCA reads NCCL_IB_HCA as NCCL does: a leading ^ excludes, a
// leading = matches names exactly (else by prefix), entries are
// name[:port] separated by commas.
func judgeIBHCA(ev *node.Evidence, v string) string {
	exclude := strings.HasPrefix(v, "^")
	v = strings.TrimPrefix(v, "^")
	exact := strings.HasPrefix(v, "=")
	v = strings.TrimPrefix(v, "=")
	var named []string // NICs the list matches
	var absent []string
	for _, e := range strings.Split(v, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(e), ":")
		if name == "" {
			continue
		}
		var hit []string
		for _, n := range ev.NICs {
			if n.Name == name || !exact && strings.HasPrefix(n.Name, name) {
				hit = append(hit, n.Name)
			}
		}
		if len(hit) == 0 {
			absent = append(absent, name)
		}
		named = append(named, hit...)
	}
	if exclude {
		var lost []string
		for _, g := range ev.GPUs {
			if p, ok := ev.PreferredPath(g.BusID); ok && slices.Contains(named, p.NIC) {
				lost = append(lost, fmt.Sprintf("%s's rail %s", g.BusID, p.NIC))
			}
		}
		if len(lost) > 0 {
			return fmt.Sprintf("excludes %s: those GPUs go to a farther NIC; remove them from the list", strings.Join(firstN(lost, 3), ", "))
		}
		return ""
	}
	if len(absent) > 0 {
		return fmt.Sprintf("names %s, not on this node (it has %s): NCCL finds no such NIC; set it from `gdrcheck inventory --format env`", strings.Join(absent, ", "), nicNames(ev))
	}
	return remoteNICs(ev, named, "set it from `gdrcheck inventory --format env`")
}

// remoteNICs is why the NICs a job is limited to are far from its GPUs:
// each GPU whose nearest NIC among them is SYS (across the CPU
// interconnect, where NCCL never uses GPUDirect RDMA), "" where none is.
func remoteNICs(ev *node.Evidence, nics []string, fix string) string {
	var far []string
	for _, g := range ev.GPUs {
		best := node.PathClass("")
		for _, p := range ev.Paths {
			if p.GPU == g.BusID && slices.Contains(nics, p.NIC) && (best == "" || p.Class.Rank() < best.Rank()) {
				best = p.Class
			}
		}
		if best == node.PathSYS {
			far = append(far, g.BusID)
		}
	}
	if len(far) == 0 {
		return ""
	}
	return fmt.Sprintf("%s is SYS to %d GPU(s) (%s): no GPUDirect RDMA for them; %s", strings.Join(nics, ", "), len(far), strings.Join(firstN(far, 3), ", "), fix)
}

// judgeUCXDevices reads UCX_NET_DEVICES (all, or dev:port entries): an
// RDMA device not on the node, or one SYS to every GPU, breaks the path;
// a network interface (eth0) is for TCP and not judged.
func judgeUCXDevices(ev *node.Evidence, v string) string {
	if strings.EqualFold(v, "all") {
		return ""
	}
	var named, absent []string
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		name, _, port := strings.Cut(e, ":")
		if _, ok := ev.NIC(name); ok {
			named = append(named, name)
		} else if port && name != "" {
			absent = append(absent, e)
		}
	}
	if len(absent) > 0 {
		return fmt.Sprintf("names %s, not on this node (it has %s); set it from `gdrcheck inventory --format env`", strings.Join(absent, ", "), nicNames(ev))
	}
	return remoteNICs(ev, named, "set it from `gdrcheck inventory --format env`")
}

// judgeUCXTLS: a transport list without a cuda transport cannot touch GPU
// memory directly (every GPU buffer is staged or refused); an exclusion
// that names one removes it.
func judgeUCXTLS(v string) string {
	lv := strings.ToLower(v)
	if strings.HasPrefix(lv, "^") {
		for _, t := range strings.Split(lv[1:], ",") {
			if t = strings.TrimSpace(t); strings.HasPrefix(t, "cuda") || t == "gdr_copy" {
				return fmt.Sprintf("excludes %s: UCX loses that GPU path; remove it from the list", t)
			}
		}
		return ""
	}
	for _, t := range strings.Split(lv, ",") {
		if t = strings.TrimSpace(t); t == "all" || strings.HasPrefix(t, "cuda") {
			return ""
		}
	}
	return "no cuda transport (cuda_copy, cuda_ipc): UCX cannot reach GPU memory directly; add cuda_copy,cuda_ipc (and gdr_copy where installed) or unset it"
}

// judgeTopo is why a topology file does not describe this node: a GPU or
// NIC bus id it names that the node does not have. NCCL would plan its
// rings and its GDR decisions for another machine.
func judgeTopo(ev *node.Evidence, t *node.TopoFile) string {
	if t.Err != "" {
		return fmt.Sprintf("cannot be used: %s; fix the path or unset it", t.Err)
	}
	have := map[string]bool{}
	for _, g := range ev.GPUs {
		have[strings.ToLower(g.BusID)] = true
	}
	for _, n := range ev.NICs {
		have[strings.ToLower(n.BusID)] = true
	}
	var foreign []string
	for _, id := range append(slices.Clone(t.GPUs), t.NICs...) {
		if !have[id] {
			foreign = append(foreign, id)
		}
	}
	if len(foreign) == 0 {
		return ""
	}
	return fmt.Sprintf("describes another machine: %d of its GPUs and NICs are not this node's (%s); regenerate it here (NCCL_TOPO_DUMP_FILE) or unset it", len(foreign), strings.Join(firstN(foreign, 3), ", "))
}

func nicNames(ev *node.Evidence) string {
	if len(ev.NICs) == 0 {
		return "no RDMA NICs"
	}
	var n []string
	for _, nic := range ev.NICs {
		n = append(n, nic.Name)
	}
	return strings.Join(firstN(n, 8), ", ")
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}
