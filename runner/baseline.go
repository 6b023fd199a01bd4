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
	var rails []node.NIC
	seen := map[string]bool{}
	for _, g := range ev.GPUs {
		if p, ok := ev.PreferredPath(g.BusID); ok {
			if n, ok := ev.NIC(p.NIC); ok && !seen[n.Name] {
				seen[n.Name] = true
				rails = append(rails, n)
				f.NICModel = baseline.NICModel(n.HCAType)
				for _, port := range n.Ports {
					f.NICRateGbps = max(f.NICRateGbps, port.RateGbps)
				}
			}
		}
	}
	f.LinkLayer = railLinkLayer(rails)
	return f
}

// railLinkLayer is the link layer most rail ports run, for matching: a
// port flipped on one card leaves the node its profile, and the fabric
// suite names the port. As many on each is baseline.LinkMixed; "" where
// sysfs named none.
func railLinkLayer(rails []node.NIC) string {
	n := map[string]int{}
	for _, r := range rails {
		for _, p := range r.Ports {
			if p.LinkLayer == baseline.LinkInfiniBand || p.LinkLayer == baseline.LinkEthernet {
				n[p.LinkLayer]++
			}
		}
	}
	ib, eth := n[baseline.LinkInfiniBand], n[baseline.LinkEthernet]
	switch {
	case ib == 0 && eth == 0:
		return ""
	case ib > eth:
		return baseline.LinkInfiniBand
	case eth > ib:
		return baseline.LinkEthernet
	}
	return baseline.LinkMixed
}
