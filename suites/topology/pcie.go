package topology

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// Sources the PCIe specs cite.
const (
	nvaieVMGuide  = "https://docs.nvidia.com/ai-enterprise/planning-resource/optimizing-vm-configuration-ai-inference/latest/appendix.html"
	mellanoxPCIe  = "Mellanox DOC-2496, Understanding PCIe Configuration for Maximum Performance"
	peerACSSource = "NVIDIA/nccl#2079"
)

// correctableAERWarn is how many correctable errors since boot make a
// warning: a few are link training; a flood is a marginal link that
// retrains, slows, and may later drop the GPU (rwth-i6/returnn#1486).
const correctableAERWarn = 1000

// nicReadRequest is the Max Read Request a NIC reading GPU memory
// should use (Mellanox DOC-2496).
const nicReadRequest = 4096

// peerACSFindings are the bridges with ACS redirect between two GPUs
// NVML gives PCIe peer access (P2P OK, no NVLink), one finding per
// bridge; pairs counts those GPU pairs.
func peerACSFindings(ev *node.Evidence) (bad []string, pairs int) {
	acs := map[string]node.ACS{}
	for _, a := range ev.ACS {
		acs[a.Bridge] = a
	}
	paths := map[[2]string][]string{}
	for _, p := range ev.PCIe.PeerPaths {
		paths[[2]string{p.A, p.B}], paths[[2]string{p.B, p.A}] = p.Bridges, p.Bridges
	}
	between := map[string][]string{}
	for _, p := range ev.GPUPairs {
		if p.NVLink == "OK" || (p.P2PRead != "OK" && p.P2PWrite != "OK") {
			continue
		}
		pairs++
		for _, b := range paths[[2]string{p.A, p.B}] {
			if a, ok := acs[b]; ok && a.Redirects() {
				between[b] = append(between[b], gpuNameByBus(ev, p.A)+" <-> "+gpuNameByBus(ev, p.B))
			}
		}
	}
	for _, b := range slices.Sorted(maps.Keys(between)) {
		ps := between[b]
		more := ""
		if len(ps) > 1 {
			more = fmt.Sprintf(" and %d more GPU pair(s)", len(ps)-1)
		}
		bad = append(bad, fmt.Sprintf("bridge %s between %s%s has ACS %s (ACSCtl %#04x); expected no P2P redirect: PCIe peer traffic goes up to the root complex and NCCL hangs or slows (%s); disable ACS in the BIOS or boot with pci=noacs, or clear it now with setpci -s %s ECAP_ACS+6.w=0000 (lost at reboot)",
			b, ps[0], more, redirects(acs[b]), acs[b].Control, peerACSSource, b))
	}
	return bad, pairs
}

// aerFindings fail on uncorrectable errors and warn on a flood of
// correctable ones; unreadable are the statistics that could not be
// read, judged counts the devices with statistics.
func aerFindings(ev *node.Evidence) (bad, warns, notes, unreadable []string, judged int) {
	var without []string
	for _, d := range ev.PCIe.Devices {
		switch {
		case d.AERError != "":
			unreadable = append(unreadable, d.AERError)
			continue
		case d.AER == nil:
			without = append(without, d.Address)
			continue
		}
		judged++
		a, name := d.AER, deviceName(ev, d)
		if a.Fatal > 0 || a.NonFatal > 0 {
			bad = append(bad, fmt.Sprintf("%s has had %d fatal and %d non-fatal uncorrectable PCIe errors since boot (%s): a marginal link, riser or slot, which can drop the device off the bus; check lspci -vvv -s %s, reseat or replace the riser or card, and drain the node until it is fixed",
				name, a.Fatal, a.NonFatal, strings.Join(uncorrectable(a.Named), ", "), d.Address))
		} else if a.Correctable > correctableAERWarn {
			warns = append(warns, fmt.Sprintf("%s has logged %d correctable PCIe errors since boot (%s): a marginal link that retrains and slows; check lspci -vvv -s %s and reseat the card or riser if the count keeps growing",
				name, a.Correctable, strings.Join(a.Named, ", "), d.Address))
		}
	}
	if len(without) > 0 {
		notes = append(notes, fmt.Sprintf("no AER statistics for %s (no AER capability, or a kernel that keeps none): not checked", strings.Join(without, ", ")))
	}
	return bad, warns, notes, unreadable, judged
}

// uncorrectable keeps the fatal and non-fatal counters.
func uncorrectable(named []string) []string {
	var out []string
	for _, n := range named {
		if !strings.HasPrefix(n, "correctable:") {
			out = append(out, n)
		}
	}
	return out
}

// unreadableControl says why the device control of the GPUs and NICs
// (the NICs alone when nicsOnly) could not be read, or "".
func unreadableControl(ev *node.Evidence, nicsOnly bool) string {
	var root, other []string
	for _, d := range ev.PCIe.Devices {
		if d.Role == node.RoleBridge || (nicsOnly && d.Role != node.RoleNIC) {
			continue
		}
		switch {
		case d.ControlNeedsRoot:
			root = append(root, d.Address)
		case d.ControlError != "":
			other = append(other, d.ControlError)
		}
	}
	var why []string
	if len(root) > 0 {
		why = append(why, fmt.Sprintf("PCI config space of %s stops at 64 bytes: reading the PCI Express and ATS capabilities needs root (run as root, or snapshot as root)", strings.Join(root, ", ")))
	}
	// One line per cause: eight GPUs of a recording without config
	// space are one old recording, not eight problems.
	slices.Sort(other)
	if other = slices.Compact(other); len(other) > 0 {
		why = append(why, "PCI config space could not be read: "+strings.Join(other, "; "))
	}
	return strings.Join(why, "; ")
}

// deviceControlFindings warn where a GPU or NIC runs a payload below what
// its root port's hierarchy supports, a NIC reads GPU memory in requests
// under 4096 bytes, or a NIC has relaxed ordering off where it matters.
func deviceControlFindings(ev *node.Evidence) (warns, notes []string) {
	ro := roMatters(ev.PCIe.Platform)
	for _, d := range ev.PCIe.Devices {
		c := d.Control
		if c == nil || d.Role == node.RoleBridge {
			continue
		}
		name := deviceName(ev, d)
		if d.PathMaxPayload > 0 && c.MaxPayload > 0 && c.MaxPayload < d.PathMaxPayload {
			warns = append(warns, fmt.Sprintf("%s runs PCIe Max Payload %d bytes where every device below its root port supports %d: each write carries less data; set PCIe Max Payload to its maximum (Auto) in the BIOS, or boot with pci=pcie_bus_perf (%s)",
				name, c.MaxPayload, d.PathMaxPayload, mellanoxPCIe))
		}
		if d.Role != node.RoleNIC {
			continue
		}
		if c.MaxReadRequest > 0 && c.MaxReadRequest < nicReadRequest {
			warns = append(warns, fmt.Sprintf("%s reads with PCIe Max Read Request %d bytes; expected %d: the NIC fetches GPU memory in smaller requests and GPUDirect sends run slower; raise it with setpci -s %s CAP_EXP+8.w=5000:7000 (lost at reboot; %s)",
				name, c.MaxReadRequest, nicReadRequest, d.Address, mellanoxPCIe))
		}
		if !c.RelaxedOrdering {
			if ro != "" {
				warns = append(warns, fmt.Sprintf("%s has relaxed ordering disabled in its PCIe Device Control: on %s its writes into GPU memory keep strict order and GPUDirect runs at a fraction of its speed; enable it (setpci -s %s CAP_EXP+8.w=0010:0010, or the BIOS), and do not force it off in the NIC's firmware (mlxconfig PCI_WR_ORDERING)",
					name, ro, d.Address))
			} else {
				notes = append(notes, fmt.Sprintf("%s has relaxed ordering disabled: it costs GPUDirect bandwidth on AMD EPYC, Intel Emerald Rapids and in VMs, not on this CPU (%s)", name, cpuName(ev.PCIe.Platform)))
			}
		}
	}
	return warns, notes
}

// roMatters names why relaxed ordering matters on this platform, or "":
// AMD EPYC (150 vs 200 Gb/s, openucx/ucx#8062), Intel Emerald Rapids
// (about 16 vs over 40 GB/s, openucx/ucx#10955), and VMs with ACS and ATS
// (NVIDIA/nccl#1205). On older Intel root ports the kernel turns it off
// on purpose (their no-relaxed-ordering quirk), so elsewhere it is a note.
func roMatters(p node.Platform) string {
	switch {
	case p.VM():
		return "a virtual machine (ACS and ATS on, NVIDIA/nccl#1205)"
	case p.CPUVendor == "AuthenticAMD":
		return "AMD " + cpuName(p) + " (openucx/ucx#8062)"
	case p.CPUVendor == "GenuineIntel" && p.CPUFamily == 6 && p.CPUModel == 0xcf:
		return "Intel Emerald Rapids " + cpuName(p) + " (about 16 instead of over 40 GB/s, openucx/ucx#10955)"
	}
	return ""
}

func cpuName(p node.Platform) string {
	if p.CPUName == "" {
		return "an unknown CPU"
	}
	return p.CPUName
}

// atsFindings warn on a NIC or GPU of a VM whose ATS capability is off,
// and note those that show none.
func atsFindings(ev *node.Evidence) (warns, notes []string) {
	for _, d := range ev.PCIe.Devices {
		c := d.Control
		if c == nil || d.Role == node.RoleBridge {
			continue
		}
		name := deviceName(ev, d)
		switch {
		case c.ATS != nil && !c.ATS.Enabled:
			warns = append(warns, fmt.Sprintf("%s has ATS disabled (ATSCtl %#04x) in this VM (%s): GPUDirect RDMA traffic is translated by the host's IOMMU at the root complex and runs at a fraction of its speed; enable ATS on the host (mlxconfig -d <device> set ATS_ENABLED=true for the NIC, then reboot the host) and set ACS on its PCIe switches and root ports to allow ATS, as NVIDIA AI Enterprise's VM guidance says (%s)",
				name, c.ATS.Control, strings.Join(ev.PCIe.Platform.VMSigns, ", "), nvaieVMGuide))
		case c.ATS == nil && d.Role == node.RoleNIC && !c.Extended:
			notes = append(notes, fmt.Sprintf("%s: this VM shows only 256 bytes of its config space (no PCIe extended configuration), so ATS cannot be read; check ATS_ENABLED on the host with mlxconfig (%s)", name, nvaieVMGuide))
		case c.ATS == nil && d.Role == node.RoleNIC:
			notes = append(notes, fmt.Sprintf("%s shows no ATS capability to this VM: ATS_ENABLED may be False in its firmware, the default; check it on the host with mlxconfig (%s)", name, nvaieVMGuide))
		}
	}
	return warns, notes
}

// deviceName names a device as the other topology specs do.
func deviceName(ev *node.Evidence, d node.PCIeDevice) string {
	switch d.Role {
	case node.RoleGPU:
		return gpuNameByBus(ev, d.Address)
	case node.RoleNIC:
		return fmt.Sprintf("NIC %s %s", d.Name, d.Address)
	}
	return "PCIe bridge " + d.Address
}

func gpuNameByBus(ev *node.Evidence, bus string) string {
	for _, g := range ev.GPUs {
		if g.BusID == bus {
			return suites.GPUName(g)
		}
	}
	return "GPU " + bus
}
