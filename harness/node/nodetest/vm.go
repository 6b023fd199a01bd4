package nodetest

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// VMTopoFile is where the VM node's /etc/nccl.conf points NCCL_TOPO_FILE:
// a link to the host topology beside it (relative: a recording keeps no
// absolute link).
const VMTopoFile = "/etc/nccl/topo.xml"

// vmHostTopo is the host's wiring as the VM node's topology file tells it,
// in the form the cloud images ship (Azure's ndv4-topo.xml, aws-ofi-nccl's
// p4d-24xl-topo.xml): bare <pci> devices under the host's switches, which
// NCCL fills in from the guest. Each GPU shares a switch with its NIC.
const vmHostTopo = `<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="ffff:ff:01.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:00:05.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"/>
      <pci busid="0000:00:07.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16"/>
    </pci>
    <pci busid="ffff:ff:02.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:00:06.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"/>
      <pci busid="0000:00:08.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16"/>
    </pci>
  </cpu>
</system>
`

// H100x2VM builds a KVM guest given two NVLinked H100s and two
// ConnectX-7s by PCI passthrough: QEMU puts every device on its root
// bus with no switch and no NUMA node, so sysfs shows each GPU PHB to its
// NIC. The image's /etc/nccl.conf names a topology file of the host, where
// each GPU shares a switch with its NIC, as cloud images ship one.
func H100x2VM(dir string) (*Tree, error) {
	t := New(dir)
	t.Hostname = "h100-vm"
	t.Kernel = "6.8.0-1015-kvm"
	rec := &node.NVMLRecording{NVMLFacts: node.NVMLFacts{DriverVersion: "580.95.05", NVMLVersion: "13.580.95.05", CUDADriverVersion: 13000}}
	t.NVML = rec
	t.CPUs(1, 48, 2)
	t.HostBridge("pci0000:00", -1, "0-95")
	gpus := []string{"0000:00:05.0", "0000:00:06.0"}
	for i, bus := range gpus {
		t.GPU("pci0000:00", bus, 0x2330, Gen5x16)
		rec.GPUs = append(rec.GPUs, h100(i, bus, Gen5x16))
	}
	for i, bus := range []string{"0000:00:07.0", "0000:00:08.0"} {
		t.AddNIC("pci0000:00", bus, CX7(fmt.Sprintf("mlx5_%d", i), fmt.Sprintf("ens%d", 7+i)))
	}
	rec.Pairs = []node.GPUPair{{A: gpus[0], B: gpus[1], Ancestor: "HOSTBRIDGE", P2PRead: "OK", P2PWrite: "OK", NVLink: "OK"}}
	t.GPUDirect = railRegistrations(gpus, func(i int) int { return i }, 2)
	// What tells the guest: the CPU flag every hypervisor sets, QEMU's
	// DMI strings.
	t.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch\n")
	t.write("sys/devices/virtual/dmi/id/sys_vendor", "QEMU\n")
	t.write("sys/devices/virtual/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n")
	t.link("sys/class/dmi/id", "../../devices/virtual/dmi/id")
	t.write("proc/sys/kernel/numa_balancing", "0\n")
	t.write("etc/nccl.conf", "NCCL_TOPO_FILE="+VMTopoFile+"\n")
	t.write("etc/nccl/h100x2-host-topo.xml", vmHostTopo)
	t.link(VMTopoFile[1:], "h100x2-host-topo.xml")
	return t, t.Finish()
}
