package topology

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// graceACSSource is NVIDIA's guidance for ACS with dma-buf on Grace.
const graceACSSource = "https://github.com/NVIDIA/nodewright-packages/issues/122"

// iommuFindings are the GPUs and NICs behind a translating IOMMU. On
// Grace (every GPU joined to its CPU by NVLink-C2C: GH200, GB200) with a
// kernel before 6.11, NVIDIA's guidance for ACS with dma-buf sets
// iommu.passthrough=0 (graceACSSource), so there a translating IOMMU is
// the configuration, not a fault: the findings become note instead.
func iommuFindings(ev *node.Evidence) (bad []string, note string) {
	for _, g := range ev.GPUs {
		if g.IOMMU.Mode == node.IOMMUTranslating {
			bad = append(bad, fmt.Sprintf("%s is in IOMMU group %s with a %s domain (translating); expected off or passthrough (iommu=pt)", suites.GPUName(g), g.IOMMU.Group, g.IOMMU.Type))
		}
	}
	for _, n := range ev.NICs {
		if n.IOMMU.Mode == node.IOMMUTranslating {
			bad = append(bad, fmt.Sprintf("NIC %s %s is in IOMMU group %s with a %s domain (translating); expected off or passthrough (iommu=pt)", n.Name, n.BusID, n.IOMMU.Group, n.IOMMU.Type))
		}
	}
	if len(bad) == 0 || !graceBefore611(ev) {
		return bad, ""
	}
	return nil, fmt.Sprintf("%d GPU/NIC device(s) are behind a translating IOMMU; on Grace with kernel %s (before 6.11) NVIDIA's guidance for ACS with dma-buf needs iommu.passthrough=0, so this is expected (%s)",
		len(bad), kernelOf(ev), graceACSSource)
}

// graceBefore611: every GPU has an NVLink-C2C link to its CPU, which only
// Grace has, and the kernel is known and older than 6.11.
func graceBefore611(ev *node.Evidence) bool {
	if len(ev.GPUs) == 0 {
		return false
	}
	for _, g := range ev.GPUs {
		if !g.C2C {
			return false
		}
	}
	k := kernelOf(ev)
	return k != "" && !node.KernelAtLeast(k, 6, 11)
}

func kernelOf(ev *node.Evidence) string {
	if ev.Host.Kernel != "" {
		return ev.Host.Kernel
	}
	return ev.Kernel.Release
}
