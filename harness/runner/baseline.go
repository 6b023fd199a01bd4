package runner

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/node"
)

func loadBaselines(dir string) (*baseline.Store, error) {
	if dir == "" {
		return baseline.Shipped()
	}
	return baseline.Load(dir)
}

// BaselineFacts describe the node the way baseline profiles do; ncclVer
// is known only once a collective ran.
func BaselineFacts(ev *node.Evidence, ncclVer string) baseline.Facts {
	f := baseline.Facts{GPUsPerNode: len(ev.GPUs), Driver: ev.Host.DriverVersion, NCCL: ncclVer}
	if ev.Host.CUDADriverVersion > 0 {
		f.CUDA = baseline.CUDAVersion(ev.Host.CUDADriverVersion)
	}
	links := -1
	for i, g := range ev.GPUs {
		if i == 0 {
			f.GPUModel, f.PCIDeviceID, f.PCIeGen = g.Name, g.PCIDeviceID, g.PCIe.MaxGen
			links = g.NVLinks.Up
		} else if g.NVLinks.Up != links {
			links = -1
		}
	}
	switch {
	case links > 0:
		f.Interconnect = fmt.Sprintf("NV%d", links)
	case links == 0:
		f.Interconnect = "PCIe"
	}
	// The rail NICs, not a front-end NIC no GPU prefers.
	if len(ev.NICs) == 0 {
		f.NICModel = baseline.NoNIC
	}
	for _, g := range ev.GPUs {
		if p, ok := ev.PreferredPath(g.BusID); ok {
			if n, ok := ev.NIC(p.NIC); ok {
				f.NICModel = baseline.NICModel(n.HCAType)
				for _, port := range n.Ports {
					f.NICRateGbps = max(f.NICRateGbps, port.RateGbps)
				}
			}
		}
	}
	return f
}
