package topology

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// PCIe peer access between GPUs that are not NVLink peers. NCCL plans P2P
// up to PXB by default, GPUs under one PCIe switch, and there drops to
// SHM through host memory when NVML reports peer access off ("P2P is
// disabled between connected GPUs", graph/paths.cc ncclTopoCheckP2p);
// farther apart it uses SHM by default. The causes: BIOS or VT-d
// settings, a driver registry key, parts without PCIe P2P
// (NVIDIA/nccl#175, NVIDIA/nccl#1086, NVIDIA/nccl#1309,
// tinygrad/open-gpu-kernel-modules#30).

// underOneSwitch are NVML's common ancestors of two GPUs under one PCIe
// switch: PIX and PXB.
var underOneSwitch = map[string]bool{"SINGLE": true, "MULTIPLE": true}

// p2pFixes say what each NVML P2P status means and what to do.
var p2pFixes = map[string]string{
	"CHIPSET_NOT_SUPPORTED":      "the driver allows no peer access through this switch or root complex: enable PCIe peer-to-peer in the BIOS, take the IOMMU out of translation and ACS redirect off the switch, or, on GeForce and some workstation parts that report it too, use GPUs that support it",
	"IOH_TOPOLOGY_NOT_SUPPORTED": "the chipset allows no peer access along this path: enable PCIe peer-to-peer in the BIOS or pair GPUs under a switch that supports it",
	"DISABLED_BY_REGKEY":         "peer access is switched off by an NVIDIA driver registry key: remove it from NVreg_RegistryDwords (/etc/modprobe.d/ or the kernel command line) and reload the driver",
	"GPU_NOT_SUPPORTED":          "this GPU model has no PCIe peer access: use GPUs that support it",
	"NOT_SUPPORTED":              "peer access is not supported between these GPUs: check the BIOS's PCIe peer-to-peer setting, the IOMMU and ACS specs, and the GPU model",
}

// pcieP2P judges every pair of GPUs that are not both on NVLink: under
// one switch, a status other than OK fails naming it and its fix; farther
// apart, or a status NVML could not give, is a note. checked counts the
// pairs under one switch.
func pcieP2P(ev *node.Evidence) (bad, notes []string, checked int) {
	gpus := map[string]node.GPU{}
	for _, g := range ev.GPUs {
		gpus[g.BusID] = g
	}
	for _, p := range ev.GPUPairs {
		a, b := gpus[p.A], gpus[p.B]
		if a.NVLinks.Up > 0 && b.NVLinks.Up > 0 {
			continue // the NVLink spec judges them
		}
		pair := fmt.Sprintf("%s <-> %s", suites.GPUName(a), suites.GPUName(b))
		if !underOneSwitch[p.Ancestor] {
			if p.P2PRead != "OK" || p.P2PWrite != "OK" {
				notes = append(notes, fmt.Sprintf("%s (%s): P2P read %s, write %s; by default NCCL uses P2P only up to one PCIe switch (PXB) and SHM beyond", pair, p.Ancestor, p.P2PRead, p.P2PWrite))
			}
			continue
		}
		checked++
		status := p.P2PRead
		if status == "OK" {
			status = p.P2PWrite
		}
		fix, known := p2pFixes[status]
		switch {
		case status == "OK":
		case !known:
			notes = append(notes, fmt.Sprintf("%s under one PCIe switch (%s): NVML gave P2P read %s, write %s, no status to judge", pair, p.Ancestor, p.P2PRead, p.P2PWrite))
		default:
			bad = append(bad, fmt.Sprintf("%s under one PCIe switch (%s): P2P read %s, write %s, so NCCL stages their traffic through host memory (SHM); %s", pair, p.Ancestor, p.P2PRead, p.P2PWrite, fix))
		}
	}
	return bad, notes, checked
}
