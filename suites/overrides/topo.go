package overrides

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// judgeTopo judges the topology file NCCL_TOPO_FILE names: NCCL builds
// its system from the file before it probes (src/graph/topo.cc,
// ncclTopoGetSystem), so a device the node lacks, a gdr="0" on a NIC or
// a NIC placed under the other CPU is what NCCL plans with.
func judgeTopo(ev *node.Evidence, t *node.TopoFile) (Verdict, string) {
	if t.Err != "" {
		return breaks("cannot be used: %s; fix the path or unset it", t.Err)
	}
	if why := foreignDevices(ev, t); why != "" {
		return Breaks, why
	}
	if why := gdrOff(ev, t); why != "" {
		return Breaks, why
	}
	if why := misplaced(ev, t); why != "" {
		return Breaks, why
	}
	return fits()
}

// foreignDevices: a GPU or NIC bus id the node does not have means the
// file describes another machine.
func foreignDevices(ev *node.Evidence, t *node.TopoFile) string {
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

// gdrOff: a <net gdr="..."> the file gives is NCCL's word on whether the
// NIC can do GPUDirect RDMA (src/graph/topo.cc:423, xmlGetAttrIntDefault,
// strtol base 0, src/graph/xml.h:119-124); NCCL asks the NIC only where
// the attribute is absent (:1655). 0 turns GPUDirect RDMA off through it.
func gdrOff(ev *node.Evidence, t *node.TopoFile) string {
	var off []string
	for _, n := range ev.NICs {
		v, ok := t.GDR[strings.ToLower(n.BusID)]
		if ok && strtoll(v).value == 0 {
			off = append(off, fmt.Sprintf("%s (%s) gdr=%q", n.Name, n.BusID, v))
		}
	}
	if len(off) == 0 {
		return ""
	}
	return fmt.Sprintf("tells NCCL %d NIC(s) cannot do GPUDirect RDMA (%s): NCCL stages every transfer through them in host memory; remove the gdr attribute, regenerate the file here (NCCL_TOPO_DUMP_FILE) or unset it",
		len(off), strings.Join(firstN(off, 3), ", "))
}

// misplaced: where the file puts each GPU's nearest NIC farther than
// GPUDirect RDMA reaches (the other CPU: SYS) but the node has it near,
// NCCL plans by the file and turns GPUDirect RDMA off for that GPU.
func misplaced(ev *node.Evidence, t *node.TopoFile) string {
	limit := gdrLimit(ev)
	var far []string
	for _, g := range ev.GPUs {
		p, ok := ev.PreferredPath(g.BusID)
		nic, nok := ev.NIC(p.NIC)
		if !ok || !nok || ncclDistance(p.Class, ncclVersion(ev)) > limit {
			continue
		}
		c, ok := t.Class(g.BusID, nic.BusID)
		if ok && ncclDistance(c, ncclVersion(ev)) > limit {
			far = append(far, fmt.Sprintf("%s -> %s is %s here, %s in the file", g.BusID, p.NIC, p.Class, c))
		}
	}
	if len(far) == 0 {
		return ""
	}
	return fmt.Sprintf("places NICs away from their GPUs (%s): NCCL plans by the file and uses no GPUDirect RDMA for %d GPU(s); regenerate it here (NCCL_TOPO_DUMP_FILE) or unset it",
		strings.Join(firstN(far, 3), ", "), len(far))
}
