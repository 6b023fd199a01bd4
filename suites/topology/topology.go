// Package topology holds the specs that check a node is wired for
// GPUDirect RDMA: each GPU near an RDMA NIC on its own NUMA node, links at
// full width and speed, no ACS redirect or translating IOMMU in the way,
// working peer access between NVLink peers and between GPUs under one PCIe
// switch, and automatic NUMA balancing off. On a virtual machine a path
// beyond the limit is named as the VM's flattened tree, or taken from
// NCCL_TOPO_FILE where it places both ends.
package topology

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

// The running spec's inputs, set by BeforeEach. Ginkgo builds its tree
// once per process and runs one spec at a time, so the functions that
// register the specs share them, as one Describe closure's locals did.
var ev *node.Evidence
var cfg suites.Config

func requireNICs() {
	if len(ev.NICs) == 0 {
		suites.NotApplicable("no RDMA NICs on this node (" + nicAbsence(ev) + "): GPU <-> NIC checks do not apply")
	}
}

var _ = suites.Describe("topology", func() {
	BeforeEach(func() {
		ev = suites.Evidence()
		cfg = suites.Current().Config
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Print(diagnostics(ev))
		}
	})

	placementSpecs()
	peerPathSpecs()
	linkHealthSpecs()
	tuningSpecs()
})

// placementSpecs registers the specs of inherited overrides, and each GPU
// near its NIC on its NUMA node at full link speed.
func placementSpecs() {
	It("inherits no NCCL or UCX override that breaks the direct path", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		if ev.Overrides == nil {
			suites.Note("no NCCL_* or UCX_* in the environment, no nccl.conf, no MCA parameter file")
			return
		}
		bad, notes := auditOverrides(ev)
		for _, n := range notes {
			suites.Note("%s", n)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("gives every GPU an RDMA NIC within the GPUDirect path limit", func() {
		suites.Remedy(results.ActionInvestigate, results.ScopeGPU)
		requireNICs()
		var bad []string
		for _, g := range ev.GPUs {
			p, ok := ev.PreferredPath(g.BusID)
			if !ok {
				bad = append(bad, fmt.Sprintf("%s has no path to any NIC", suites.GPUName(g)))
				continue
			}
			if withinGDRLimit(p.Class, cfg.MaxGDRPath) {
				continue
			}
			if vmBad, note, vm := vmPath(ev, g, p, cfg.MaxGDRPath); vm {
				if note != "" {
					suites.Note("%s", note)
				} else {
					// A VM's flattened tree: a topology file of
					// the host fixes it, not a slot.
					suites.Remedy(results.ActionFixConfig, results.ScopeNode)
					bad = append(bad, vmBad)
				}
				continue
			}
			bad = append(bad, fmt.Sprintf("%s -> %s is %s; GDR expected at %s", suites.GPUName(g), p.NIC, p.Class, allowed(cfg.MaxGDRPath)))
		}
		suites.Record(results.Metric{Name: "gpus_within_gdr_path", Value: float64(len(ev.GPUs) - len(bad)), Unit: "GPUs"})
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("puts every GPU on the NUMA node of its preferred NIC", func() {
		suites.Remedy(results.ActionInvestigate, results.ScopeGPU)
		requireNICs()
		if cfg.AllowCrossNUMA {
			suites.NotApplicable("cross-NUMA NICs allowed by configuration")
		}
		var bad []string
		for _, g := range ev.GPUs {
			p, ok := ev.PreferredPath(g.BusID)
			if !ok || p.SameNUMA {
				continue
			}
			n, _ := ev.NIC(p.NIC)
			bad = append(bad, fmt.Sprintf("%s is on NUMA node %d, its NIC %s on %d; expected the same node", suites.GPUName(g), g.NUMANode, p.NIC, n.NUMANode))
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("runs every GPU and NIC link at its maximum width and speed", func() {
		suites.Remedy(results.ActionCheckCable, results.ScopeLink)
		var bad, unjudged []string
		for _, g := range ev.GPUs {
			if down, what := g.Downtrained(); down {
				bad = append(bad, fmt.Sprintf("%s link is downtrained in %s: %s; expected %s", suites.GPUName(g), what, linkNow(g), linkMax(g)))
			}
			if g.Source == "sysfs" {
				unjudged = append(unjudged, g.BusID)
			}
		}
		if len(unjudged) > 0 {
			// A GPU slows its link when idle; only NVML's performance
			// state tells that from a downtrained one.
			suites.Warn("GPU(s) %s judged from sysfs alone: link width checked, generation not (NVML gave no performance state)", strings.Join(unjudged, ", "))
		}
		for _, n := range ev.NICs {
			if l := n.Link; l != nil && (l.CurWidth < l.MaxWidth || l.CurSpeedGTs < l.MaxSpeedGTs) {
				bad = append(bad, fmt.Sprintf("NIC %s %s link runs at %.1f GT/s x%d; expected %.1f GT/s x%d", n.Name, n.BusID, l.CurSpeedGTs, l.CurWidth, l.MaxSpeedGTs, l.MaxWidth))
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// peerPathSpecs registers the specs of nothing in the way of a peer path:
// ACS, the IOMMU, broken peer access, MIG.
func peerPathSpecs() {
	It("has no ACS redirect on the path between a GPU and its NIC", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		requireNICs()
		if p, ok := ev.Problem("acs"); ok {
			suites.CannotRun("ACS could not be read: " + p.Message)
		}
		acs := map[string]node.ACS{}
		for _, a := range ev.ACS {
			acs[a.Bridge] = a
		}
		var bad []string
		for _, p := range ev.Paths {
			if !p.Preferred {
				continue
			}
			for _, b := range p.Bridges {
				if a, ok := acs[b]; ok && a.Redirects() {
					bad = append(bad, fmt.Sprintf("%s -> %s: bridge %s has ACS %s; expected no P2P redirect", suites.GPUName(node.GPU{Index: p.GPUIndex, BusID: p.GPU}), p.NIC, b, redirects(a)))
				}
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("has the IOMMU off or in passthrough for GPUs and NICs", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		bad, note := iommuFindings(ev)
		if note != "" {
			suites.Note("%s", note)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("has working peer access between GPUs joined by NVLink", func() {
		suites.Remedy(results.ActionResetGPU, results.ScopeGPU)
		suites.SkipWithout(node.SourceNVML, "NVLink state and peer access are known only to NVML")
		nvlinked := map[string]node.GPU{}
		for _, g := range ev.GPUs {
			if g.NVLinks.Up > 0 {
				nvlinked[g.BusID] = g
			}
		}
		if len(nvlinked) < 2 {
			suites.NotApplicable(fmt.Sprintf("%d GPU(s) with NVLink up: no NVLink peers to check", len(nvlinked)))
		}
		var bad []string
		checked := 0
		for _, p := range ev.GPUPairs {
			a, aok := nvlinked[p.A]
			b, bok := nvlinked[p.B]
			if !aok || !bok {
				continue
			}
			checked++
			if p.P2PRead != "OK" || p.P2PWrite != "OK" {
				bad = append(bad, fmt.Sprintf("%s <-> %s: P2P read %s, write %s; expected OK over NVLink", suites.GPUName(a), suites.GPUName(b), p.P2PRead, p.P2PWrite))
			}
		}
		suites.Record(results.Metric{Name: "nvlink_pairs_checked", Value: float64(checked), Unit: "pairs"})
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("has working PCIe peer access between GPUs under one PCIe switch", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		suites.SkipWithout(node.SourceNVML, "peer access is known only to NVML")
		bad, notes, checked := pcieP2P(ev)
		for _, n := range notes {
			suites.Note("%s", n)
		}
		if checked == 0 && len(bad) == 0 {
			suites.NotApplicable("no two GPUs share a PCIe switch without NVLink: no PCIe peers to check")
		}
		suites.Record(results.Metric{Name: "pcie_p2p_pairs_checked", Value: float64(checked), Unit: "pairs"})
		Expect(bad).To(suites.HaveNoFindings())
	})

	// MIG takes peer access and NVLS away from the GPU: NCCL falls back
	// to host memory or fails (NVIDIA/nccl#1716).
	It("has MIG off on every GPU", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeGPU)
		suites.SkipWithout(node.SourceNVML, "MIG mode is known only to NVML")
		var bad []string
		known := 0
		for _, g := range ev.GPUs {
			if g.MIG == nil {
				continue
			}
			known++
			if *g.MIG {
				bad = append(bad, fmt.Sprintf("%s has MIG enabled: MIG instances get no GPU peer access and no GPUDirect RDMA path for NCCL; disable it (nvidia-smi -i %d -mig 0, then reset the GPU) or keep this node out of GPUDirect jobs", suites.GPUName(g), g.Index))
			}
		}
		if known == 0 {
			suites.Note("no GPU reports a MIG mode (parts without MIG, or a recording made before gdrcheck read it)")
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// linkHealthSpecs registers the specs of NVLink, fabric and PCIe health:
// links up, fabric state, persistence, GPU-to-GPU ACS, AER.
func linkHealthSpecs() {
	// One dead link slows every collective crossing that GPU; a node's
	// GPUs of one model are wired alike, so the best of them sets the
	// count (some SKUs wire fewer than NVML answers for: H100 PCIe
	// bridges 12 of 18, Azure/azurehpc-health-checks#162).
	It("has every NVLink of each GPU up", func() {
		suites.Remedy(results.ActionResetGPU, results.ScopeGPU)
		suites.SkipWithout(node.SourceNVML, "NVLink state is known only to NVML")
		want := map[string]int{}
		for _, g := range ev.GPUs {
			want[g.Name] = max(want[g.Name], g.NVLinks.Up)
		}
		var bad []string
		for _, g := range ev.GPUs {
			l := g.NVLinks
			if l.Total == 0 {
				continue
			}
			if w := want[g.Name]; l.Up < w {
				bad = append(bad, fmt.Sprintf("%s has %d of %d NVLinks up, its peers %d: a link is down (Xid 74/144-149 in the kernel log, a bad NVLink cable, bridge or switch tray); run nvidia-smi nvlink -s -i %d, reset the GPU, and have the links serviced if they stay down", suites.GPUName(g), l.Up, l.Total, w, g.Index))
			} else if l.Up < l.Total {
				suites.Note("%s has %d of %d NVLinks up, as every %s here: taken as how the SKU is wired", suites.GPUName(g), l.Up, l.Total, g.Name)
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	// On NVSwitch systems (HGX/DGX Hopper and later) every GPU must be
	// registered with the fabric by nvidia-fabricmanager: COMPLETED with
	// status SUCCESS (fabricmanager.go).
	It("has every GPU's NVLink fabric state Completed with status Success", func() {
		suites.Remedy(results.ActionResetGPU, results.ScopeGPU)
		suites.SkipWithout(node.SourceNVML, "the NVLink fabric state is known only to NVML")
		c := checkFabric(ev.GPUs)
		for _, n := range c.notes {
			suites.Note("%s", n)
		}
		switch {
		case c.unknown != "":
			suites.CannotRun(c.unknown)
		case c.skip != "":
			suites.NotApplicable(c.skip)
		}
		Expect(c.bad).To(suites.HaveNoFindings())
	})

	// Persistence off slows the direct path's start, not its speed: each
	// job re-initialises the GPUs, and container runtimes time out
	// (NVIDIA/nvidia-container-toolkit#202). A warning, never a failure.
	It("keeps persistence mode on for every GPU", func() {
		suites.SkipWithout(node.SourceNVML, "persistence mode is known only to NVML")
		for _, g := range ev.GPUs {
			if g.Persistence != nil && !*g.Persistence {
				suites.Warn("%s has persistence mode off: the driver tears the GPU down between jobs, so every job starts slowly and container runtimes may time out; run nvidia-persistenced (systemctl enable --now nvidia-persistenced)", suites.GPUName(g))
			}
		}
	})

	// The PCIe specs (pcie.go), causes #7, #15, #14 and #13 of
	// docs/field-causes.md. ACS redirect between two GPUs that do PCIe
	// peer-to-peer sends their traffic up to the root complex:
	// intra-node NCCL hangs or slows (NVIDIA/nccl#2079, ACSCtl 0x001d
	// on AMD GPP bridges; NVIDIA/nccl#606).
	It("has no ACS redirect on the path between two GPUs that talk over PCIe", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		suites.SkipWithout(node.SourceNVML, "which GPUs talk over PCIe rather than NVLink is known only to NVML")
		if p, ok := ev.Problem("acs"); ok {
			suites.CannotRun("ACS could not be read: " + p.Message)
		}
		bad, pairs := peerACSFindings(ev)
		if pairs == 0 {
			suites.NotApplicable("no two GPUs do peer-to-peer over PCIe here (NVLink joins them, or NVML reports no P2P between them)")
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	// AER statistics since boot (Linux 4.19+,
	// Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats): an
	// uncorrectable error fails, a flood of correctable ones warns.
	It("has no PCIe AER errors on the GPUs, NICs and bridges above them", func() {
		suites.Remedy(results.ActionCheckCable, results.ScopeLink)
		bad, warns, notes, unreadable, judged := aerFindings(ev)
		if len(unreadable) > 0 {
			suites.CannotRun("AER statistics could not be read: " + strings.Join(unreadable, "; "))
		}
		if judged == 0 {
			suites.NotApplicable("no GPU, NIC or bridge above them has AER statistics (aer_dev_* in sysfs): a kernel before 4.19 or without CONFIG_PCIEAER, functions without the AER capability, or a recording made before gdrcheck read them; AER errors were not checked")
		}
		for _, n := range notes {
			suites.Note("%s", n)
		}
		for _, w := range warns {
			suites.Warn("%s", w)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// tuningSpecs registers the specs of settings that slow the path without
// breaking it, and the expected inventory.
func tuningSpecs() {
	// Payload and read request sizes and relaxed ordering slow GPUDirect,
	// never break it: warnings only (Mellanox DOC-2496,
	// openucx/ucx#10955).
	It("sets PCIe payload, read request and relaxed ordering for full GPUDirect speed", func() {
		if why := unreadableControl(ev, false); why != "" {
			suites.CannotRun(why)
		}
		warns, notes := deviceControlFindings(ev)
		for _, n := range notes {
			suites.Note("%s", n)
		}
		for _, w := range warns {
			suites.Warn("%s", w)
		}
	})

	// In a VM, GPUDirect RDMA runs at full speed only with ATS on
	// (NVIDIA AI Enterprise's VM guidance, NVIDIA/nccl-tests#156); it
	// slows, so a warning.
	It("has ATS enabled on the NICs and GPUs of a virtual machine", func() {
		p := ev.PCIe.Platform
		if !p.VM() {
			suites.NotApplicable(fmt.Sprintf("not a virtual machine (no hypervisor sign in %s): ATS matters for GPUDirect RDMA only in VMs", strings.Join(p.Looked, ", ")))
		}
		if len(ev.NICs) == 0 {
			suites.NotApplicable("no RDMA NICs in this VM: no GPUDirect RDMA to need ATS")
		}
		if why := unreadableControl(ev, true); why != "" {
			suites.CannotRun(why)
		}
		warns, notes := atsFindings(ev)
		for _, n := range notes {
			suites.Note("%s", n)
		}
		for _, w := range warns {
			suites.Warn("%s", w)
		}
	})

	// Automatic NUMA balancing unmaps and migrates the pages of NCCL's
	// and the job's host buffers: jitter, not a broken path, so a
	// warning (ROCm/rccl#1261 and RCCL's own warning, deepseek-ai/DeepEP#624).
	It("keeps automatic NUMA balancing off", func() {
		nb := ev.Kernel.NUMABalancing
		switch {
		case nb == nil:
			suites.Note("no proc/sys/kernel/numa_balancing: a kernel without automatic NUMA balancing, or a recording made before gdrcheck read it")
		case *nb == 0:
		case numaNodes(ev) == 1:
			suites.Note("kernel.numa_balancing is %d, but this node shows one NUMA node: nothing to migrate between", *nb)
		default:
			suites.Warn("kernel.numa_balancing is %d: the kernel unmaps and migrates the pages of NCCL's and the job's host buffers between NUMA nodes, which stalls the CPU proxies and adds jitter to every collective; set it to 0 (sysctl -w kernel.numa_balancing=0, and in /etc/sysctl.d/ to keep it)", *nb)
		}
	})

	It("matches the expected inventory", func() {
		suites.Remedy(results.ActionInvestigate, results.ScopeNode)
		if cfg.Expect == nil {
			suites.NotApplicable("no expected inventory given (--expect)")
		}
		Expect(ev.Inventory()).To(suites.MatchInventory(*cfg.Expect, cfg.ExpectFile))
	})
}

// numaNodes counts the NUMA nodes the node shows: its devices' NUMA
// nodes, else its CPU packages; 0 where neither says.
func numaNodes(ev *node.Evidence) int {
	nodes, pkgs := map[int]bool{}, map[int]bool{}
	for _, g := range ev.GPUs {
		if g.NUMANode >= 0 {
			nodes[g.NUMANode] = true
		}
	}
	for _, n := range ev.NICs {
		if n.NUMANode >= 0 {
			nodes[n.NUMANode] = true
		}
	}
	for _, c := range ev.CPUCores {
		pkgs[c.Package] = true
	}
	return max(len(nodes), len(pkgs))
}

// withinGDRLimit accepts a path up to the limit, and P2C wherever PXB
// is accepted: on Grace the NIC hangs off the GPU's own CPU, reached over
// NVLink-C2C, and NCCL uses GPUDirect RDMA there by default as it does up
// to PXB.
func withinGDRLimit(c, max node.PathClass) bool {
	if c == node.PathP2C {
		return max.Rank() >= node.PathPXB.Rank()
	}
	return c.Rank() <= max.Rank()
}

func allowed(max node.PathClass) string {
	var ok []string
	for _, c := range []node.PathClass{node.PathPIX, node.PathPXB, node.PathPHB, node.PathNODE, node.PathSYS} {
		if c.Rank() <= max.Rank() {
			ok = append(ok, string(c))
		}
	}
	return strings.Join(ok, "/")
}

func linkNow(g node.GPU) string {
	if g.PCIe.CurGen > 0 {
		return fmt.Sprintf("Gen%d x%d", g.PCIe.CurGen, g.PCIe.CurWidth)
	}
	if l := g.PCIe.Sysfs; l != nil {
		return fmt.Sprintf("%.1f GT/s x%d", l.CurSpeedGTs, l.CurWidth)
	}
	return "unknown"
}

func linkMax(g node.GPU) string {
	if g.PCIe.MaxGen > 0 {
		return fmt.Sprintf("Gen%d x%d", g.PCIe.MaxGen, g.PCIe.MaxWidth)
	}
	if l := g.PCIe.Sysfs; l != nil {
		return fmt.Sprintf("%.1f GT/s x%d", l.MaxSpeedGTs, l.MaxWidth)
	}
	return "unknown"
}

func redirects(a node.ACS) string {
	var on []string
	if a.RequestRedirect {
		on = append(on, "ReqRedir+")
	}
	if a.CompletionRedirect {
		on = append(on, "CmpltRedir+")
	}
	return strings.Join(on, " ")
}

func nicAbsence(ev *node.Evidence) string {
	if p, ok := ev.Problem("rdmamap"); ok {
		return p.Message
	}
	return "no devices under /sys/class/infiniband"
}

// diagnostics is what a failed topology spec attaches: the path of every
// GPU to its NIC, ACS on those paths and each GPU's BAR1.
func diagnostics(ev *node.Evidence) string {
	var b strings.Builder
	b.WriteString("GPU <-> preferred NIC:\n")
	for _, g := range ev.GPUs {
		p, ok := ev.PreferredPath(g.BusID)
		bar1 := "BAR1 unknown"
		if g.BAR1 != nil {
			bar1 = fmt.Sprintf("BAR1 %d/%d MiB used, %d free", g.BAR1.UsedMiB, g.BAR1.TotalMiB, g.BAR1.FreeMiB)
		}
		if ok {
			fmt.Fprintf(&b, "  %s NUMA %d -> %s %s via %s; %s\n", suites.GPUName(g), g.NUMANode, p.NIC, p.Class, strings.Join(p.Bridges, " "), bar1)
		} else {
			fmt.Fprintf(&b, "  %s NUMA %d -> none; %s\n", suites.GPUName(g), g.NUMANode, bar1)
		}
	}
	for _, a := range ev.ACS {
		fmt.Fprintf(&b, "  ACS %s: ctl %#04x\n", a.Bridge, a.Control)
	}
	fmt.Fprintf(&b, "  IOMMU: %s %s\n", ev.IOMMU.Mode, strings.Join(ev.IOMMU.CmdlineOpt, " "))
	return b.String()
}
