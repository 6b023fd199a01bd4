package topology

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// A virtual machine's PCI tree is the hypervisor's: passed-through GPUs and
// NICs sit on its root bus, no switch between them, NUMA node unknown, so
// NCCL sees PHB or SYS and turns GPUDirect RDMA off unless NCCL_TOPO_FILE
// describes the host's real wiring (NVIDIA/nccl#1464, NVIDIA/nccl#1674,
// NVIDIA/nccl#1843, NVIDIA/nccl#660, NVIDIA/nccl-tests#256,
// NVIDIA/nccl#811). Azure's HPC images set one in /etc/nccl.conf
// (azhpc-images customizations/ndv5.sh), AWS ships them with aws-ofi-nccl.

// vmPath judges a GPU's path to its NIC that sysfs puts beyond the
// GPUDirect limit, on a virtual machine: where NCCL_TOPO_FILE places both
// ends, its class is NCCL's and the file's word is taken (a note within
// the limit); else the finding names the VM and the fix. ok is false on
// bare metal, where sysfs's class stands and nothing is reworded.
func vmPath(ev *node.Evidence, g node.GPU, p node.Path, limit node.PathClass) (bad, note string, ok bool) {
	vm := ev.PCIe.Platform
	if !vm.VM() {
		return "", "", false
	}
	head := fmt.Sprintf("%s -> %s is %s", suites.GPUName(g), p.NIC, p.Class)
	var topo string
	if ev.Overrides != nil && ev.Overrides.Topo != nil {
		t := ev.Overrides.Topo
		c, placed := t.Class(g.BusID, p.NICBusID)
		switch {
		case t.Err != "":
			topo = fmt.Sprintf("; NCCL_TOPO_FILE %s cannot be used (%s)", t.Path, t.Err)
		case !placed:
			topo = fmt.Sprintf("; NCCL_TOPO_FILE %s does not place %s and %s", t.Path, g.BusID, p.NICBusID)
		case withinGDRLimit(c, limit):
			return "", fmt.Sprintf("%s in this virtual machine's PCI tree; NCCL_TOPO_FILE %s puts them at %s, and NCCL plans from it", head, t.Path, c), true
		default:
			return fmt.Sprintf("%s here and %s in NCCL_TOPO_FILE %s; GDR expected at %s: the host wires this GPU far from its NIC, or the file says so wrongly; pair the GPU with the NIC under its own switch, or correct the file", head, c, t.Path, allowed(limit)), "", true
		}
	}
	flat := ""
	if len(p.Bridges) == 0 {
		flat = " (GPU and NIC both sit on its root bus)"
	}
	return fmt.Sprintf("%s; GDR expected at %s: this node is a virtual machine (%s), and its PCI tree hides the host's PCIe switches%s, so NCCL sees %s and turns GPUDirect RDMA off%s; set NCCL_TOPO_FILE (in the job's environment or /etc/nccl.conf) to an XML of the host's real topology, as Azure's HPC images and AWS's aws-ofi-nccl ship one, or have the hypervisor pass the switches through",
		head, allowed(limit), vm.Name(), flat, p.Class, topo), "", true
}
