package knownbad

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// NCCLFromTests names nccl-tests as where the NCCL version was read.
const NCCLFromTests = "nccl-tests"

// FromEvidence reads the facts from a node's evidence. ran is the NCCL
// version nccl-tests reported, "" where none ran: it wins over the
// library the loader would pick (Evidence.NCCL), since it is what ran.
func FromEvidence(ev *node.Evidence, ran string) Facts {
	f := Facts{Kernel: ev.Host.Kernel, DriverFlavour: ev.Kernel.DriverFlavour, RDMANICs: len(ev.NICs), MOFED: ev.Kernel.MOFED}
	if f.Kernel == "" {
		f.Kernel = ev.Kernel.Release
	}
	switch {
	case ran != "":
		f.NCCL, f.NCCLFrom = ran, NCCLFromTests
	case ev.NCCL != nil && ev.NCCL.Version != "":
		f.NCCL, f.NCCLFrom = ev.NCCL.Version, ev.NCCL.Path
	}
	f.Peermem = peermemState(ev.Kernel)
	if ev.Probed {
		f.Mechanism = ev.Mechanism().Mechanism
		if ev.Verbs.Available {
			f.RDMACore = ev.Verbs.RDMACoreVersion
		}
	}
	f.GPUDMABuf, f.GPUDMABufWhy = gpuDMABuf(ev)
	f.NICDMABuf, f.NICDMABufWhy = nicDMABuf(ev)
	f.RoCEMTUMin, f.RoCEMTUMax = roceMTUs(ev.NICs)
	f.Hopper = hopper(ev.GPUs)
	f.ForceFlush = inherited(ev.Overrides, "NCCL_NET_FORCE_FLUSH")
	f.GDRC2C = inherited(ev.Overrides, "NCCL_NET_GDR_C2C")
	f.GDRLevel = inherited(ev.Overrides, "NCCL_NET_GDR_LEVEL")
	for _, g := range ev.GPUs {
		if p, ok := ev.PreferredPath(g.BusID); ok && p.Class == node.PathP2C {
			f.C2CRails++
		}
	}
	return f
}

// gdrLevelReachesPHB says whether NCCL_NET_GDR_LEVEL lets GPU Direct RDMA
// cross the CPU's root complex: PHB or SYS by name (NCCL matches them
// case-sensitively), 3 or more in the old numbering (graph/paths.cc
// ncclGetLevel: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and 5 SYS).
func gdrLevelReachesPHB(v string) bool {
	v = strings.TrimSpace(v)
	if v == "PHB" || v == "SYS" {
		return true
	}
	n, err := strconv.Atoi(v)
	return err == nil && n >= 3
}

// roceMTUs is the range of the active MTUs of the active RoCE ports.
func roceMTUs(nics []node.NIC) (low, high int) {
	for _, n := range nics {
		for _, p := range n.Ports {
			if p.LinkLayer != "Ethernet" || !p.Active() || p.ActiveMTU <= 0 {
				continue
			}
			if low == 0 || p.ActiveMTU < low {
				low = p.ActiveMTU
			}
			high = max(high, p.ActiveMTU)
		}
	}
	return low, high
}

// hopper: Yes when every GPU is named as a Hopper part, No when one is
// named otherwise, Unknown without names.
func hopper(gpus []node.GPU) Tri {
	t := Unknown
	for _, g := range gpus {
		name := g.Name
		if name == "" {
			name = g.Model
		}
		if name == "" {
			return Unknown
		}
		if !strings.Contains(name, "H100") && !strings.Contains(name, "H200") && !strings.Contains(name, "H800") {
			return No
		}
		t = Yes
	}
	return t
}

// inherited is the value of the setting that wins, "" where none is set.
func inherited(o *node.Overrides, name string) string {
	if o == nil {
		return ""
	}
	for _, s := range o.Settings {
		if s.Name == name && !s.Shadowed && !s.MCA {
			return s.Value
		}
	}
	return ""
}

// FromNode reads the facts of a node of results.json: from its evidence
// where it kept it (ev, nil otherwise), else from its facts. Its "nccl"
// fact is the NCCL in effect either way, nccl-tests' where one ran.
func FromNode(n results.Node, ev *node.Evidence) Facts {
	nccl := n.Fact("nccl")
	if ev != nil {
		f := FromEvidence(ev, "")
		if nccl != "" && nccl != f.NCCL {
			f.NCCL, f.NCCLFrom = nccl, NCCLFromTests
		}
		return f
	}
	f := Facts{NCCL: nccl, Kernel: n.Fact("kernel"), DriverFlavour: n.Fact("driver_flavour"), Peermem: n.Fact("peermem"),
		Mechanism: n.Fact("mechanism"), MOFED: n.Fact("mofed")}
	f.RDMANICs, _ = strconv.Atoi(n.Fact("rdma_nics"))
	f.RDMACore, _ = strconv.Atoi(n.Fact("rdma_core"))
	if f.DriverFlavour == node.FlavourProprietary {
		f.GPUDMABuf, f.GPUDMABufWhy = No, "the proprietary kernel modules export no dma-buf"
	}
	switch {
	case f.Kernel != "" && !node.KernelAtLeast(f.Kernel, 5, 12):
		f.NICDMABuf, f.NICDMABufWhy = No, "kernel "+f.Kernel+" is older than 5.12"
	case f.RDMACore > 0 && f.RDMACore < 34:
		f.NICDMABuf, f.NICDMABufWhy = No, fmt.Sprintf("rdma-core %d is older than 34", f.RDMACore)
	}
	return f
}

// peermemState is nvidia_peermem as NCCL <= 2.22.3 sees it: registered
// only with a memory_peers/nv_mem or nv_mem_nc client, the files it looks
// for.
func peermemState(k node.KernelFacts) string {
	switch {
	case !k.Peermem.Loaded:
		return PeermemAbsent
	case hasClient(k.PeerClients, "nv_mem") || hasClient(k.PeerClients, "nv_mem_nc"):
		return PeermemRegistered
	}
	return PeermemLoaded
}

func hasClient(clients map[string]string, name string) bool {
	_, ok := clients[name]
	return ok
}

// gpuDMABuf: the closed modules never export; the probe's export on
// every GPU decides otherwise; unknown without it.
func gpuDMABuf(ev *node.Evidence) (Tri, string) {
	if ev.Kernel.DriverFlavour == node.FlavourProprietary {
		return No, "the proprietary kernel modules export no dma-buf"
	}
	if !ev.Probed || !ev.CUDA.Available || len(ev.CUDA.GPUs) == 0 {
		return Unknown, ""
	}
	for _, g := range ev.CUDA.GPUs {
		switch {
		case g.DMABufSupported != nil && *g.DMABufSupported != 1:
			return No, fmt.Sprintf("GPU %s: DMA_BUF_SUPPORTED (124) is %d", g.BusID, *g.DMABufSupported)
		case g.Export.Tried && !g.Export.OK:
			return No, fmt.Sprintf("GPU %s: dma-buf export failed: %s", g.BusID, g.Export.Error)
		case !g.Export.OK:
			return Unknown, ""
		}
	}
	return Yes, ""
}

// nicDMABuf: a kernel before 5.12 or an rdma-core without
// ibv_reg_dmabuf_mr cannot register a dma-buf; the probe's registration
// of an exported buffer decides otherwise; unknown without it.
func nicDMABuf(ev *node.Evidence) (Tri, string) {
	rel := ev.Host.Kernel
	if rel == "" {
		rel = ev.Kernel.Release
	}
	if rel != "" && !node.KernelAtLeast(rel, 5, 12) {
		return No, "kernel " + rel + " is older than 5.12"
	}
	if !ev.Probed || !ev.Verbs.Available {
		return Unknown, ""
	}
	v := ev.Verbs
	switch {
	case v.RDMACoreVersion > 0 && v.RDMACoreVersion < 34:
		return No, fmt.Sprintf("rdma-core %d is older than 34", v.RDMACoreVersion)
	case !v.HasRegDMABufMR:
		return No, "libibverbs has no ibv_reg_dmabuf_mr"
	}
	exported := map[string]bool{}
	for _, g := range ev.CUDA.GPUs {
		exported[g.BusID] = g.Export.OK
	}
	proven := Unknown
	for _, r := range v.Registrations {
		if r.Path != node.PathDMABuf || !exported[r.GPU] {
			continue
		}
		if !r.OK {
			return No, fmt.Sprintf("GPU %s -> %s: dma-buf registration failed: %s", r.GPU, r.NIC, r.Error)
		}
		proven = Yes
	}
	return proven, ""
}
