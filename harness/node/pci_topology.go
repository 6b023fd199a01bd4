package node

import "fmt"

// PathClass names the PCIe path between two devices the way the legend of
// `nvidia-smi topo -m` does. NCCL uses GPUDirect RDMA by default only up to
// PXB: beyond that the traffic crosses the CPU.
type PathClass string

const (
	// PIX: at most a single PCIe bridge (one switch) between the two.
	PathPIX PathClass = "PIX"
	// PXB: multiple PCIe bridges, without crossing the host bridge.
	PathPXB PathClass = "PXB"
	// P2C: through the GPU's own CPU over NVLink-C2C (Grace), where
	// the NIC hangs off that CPU's PCIe. Not in nvidia-smi's legend: NCCL
	// names it (PATH_P2C) and, since 2.27, uses GPUDirect RDMA across it
	// by default (NCCL_NET_GDR_C2C).
	PathP2C PathClass = "P2C"
	// PHB: through a PCIe host bridge (the CPU's root complex).
	PathPHB PathClass = "PHB"
	// NODE: between host bridges within one NUMA node.
	PathNODE PathClass = "NODE"
	// SYS: across the SMP interconnect between NUMA nodes (QPI/UPI, xGMI).
	PathSYS PathClass = "SYS"
)

// Rank orders classes from closest (1) to farthest (6); 0 is unknown.
func (c PathClass) Rank() int {
	switch c {
	case PathPIX:
		return 1
	case PathPXB:
		return 2
	case PathP2C:
		return 3
	case PathPHB:
		return 4
	case PathNODE:
		return 5
	case PathSYS:
		return 6
	}
	return 0
}

// GDRByDefault reports whether NCCL uses GPUDirect RDMA across a path of
// this class without being told to (NCCL_NET_GDR_LEVEL): up to PXB, and
// P2C on C2C platforms (NCCL 2.27 and later).
func (c PathClass) GDRByDefault() bool {
	return c.Rank() > 0 && c.Rank() <= PathP2C.Rank()
}

// ParsePathClass accepts the names above, as in inventories and flags.
func ParsePathClass(s string) (PathClass, error) {
	c := PathClass(s)
	if c.Rank() == 0 {
		return "", fmt.Errorf("unknown PCIe path class %q (want PIX, PXB, P2C, PHB, NODE or SYS)", s)
	}
	return c, nil
}

// Classify returns the class of the path between a and b from their sysfs
// chains. A PCIe switch shows in sysfs as an upstream port with downstream
// ports below it, so two devices under different downstream ports of one
// switch are one bridge level apart, as nvidia-smi and NCCL count it.
func Classify(a, b PCIDevice) PathClass {
	if a.HostBridge() != b.HostBridge() || a.HostBridge() == "" {
		// Unknown NUMA (-1) is what single-socket and virtual machines
		// report; count that as one node rather than inventing a SYS.
		if a.NUMA >= 0 && b.NUMA >= 0 && a.NUMA != b.NUMA {
			return PathSYS
		}
		return PathNODE
	}
	ab, bb := a.Bridges(), b.Bridges()
	common := 0
	for common < len(ab) && common < len(bb) && ab[common] == bb[common] {
		common++
	}
	if common == 0 {
		return PathPHB
	}
	// Bridges each side climbs above the common one: a device directly
	// under a downstream port of the shared switch climbs one.
	if len(ab)-common <= 1 && len(bb)-common <= 1 {
		return PathPIX
	}
	return PathPXB
}

// PathBridges are the bridges traffic between a and b passes through below
// the host bridge: each side's own bridges up to and including the lowest
// common one. These are where ACS redirect matters.
func PathBridges(a, b PCIDevice) []string {
	if a.HostBridge() != b.HostBridge() {
		return append(append([]string(nil), a.Bridges()...), b.Bridges()...)
	}
	ab, bb := a.Bridges(), b.Bridges()
	common := 0
	for common < len(ab) && common < len(bb) && ab[common] == bb[common] {
		common++
	}
	var out []string
	if common > 0 {
		out = append(out, ab[common-1])
	}
	out = append(out, ab[common:]...)
	out = append(out, bb[common:]...)
	return out
}
