// Package nodetest builds synthetic host trees the way the kernel lays out
// sysfs (real directories under sys/devices, symlinks from sys/bus and
// sys/class), with an NVML recording beside them, so the node collector can
// be tested on machines that have no GPU, NIC or PCIe switch. The fixture
// generator (fixtures/gen) uses it to write fixtures/nodes/*.ttar. For
// tests of a recorded node it unpacks one, edits its recordings and
// collects it (recorded.go).
package nodetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// Tree is a synthetic host root under construction.
type Tree struct {
	Dir      string
	Hostname string
	Kernel   string
	Cmdline  string
	Driver   string // "580.95.05": the NVIDIA module version
	Arch     string // x86_64 or aarch64 (Grace)
	// NVML is written to gdrcheck/nvml.json; nil writes none (NVML absent).
	NVML *node.NVMLRecording
	// GPUDirect is written to gdrcheck/gpudirect.json: what libcuda and
	// libibverbs answered; nil writes none.
	GPUDirect *node.GPUDirectRecording
	// Proprietary writes the closed kernel module's version line.
	Proprietary bool
	// Peermem loads nvidia_peermem; PeermemRegistered adds the
	// memory_peers/nv_mem client MOFED's ib_core creates for it.
	Peermem, PeermemRegistered bool
	NvPeerMem                  bool   // the legacy module, loaded
	MOFED                      string // mlx5_core version of MLNX_OFED/DOCA
	Kmsg                       []string
	// NCCL installs libnccl.so.2 of this version ("2.21.5") in
	// usr/lib/<arch>-linux-gnu as Debian's libnccl2 does: libnccl.so ->
	// libnccl.so.2 -> libnccl.so.2.21.5, the library an empty file (the
	// collector reads names only). "" installs none.
	NCCL string
	// GDRCopy loads GDRCopy's gdrdrv: its module entry, its character
	// major and /dev/gdrdrv, as gdrcopy's insmod.sh leaves them.
	GDRCopy bool

	devs   map[string]string // PCI address -> directory relative to sys/devices
	ids    map[string][2]uint32
	numa   map[string]int
	cpus   map[string]string
	groups int
	uverbs int
	gpus   []gpuFunc
	uuids  map[string]string // bus id -> UUID, kept from the first NVML recording
	errs   []error
}

// gpuFunc is a GPU function as the driver lists it in
// proc/driver/nvidia/gpus.
type gpuFunc struct {
	addr   string
	device uint32
}

// gpuModels are the names the driver gives the GPU device ids of the
// fixtures, as NVML and proc/driver/nvidia/gpus/*/information print them.
var gpuModels = map[uint32]string{
	0x2330: "NVIDIA H100 80GB HBM3",
	0x26b9: "NVIDIA L40S",
	0x2342: "NVIDIA GH200 120GB",
	0x26b1: "NVIDIA RTX 6000 Ada Generation",
}

// New starts a tree in dir.
func New(dir string) *Tree {
	return &Tree{
		Dir:      dir,
		Hostname: "node",
		Kernel:   "6.8.0-60-generic",
		Cmdline:  "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro",
		Driver:   "580.95.05",
		Arch:     "x86_64",
		devs:     map[string]string{},
		ids:      map[string][2]uint32{},
		numa:     map[string]int{},
		cpus:     map[string]string{},
		uuids:    map[string]string{},
	}
}

func (t *Tree) write(rel string, content string) {
	p := filepath.Join(t.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.errs = append(t.errs, err)
		return
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.errs = append(t.errs, err)
	}
}

func (t *Tree) link(rel, target string) {
	p := filepath.Join(t.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.errs = append(t.errs, err)
		return
	}
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		t.errs = append(t.errs, err)
	}
}

// relTo returns the relative link from the directory holding rel to target,
// both relative to the tree root.
func relTo(rel, target string) string {
	r, err := filepath.Rel(filepath.Dir(rel), target)
	if err != nil {
		panic(err)
	}
	return r
}

// HostBridge adds a root complex ("pci0000:15") on a NUMA node with its
// local CPUs.
func (t *Tree) HostBridge(name string, numa int, cpus string) {
	t.devs[name] = name
	t.numa[name] = numa
	t.cpus[name] = cpus
	if err := os.MkdirAll(filepath.Join(t.Dir, "sys/devices", name), 0o755); err != nil {
		t.errs = append(t.errs, err)
	}
}

// Link is a PCIe link: generation speed in GT/s and width.
type Link struct {
	CurGTs, MaxGTs     float64
	CurWidth, MaxWidth int
}

// Gen5x16 is a healthy Hopper-era link.
var Gen5x16 = Link{32, 32, 16, 16}

// Bridge adds a PCI bridge (root port or switch port) under parent. acsCtl
// is the ACS control register; a negative value gives the bridge no ACS
// capability.
func (t *Tree) Bridge(parent, addr string, acsCtl int) {
	t.device(parent, addr, 0x8086, 0x1234, 0x060400, Gen5x16, PCIeConfig(BridgeDevCtl, acsCtl))
}

// device adds a PCI function with the attributes procfs requires.
func (t *Tree) device(parent, addr string, vendor, device, class uint32, l Link, config []byte) string {
	pdir, ok := t.devs[parent]
	if !ok {
		t.errs = append(t.errs, fmt.Errorf("parent %q of %s not added", parent, addr))
		return ""
	}
	dir := pdir + "/" + addr
	t.devs[addr] = dir
	t.ids[addr] = [2]uint32{vendor, device}
	t.numa[addr] = t.numa[parent]
	t.cpus[addr] = t.cpus[parent]
	base := "sys/devices/" + dir
	t.write(base+"/vendor", fmt.Sprintf("0x%04x\n", vendor))
	t.write(base+"/device", fmt.Sprintf("0x%04x\n", device))
	t.write(base+"/class", fmt.Sprintf("0x%06x\n", class))
	t.write(base+"/subsystem_vendor", fmt.Sprintf("0x%04x\n", vendor))
	t.write(base+"/subsystem_device", "0x0000\n")
	t.write(base+"/revision", "0x00\n")
	t.write(base+"/numa_node", fmt.Sprintf("%d\n", t.numa[addr]))
	t.write(base+"/local_cpulist", t.cpus[addr]+"\n")
	if l.MaxWidth > 0 {
		t.write(base+"/current_link_speed", fmt.Sprintf("%.1f GT/s PCIe\n", l.CurGTs))
		t.write(base+"/max_link_speed", fmt.Sprintf("%.1f GT/s PCIe\n", l.MaxGTs))
		t.write(base+"/current_link_width", fmt.Sprintf("%d\n", l.CurWidth))
		t.write(base+"/max_link_width", fmt.Sprintf("%d\n", l.MaxWidth))
	}
	if config != nil {
		t.write(base+"/config", string(withIDs(config, t.ids[addr])))
	}
	t.aer(base)
	rel := "sys/bus/pci/devices/" + addr
	t.link(rel, relTo(rel, "sys/devices/"+dir))
	return base
}

// GPU adds an NVIDIA GPU function (3D controller) with its link. The
// driver gives GPUs their minors (/dev/nvidiaN) in the order it probes
// them, the order they are added here.
func (t *Tree) GPU(parent, addr string, deviceID uint32, l Link) {
	if _, ok := gpuModels[deviceID]; !ok {
		t.errs = append(t.errs, fmt.Errorf("GPU %s: device id %#04x has no model name in gpuModels", addr, deviceID))
	}
	t.device(parent, addr, 0x10de, deviceID, 0x030200, l, PCIeConfig(GPUDevCtl, -1))
	t.gpus = append(t.gpus, gpuFunc{addr, deviceID})
}

// CPUs adds the CPU topology of sockets x cores x threads logical CPUs,
// numbered as Linux numbers them on x86 and Grace: the first thread of
// every core, socket by socket, then the second threads in the same order
// (socket 0 of 2 x 56 x 2 holds CPUs 0-55 and 112-167).
func (t *Tree) CPUs(sockets, cores, threads int) {
	n := sockets * cores
	for cpu := 0; cpu < n*threads; cpu++ {
		r := cpu % n
		dir := fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/", cpu)
		t.write(dir+"physical_package_id", fmt.Sprintf("%d\n", r/cores))
		t.write(dir+"core_id", fmt.Sprintf("%d\n", r%cores))
	}
}

// NIC describes an RDMA function: its ibdev name, netdev and ports.
type NIC struct {
	IBDev     string // mlx5_0
	NetDev    string // ibp24s0 or ens1np0; empty for none
	HCAType   string // MT4129 (ConnectX-7)
	DeviceID  uint32 // 0x1021 (ConnectX-7)
	FWVer     string
	LinkLayer string // InfiniBand or Ethernet
	State     string // "4: ACTIVE"
	PhysState string // "5: LinkUp"
	Rate      string // "400 Gb/sec (4X NDR)"
	DevCtl    DevCtl // its PCIe device control
}

// CX7 is a healthy ConnectX-7 NDR port.
func CX7(ibdev, netdev string) NIC {
	return NIC{IBDev: ibdev, NetDev: netdev, HCAType: "MT4129", DeviceID: 0x1021, FWVer: "28.39.1002",
		LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "400 Gb/sec (4X NDR)", DevCtl: CX7DevCtl}
}

// AddNIC adds a Mellanox function with its InfiniBand class device, uverbs
// node, netdev and one port, laid out as mlx5_core does.
func (t *Tree) AddNIC(parent, addr string, n NIC) {
	base := t.device(parent, addr, 0x15b3, n.DeviceID, 0x020700, Gen5x16, PCIeConfig(n.DevCtl, -1))
	if base == "" {
		return
	}
	ib := base + "/infiniband/" + n.IBDev
	t.write(ib+"/fw_ver", n.FWVer+"\n")
	t.write(ib+"/hca_type", n.HCAType+"\n")
	t.write(ib+"/board_id", "MT_0000000838\n")
	t.write(ib+"/node_guid", fmt.Sprintf("b83f:d203:00%02x:0000\n", t.uverbs))
	t.link(ib+"/device", "../../../"+addr)
	port := ib + "/ports/1"
	t.write(port+"/link_layer", n.LinkLayer+"\n")
	t.write(port+"/state", n.State+"\n")
	t.write(port+"/phys_state", n.PhysState+"\n")
	t.write(port+"/rate", n.Rate+"\n")
	for _, c := range []string{"port_xmit_data", "port_rcv_data", "symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards"} {
		t.write(port+"/counters/"+c, "0\n")
	}
	cls := "sys/class/infiniband/" + n.IBDev
	t.link(cls, relTo(cls, ib))

	uv := fmt.Sprintf("uverbs%d", t.uverbs)
	t.uverbs++
	uvDir := base + "/infiniband_verbs/" + uv
	t.write(uvDir+"/ibdev", n.IBDev+"\n")
	t.write(uvDir+"/abi_version", "1\n")
	t.link("sys/class/infiniband_verbs/"+uv, relTo("sys/class/infiniband_verbs/"+uv, uvDir))
	t.write("dev/infiniband/"+uv, "")
	t.write("dev/infiniband/rdma_cm", "")

	if n.NetDev != "" {
		nd := base + "/net/" + n.NetDev
		t.write(nd+"/address", "00:00:00:00:00:00\n")
		t.write(nd+"/operstate", "up\n")
		t.write(nd+"/type", "32\n")
		t.link(nd+"/device", "../../../"+addr)
		t.link("sys/class/net/"+n.NetDev, relTo("sys/class/net/"+n.NetDev, nd))
	}
}

// IOMMUGroup puts devices in one IOMMU group with a domain type (identity,
// DMA, DMA-FQ).
func (t *Tree) IOMMUGroup(typ string, addrs ...string) {
	g := fmt.Sprintf("%d", t.groups)
	t.groups++
	t.write("sys/kernel/iommu_groups/"+g+"/type", typ+"\n")
	for _, a := range addrs {
		dir, ok := t.devs[a]
		if !ok {
			t.errs = append(t.errs, fmt.Errorf("IOMMU group member %s not added", a))
			continue
		}
		rel := "sys/devices/" + dir + "/iommu_group"
		t.link(rel, relTo(rel, "sys/kernel/iommu_groups/"+g))
		mem := "sys/kernel/iommu_groups/" + g + "/devices/" + a
		t.link(mem, relTo(mem, "sys/devices/"+dir))
	}
	if err := os.MkdirAll(filepath.Join(t.Dir, "sys/class/iommu/dmar0"), 0o755); err != nil {
		t.errs = append(t.errs, err)
	}
}

// Finish writes proc, the NVML recording and the empty class directories
// every kernel has, and reports the first error met while building.
func (t *Tree) Finish() error {
	t.write("proc/sys/kernel/hostname", t.Hostname+"\n")
	t.write("proc/sys/kernel/osrelease", t.Kernel+"\n")
	t.write("proc/cmdline", t.Cmdline+"\n")
	if t.Arch != "x86_64" {
		// Only where it differs, so the x86 trees stay as they were.
		t.write("proc/sys/kernel/arch", t.Arch+"\n")
	}
	t.procDevices()
	t.procGPUs()
	if t.Proprietary {
		t.write("proc/driver/nvidia/version", fmt.Sprintf("NVRM version: NVIDIA UNIX %s Kernel Module  %s  Tue Sep 30 00:00:00 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n", t.Arch, t.Driver))
	} else {
		t.write("proc/driver/nvidia/version", fmt.Sprintf("NVRM version: NVIDIA UNIX Open Kernel Module for %s  %s  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Tue Sep 30 00:00:00 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n", t.Arch, t.Driver))
	}
	t.write("sys/module/nvidia/version", t.Driver+"\n")
	if t.Peermem {
		t.write("sys/module/nvidia_peermem/version", t.Driver+"\n")
		t.write("sys/module/nvidia_peermem/parameters/peerdirect_support", "0\n")
		t.write("sys/module/nvidia_peermem/parameters/persistent_api_support", "1\n")
	}
	if t.PeermemRegistered {
		t.write("sys/kernel/mm/memory_peers/nv_mem/version", t.Driver+"\n")
		t.write("sys/kernel/mm/memory_peers/nv_mem/num_alloc_mrs", "0\n")
	}
	if t.NvPeerMem {
		t.write("sys/module/nv_peer_mem/version", "1.3-0\n")
	}
	if t.MOFED != "" {
		t.write("sys/module/mlx5_core/version", t.MOFED+"\n")
	}
	if t.GDRCopy {
		t.write("sys/module/gdrdrv/version", "2.4\n")
		t.write("dev/gdrdrv", "")
	}
	if t.NCCL != "" {
		dir := "usr/lib/" + t.Arch + "-linux-gnu/"
		t.write(dir+"libnccl.so."+t.NCCL, "")
		t.link(dir+"libnccl.so.2", "libnccl.so."+t.NCCL)
		t.link(dir+"libnccl.so", "libnccl.so.2")
	}
	if len(t.Kmsg) > 0 {
		t.write("gdrcheck/kmsg.txt", strings.Join(t.Kmsg, "\n")+"\n")
	}
	if t.GPUDirect != nil {
		b, err := json.MarshalIndent(t.GPUDirect, "", "  ")
		if err != nil {
			t.errs = append(t.errs, err)
		}
		t.write("gdrcheck/gpudirect.json", string(b)+"\n")
	}
	for _, d := range []string{"sys/class/net", "sys/class/iommu", "sys/kernel/iommu_groups", "sys/bus/pci/devices"} {
		if err := os.MkdirAll(filepath.Join(t.Dir, d), 0o755); err != nil {
			t.errs = append(t.errs, err)
		}
	}
	if t.NVML != nil {
		b, err := json.MarshalIndent(t.NVML, "", "  ")
		if err != nil {
			t.errs = append(t.errs, err)
		}
		t.write("gdrcheck/nvml.json", string(b)+"\n")
	}
	if len(t.errs) > 0 {
		return fmt.Errorf("building tree %q: %w", t.Dir, t.errs[0])
	}
	return nil
}

// procGPUs writes the driver's proc/driver/nvidia/gpus/<bus id>/information
// of every GPU, as a 580 driver does, with the UUID where an NVML
// recording gave one.
func (t *Tree) procGPUs() {
	if t.NVML != nil {
		for _, g := range t.NVML.GPUs {
			t.uuids[g.BusID] = g.UUID
		}
	}
	for minor, g := range t.gpus {
		uuid, ok := t.uuids[g.addr]
		if !ok {
			t.errs = append(t.errs, fmt.Errorf("GPU %s: no UUID for proc/driver/nvidia/gpus: the NVML recording does not list it", g.addr))
		}
		t.write("proc/driver/nvidia/gpus/"+g.addr+"/information", fmt.Sprintf("Model: \t\t %s\nIRQ:   \t\t %d\nGPU UUID: \t %s\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t %s\nDevice Minor: \t %d\nGPU Firmware: \t %s\nGPU Excluded:\t No\n",
			gpuModels[g.device], 100+minor, uuid, g.addr, minor, t.Driver))
	}
}

// procDevices writes proc/devices and proc/misc with the majors and
// minors the drivers of the tree's GPUs and NICs register, as a real H200
// node lists them: nvidia 195, nvidia-uvm and the second uverbs region
// dynamic, rdma_cm a misc device.
func (t *Tree) procDevices() {
	char := []string{"  1 mem", "  4 /dev/vc/0", "  4 tty", "  5 /dev/tty", "  5 /dev/console", "  5 /dev/ptmx", "  7 vcs", " 10 misc", " 13 input", "136 pts"}
	if len(t.gpus) > 0 {
		char = append(char, "195 nvidia", "195 nvidiactl")
	}
	if t.uverbs > 0 {
		char = append(char, "231 infiniband_mad", "231 infiniband_verbs")
	}
	if len(t.gpus) > 0 {
		char = append(char, "238 nvidia-uvm", "241 nvidia-caps")
	}
	if t.uverbs > 0 {
		char = append(char, "244 infiniband_verbs", "245 infiniband_mad")
	}
	char = append(char, "248 bsg", "254 ndctl")
	if t.GDRCopy {
		char = append(char, "509 gdrdrv") // a dynamic major of the extended range
	}
	t.write("proc/devices", "Character devices:\n"+strings.Join(char, "\n")+"\n\nBlock devices:\n  7 loop\n259 blkext\n")
	misc := "237 loop-control\n229 fuse\n235 autofs\n"
	if t.uverbs > 0 {
		misc = "258 rdma_cm\n" + misc
	}
	t.write("proc/misc", misc)
}

// Addresses lists the PCI functions added, sorted.
func (t *Tree) Addresses() []string {
	var out []string
	for a := range t.devs {
		if !strings.HasPrefix(a, "pci") {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// ACS control bits (PCIe base spec 7.7.8.3).
const (
	ACSSourceValidation   = 1 << 0
	ACSRequestRedirect    = 1 << 2
	ACSCompletionRedirect = 1 << 3
	ACSUpstreamForwarding = 1 << 4
)
