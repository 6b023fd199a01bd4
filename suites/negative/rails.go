package negative

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// railCheck is what the NICs NCCL's connections went through say about
// the node's rails (docs/field-causes.md #30).
type railCheck struct {
	bad, notes []string
	judged     int // GPUs whose every NIC was compared with their rail
	unplaced   int // connections not tied to a GPU of this node and a named NIC
}

// judgeRails compares, for each GPU, the NICs its network connections
// went through (nccl.LogSummary.NICs) with its rail NIC, the closest one
// (node.Evidence.PreferredPath). A NIC as close as the rail NIC (two
// NICs under the GPU's PCIe switch) is where NCCL may put some channels:
// noted, not a finding. A farther one, or one the node does not have, is
// a finding naming the GPU, the NIC, the rail NIC and the likely cause,
// unless NCCL_CROSS_NIC=1 told NCCL it may cross rails.
func judgeRails(log *nccl.LogSummary, ev *node.Evidence) railCheck {
	var r railCheck
	type used struct {
		conns    int
		channels []int
		pxn      bool
	}
	byGPU := map[string]map[string]*used{}
	for _, u := range log.NICs {
		if _, ok := gpuOf(ev, u.GPU); !ok || u.NIC == "" {
			r.unplaced += u.Connections
			continue
		}
		if byGPU[u.GPU] == nil {
			byGPU[u.GPU] = map[string]*used{}
		}
		x := byGPU[u.GPU][u.NIC]
		if x == nil {
			x = &used{}
			byGPU[u.GPU][u.NIC] = x
		}
		x.conns += u.Connections
		x.channels = append(x.channels, u.Channels...)
		x.pxn = x.pxn || u.PXN
	}
	if r.unplaced > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%d network connection(s) not judged: the log ties them to no GPU of this node (no comm line with the rank's busId) or no named NIC (no NET/<net> : Using list)", r.unplaced))
	}
	crossNIC := log.Env["NCCL_CROSS_NIC"] == "1"
	cause := railCause(log, ev)
	for _, g := range ev.GPUs {
		nics := byGPU[g.BusID]
		if len(nics) == 0 {
			continue
		}
		rail, ok := ev.PreferredPath(g.BusID)
		if !ok {
			r.notes = append(r.notes, fmt.Sprintf("%s has no RDMA NIC of its own: its connections through %s are not judged", suites.GPUName(g), strings.Join(slices.Sorted(maps.Keys(nics)), ", ")))
			continue
		}
		r.judged++
		for _, name := range slices.Sorted(maps.Keys(nics)) {
			x := nics[name]
			what := fmt.Sprintf("%d connection(s)", x.conns)
			if c := nccl.ChannelList(x.channels); c != "" {
				what += " (" + c + ")"
			}
			if x.pxn {
				what += ", some relayed for other GPUs (PXN),"
			}
			if name == rail.NIC {
				r.notes = append(r.notes, fmt.Sprintf("%s: %s through its rail NIC %s (%s)", suites.GPUName(g), what, name, rail.Class))
				continue
			}
			p, found := pathTo(ev, g.BusID, name)
			if found && p.Class.Rank() == rail.Class.Rank() && p.SameNUMA == rail.SameNUMA {
				r.notes = append(r.notes, fmt.Sprintf("%s: %s through %s, as close to it as its rail NIC %s (%s)", suites.GPUName(g), what, name, rail.NIC, rail.Class))
				continue
			}
			where := "a NIC this node's evidence does not list"
			if found {
				where = string(p.Class) + " from it"
			}
			line := fmt.Sprintf("%s sent %s through %s (%s), not its rail NIC %s (%s)", suites.GPUName(g), what, name, where, rail.NIC, rail.Class)
			if crossNIC {
				r.notes = append(r.notes, line+": NCCL_CROSS_NIC=1 lets NCCL cross rails, so not judged")
				continue
			}
			r.bad = append(r.bad, line+": "+cause)
		}
	}
	return r
}

// railCause is the likely cause of a channel off its rail, from the
// settings NCCL echoed: a topology file describing other wiring, else
// NCCL_IB_HCA (NVIDIA/nccl#1591, #366: a wrong list, or a name without
// "=" matching by prefix), else a selection NCCL made on its own.
func railCause(log *nccl.LogSummary, ev *node.Evidence) string {
	exact := "NCCL_IB_HCA==" + strings.Join(railNICs(ev), ",")
	if v, ok := log.Env["NCCL_TOPO_FILE"]; ok {
		return fmt.Sprintf("NCCL_TOPO_FILE=%s tells NCCL another wiring than this node's, and NCCL placed its channels by it: fix the file or unset it", v)
	}
	if v, ok := log.Env["NCCL_IB_HCA"]; ok {
		why := "it leaves NCCL the wrong NICs"
		if !strings.HasPrefix(strings.TrimPrefix(v, "^"), "=") {
			why = "without a leading \"=\" each name matches by prefix (mlx5 also matches mlx5_bond_0), or it leaves NCCL the wrong NICs"
		}
		return fmt.Sprintf("NCCL_IB_HCA=%s: %s; name each rail NIC exactly: %s (gdrcheck inventory --format env writes it)", v, why, exact)
	}
	return "NCCL chose it with neither NCCL_IB_HCA nor NCCL_TOPO_FILE echoed in its log: pin the rails with " + exact + " (gdrcheck inventory --format env writes it)"
}

// railNICs are the node's rail NICs, each once, in name order.
func railNICs(ev *node.Evidence) []string {
	var out []string
	for _, g := range ev.GPUs {
		if p, ok := ev.PreferredPath(g.BusID); ok && !slices.Contains(out, p.NIC) {
			out = append(out, p.NIC)
		}
	}
	slices.Sort(out)
	return out
}

func gpuOf(ev *node.Evidence, bus string) (node.GPU, bool) {
	for _, g := range ev.GPUs {
		if bus != "" && g.BusID == bus {
			return g, true
		}
	}
	return node.GPU{}, false
}

func pathTo(ev *node.Evidence, gpu, nic string) (node.Path, bool) {
	for _, p := range ev.Paths {
		if p.GPU == gpu && p.NIC == nic {
			return p, true
		}
	}
	return node.Path{}, false
}
