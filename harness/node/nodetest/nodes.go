package nodetest

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// Variant changes one thing of a fixture node, the way a real node breaks.
type Variant func(*h100x8)

type h100x8 struct {
	nicsOnOtherSocket bool
	downtrainedGPU    int // -1: none
	acsRedirect       bool
	iommu             string // "", "identity", "DMA-FQ"
	proprietary       bool
	peermem           string // "", "registered", "unregistered", "doca"
	nccl              string // libnccl.so.2 version installed; "" none
	aerFatalGPU       int    // -1: none
	nicReadRequest    [2]int // NIC index, its Max Read Request; 0 bytes: as healthy
	vm                bool
	nicATS            int // ATSNone, ATSOff, ATSOn
}

// AERFatal gives one GPU a fatal uncorrectable AER error since boot (a
// Surprise Down, the link lost), as a marginal riser leaves it.
func AERFatal(gpu int) Variant { return func(c *h100x8) { c.aerFatalGPU = gpu } }

// NICReadRequest sets one NIC's Max Read Request (bytes), as firmware
// leaves it when nothing raises it (512 is the PCIe reset value).
func NICReadRequest(nic, bytes int) Variant {
	return func(c *h100x8) { c.nicReadRequest = [2]int{nic, bytes} }
}

// InVM makes the node a QEMU/KVM guest with the host's GPUs and NICs
// passed through (its PCIe switches emulated as well), every NIC's ATS
// capability in state ats (ATSNone, ATSOff, ATSOn).
func InVM(ats int) Variant { return func(c *h100x8) { c.vm, c.nicATS = true, ats } }

// ProprietaryDriver runs the closed NVIDIA kernel modules: no dma-buf
// export (attribute 124 = 0), so GPUDirect needs nvidia_peermem.
func ProprietaryDriver() Variant { return func(c *h100x8) { c.proprietary = true } }

// Peermem loads nvidia_peermem; registered or not with MOFED's ib_core
// ("registered", "unregistered": the module failed to find the peer-memory
// API and says so in the kernel log). "doca" is the nvidia-peermem of DGX
// OS 25.01 (NVIDIA/nccl#1676): loaded and working, GPU memory registers
// through it, but no memory_peers/nv_mem client exists, which is all NCCL
// <= 2.22.3 looks for.
func Peermem(state string) Variant { return func(c *h100x8) { c.peermem = state } }

// NCCL installs libnccl.so.2 of that version in usr/lib/x86_64-linux-gnu.
func NCCL(version string) Variant { return func(c *h100x8) { c.nccl = version } }

// NICsOnOtherSocket cables the NICs of socket 1 (mlx5_4..7) to socket 0's
// root complex: GPUs 4-7 keep no NIC on their own socket (SYS).
func NICsOnOtherSocket() Variant { return func(c *h100x8) { c.nicsOnOtherSocket = true } }

// DowntrainedGPU runs one GPU's link at x8 instead of x16.
func DowntrainedGPU(i int) Variant { return func(c *h100x8) { c.downtrainedGPU = i } }

// ACSRedirect sets P2P request and completion redirect on the downstream
// ports of switch 1 (GPUs 2-3, NICs 2-3).
func ACSRedirect() Variant { return func(c *h100x8) { c.acsRedirect = true } }

// IOMMU puts every device in its own group of this domain type
// ("identity" for passthrough, "DMA-FQ" for translating).
func IOMMU(domainType string) Variant { return func(c *h100x8) { c.iommu = domainType } }

// H100x8 builds an 8 x H100 SXM node on NVSwitch with 8 ConnectX-7 NDR
// NICs, laid out like the public GKE A4 matrix in
// fixtures/corpus/nvidia-smi-topo/gke-a4-b200-8gpu-nv18-8nic-cx7-pix-node-sys.txt:
// four PCIe switches, each holding two GPUs and two NICs (PIX), two switches
// per socket on separate root complexes (NODE), two sockets (SYS).
func H100x8(dir string, vs ...Variant) (*Tree, error) {
	c := h100x8{downtrainedGPU: -1, aerFatalGPU: -1}
	for _, v := range vs {
		v(&c)
	}
	t := New(dir)
	t.Hostname = "h100-node"
	rec := &node.NVMLRecording{NVMLFacts: node.NVMLFacts{
		DriverVersion: "580.95.05", NVMLVersion: "13.580.95.05", CUDADriverVersion: 13000,
	}}
	t.NVML = rec
	// Two 56-core sockets with SMT (Xeon Platinum 8480+).
	t.CPUs(2, 56, 2)
	t.CPUInfo("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Platinum 8480+", c.vm)
	if c.vm {
		t.VMIdentity()
	}
	gpus, nicParents := c.switches(t, rec)
	c.nics(t, nicParents)
	rec.Pairs = h100x8Pairs(gpus)
	t.GPUDirect = gpudirect(c, gpus)
	if c.aerFatalGPU >= 0 {
		t.SetAER(gpus[c.aerFatalGPU], "fatal", map[string]uint64{"SDES": 1})
	}
	c.kernel(t)
	return t, t.Finish()
}

// h100x8HostBridges are the four root complexes, two per socket.
var h100x8HostBridges = []string{"pci0000:15", "pci0000:35", "pci0000:95", "pci0000:b5"}

// switches lays out the four PCIe switches, each with two GPUs and two NIC
// slots; it returns the GPUs' addresses and each NIC slot as "dsp ep".
func (c h100x8) switches(t *Tree, rec *node.NVMLRecording) (gpus, nicParents []string) {
	cpus := []string{"0-55,112-167", "56-111,168-223"}
	for s, hb := range h100x8HostBridges {
		numa := s / 2
		t.HostBridge(hb, numa, cpus[numa])
		bus := 0x15 + 0x20*s
		if s >= 2 {
			bus = 0x95 + 0x20*(s-2)
		}
		rp := fmt.Sprintf("0000:%02x:01.0", bus)
		usp := fmt.Sprintf("0000:%02x:00.0", bus+1)
		t.Bridge(hb, rp, 0)
		t.Bridge(rp, usp, -1)
		acs := 0
		if c.acsRedirect && s == 1 {
			acs = ACSSourceValidation | ACSRequestRedirect | ACSCompletionRedirect | ACSUpstreamForwarding
		}
		for port := 0; port < 4; port++ {
			dsp := fmt.Sprintf("0000:%02x:%02x.0", bus+2, port)
			t.Bridge(usp, dsp, acs)
			ep := fmt.Sprintf("0000:%02x:00.0", bus+3+port)
			if port >= 2 {
				nicParents = append(nicParents, dsp+" "+ep)
				continue
			}
			g := len(gpus)
			l := Gen5x16
			if g == c.downtrainedGPU {
				l.CurWidth = 8
			}
			t.GPU(dsp, ep, 0x2330, l)
			gpus = append(gpus, ep)
			rec.GPUs = append(rec.GPUs, h100(g, ep, l))
		}
	}
	return gpus, nicParents
}

// nics puts a ConnectX-7 in each NIC slot, or, mis-slotted, the upper four
// in root ports of socket 0.
func (c h100x8) nics(t *Tree, nicParents []string) {
	for i, pe := range nicParents {
		var dsp, ep string
		fmt.Sscanf(pe, "%s %s", &dsp, &ep)
		n := CX7(fmt.Sprintf("mlx5_%d", i), "")
		n.NetDev = fmt.Sprintf("ibp%ds0", 0x18+i)
		n.DevCtl.ATS = c.nicATS
		if c.nicReadRequest[1] > 0 && c.nicReadRequest[0] == i {
			n.DevCtl.MaxReadRequest = c.nicReadRequest[1]
		}
		if c.nicsOnOtherSocket && i >= 4 {
			k := i - 4
			hb := h100x8HostBridges[k%2]
			rp := fmt.Sprintf("0000:%s:%02x.0", hb[len(hb)-2:], 2+k/2)
			t.Bridge(hb, rp, 0)
			t.AddNIC(rp, fmt.Sprintf("0000:%02x:00.0", 0x20+k), n)
			continue
		}
		t.AddNIC(dsp, ep, n)
	}
}

// h100x8Pairs are NVML's GPU pairs: all joined by NVLink, their PCIe
// ancestor a switch (SINGLE), a socket (NODE) or the system.
func h100x8Pairs(gpus []string) []node.GPUPair {
	var pairs []node.GPUPair
	for i := range gpus {
		for j := i + 1; j < len(gpus); j++ {
			anc := "SYSTEM"
			switch {
			case i/2 == j/2:
				anc = "SINGLE"
			case i/4 == j/4:
				anc = "NODE"
			}
			pairs = append(pairs, node.GPUPair{A: gpus[i], B: gpus[j], Ancestor: anc, P2PRead: "OK", P2PWrite: "OK", NVLink: "OK"})
		}
	}
	return pairs
}

// kernel applies the variants of the kernel side: peer memory, the
// proprietary module, NCCL's library and the IOMMU.
func (c h100x8) kernel(t *Tree) {
	switch c.peermem {
	case "registered":
		t.Peermem, t.PeermemRegistered, t.MOFED = true, true, "24.10-1.1.4"
	case "doca":
		t.Peermem, t.MOFED = true, "24.10-1.1.4"
	case "unregistered":
		t.Peermem = true
		t.Kmsg = []string{
			"[   12.345678] nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)",
			"[   12.345690] nvidia_peermem: Unknown symbol ib_unregister_peer_memory_client (err -2)",
		}
	}
	t.Proprietary = c.proprietary
	t.NCCL = c.nccl
	if c.iommu != "" {
		for _, a := range t.Addresses() {
			t.IOMMUGroup(c.iommu, a)
		}
		if c.iommu == "identity" {
			t.Cmdline += " intel_iommu=on iommu=pt"
		} else {
			t.Cmdline += " intel_iommu=on"
		}
	}
}

func h100(i int, bus string, l Link) node.GPU {
	ps := 0
	return node.GPU{
		Index:       i,
		Minor:       &i,
		Name:        "NVIDIA H100 80GB HBM3",
		UUID:        fmt.Sprintf("GPU-6a1c0f3e-0000-4000-8000-00000000000%d", i),
		BusID:       bus,
		PCIDeviceID: "0x2330",
		MemoryMiB:   81559,
		NUMANode:    -1,
		PCIe:        node.GPUPCIe{CurGen: 5, MaxGen: 5, CurWidth: l.CurWidth, MaxWidth: 16},
		BAR1:        &node.BAR1{TotalMiB: 131072, UsedMiB: 1, FreeMiB: 131071},
		PerfState:   &ps,
		NVLinks:     node.NVLinks{Up: 18, Total: 18},
		// On NVSwitch: nvidia-fabricmanager registered it.
		Fabric: &node.GPUFabric{State: node.FabricCompleted, Status: "SUCCESS"},
		Source: "nvml",
	}
}

// NoGPU builds a node with one ConnectX-7 and no NVIDIA GPU: the collector
// must say so and the run must exit 2.
func NoGPU(dir string) (*Tree, error) {
	t := New(dir)
	t.Hostname = "cpu-node"
	t.CPUs(1, 16, 2)
	t.HostBridge("pci0000:00", 0, "0-31")
	t.Bridge("pci0000:00", "0000:00:01.0", 0)
	t.AddNIC("0000:00:01.0", "0000:01:00.0", CX7("mlx5_0", "ibp1s0"))
	t.NVML = &node.NVMLRecording{InitError: "ERROR_DRIVER_NOT_LOADED"}
	return t, t.Finish()
}

// Fixture is a named synthetic node.
type Fixture struct {
	Name  string
	About string
	Build func(dir string) (*Tree, error)
}

// Fixtures are the synthetic nodes shipped in fixtures/nodes. Names say
// the hardware and what the node shows.
func Fixtures() []Fixture {
	with := func(vs ...Variant) func(string) (*Tree, error) {
		return func(d string) (*Tree, error) { return H100x8(d, vs...) }
	}
	return []Fixture{
		{"h100x8-nvswitch-cx7-pix", "8 x H100 on NVSwitch, 8 x ConnectX-7 NDR, each GPU PIX to its rail NIC: healthy", with()},
		{"h100x8-nic-sys", "NICs of socket 1 slotted into socket 0: GPUs 4-7 reach their NIC only across the SMP link (SYS)", with(NICsOnOtherSocket())},
		{"h100x8-gpu-downtrained", "GPU 3 links at x8 instead of x16", with(DowntrainedGPU(3))},
		{"h100x8-acs-redirect", "ACS P2P request and completion redirect on the switch ports of GPUs 2-3", with(ACSRedirect())},
		{"h100x8-iommu-translating", "IOMMU on with DMA-FQ (translating) domains for every device", with(IOMMU("DMA-FQ"))},
		{"h100x8-iommu-passthrough", "IOMMU on with identity (passthrough) domains: fine for GPUDirect", with(IOMMU("identity"))},
		{"h100x8-proprietary-peermem", "closed kernel modules (no dma-buf), nvidia_peermem registered with MOFED: GPUDirect on the legacy path", with(ProprietaryDriver(), Peermem("registered"))},
		{"h100x8-proprietary-peermem-unregistered", "closed kernel modules and an nvidia_peermem that found no peer-memory API: no GPUDirect path at all", with(ProprietaryDriver(), Peermem("unregistered"))},
		{"h100x8-nccl221-peermem-only", "closed kernel modules (no dma-buf), an nvidia_peermem that works but registers no memory_peers/nv_mem client (DGX OS 25.01), and NCCL 2.21.5, which looks for nothing else: in the known-bad cell of NVIDIA/nccl#1676, GDR disabled", with(ProprietaryDriver(), Peermem("doca"), NCCL("2.21.5"))},
		{"h100x8-proprietary-no-peermem", "closed kernel modules (no dma-buf) and no nvidia_peermem: peer memory missing, so NCCL stages NET/IB through the host", with(ProprietaryDriver())},
		{"l40s8-pcie-cx7-pxb", "8 x L40S on PCIe Gen4 without NVLink, two root complexes of four GPUs and one ConnectX-7 each: PXB to its own NIC, NODE to the other, P2P only under one root complex", L40S8},
		{"gh200x4-c2c-cx7", "4 x GH200 (aarch64, one NUMA node per Grace), NVLinked GPUs, one ConnectX-7 per Grace reached over NVLink-C2C (P2C)", GH200x4},
		{"rtx6000ada2-bar1-256mib", "2 x RTX 6000 Ada with a 256 MiB BAR1, idle at Gen1 in P8, closed driver: BAR1 too small and no peer-memory path", RTX6000Ada2},
		{"h100x2-vm-nccl-topo-file", "a KVM guest given 2 x H100 (NVLink) and 2 x ConnectX-7 by passthrough, every device on its root bus (PHB, no NUMA node), and an /etc/nccl.conf naming the host's topology file, where each GPU shares a switch with its NIC: healthy", H100x2VM},
		{"cpu-no-gpu", "one ConnectX-7 and no NVIDIA GPU; the driver is not loaded", NoGPU},
		{"h100x8-nvml-version-mismatch", "the H100 node after a driver upgrade without a reboot: NVML and libcuda fail with the driver/library version mismatch; judged from sysfs", NVMLVersionMismatch},
	}
}

// gpudirect is what libcuda and libibverbs answer on the H100 node: each
// GPU's buffer registered with its rail NIC (GPU i -> mlx5_i) on both
// paths, working as the driver flavour and peermem state allow.
func gpudirect(c h100x8, gpus []string) *node.GPUDirectRecording {
	one, zero := 1, 0
	ordering := 200
	rec := &node.GPUDirectRecording{
		CUDA:  node.CUDAFacts{Available: true, DriverVersion: 13000},
		Verbs: node.VerbsFacts{Available: true, Library: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0", RDMACoreVersion: 50, HasRegDMABufMR: true},
	}
	for i := 0; i < 8; i++ {
		rec.Verbs.Devices = append(rec.Verbs.Devices, fmt.Sprintf("mlx5_%d", i))
	}
	for i, bus := range gpus {
		g := node.CUDAGPU{Ordinal: i, BusID: bus, GDRSupported: &one, FlushWritesOptions: &one, WritesOrdering: &ordering, DMABufSupported: &one,
			Export: node.DMABufExport{Tried: true, OK: true, Bytes: 2 << 20}}
		if c.proprietary {
			g.DMABufSupported = &zero
			g.Export = node.DMABufExport{Tried: true, Error: "cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED (801): operation not supported"}
		}
		rec.CUDA.GPUs = append(rec.CUDA.GPUs, g)
		nic := fmt.Sprintf("mlx5_%d", i)
		dm := node.Registration{GPU: bus, NIC: nic, Path: node.PathDMABuf, OK: !c.proprietary}
		if c.proprietary {
			dm.Error = "no dma-buf fd to register: the export failed"
		}
		pm := node.Registration{GPU: bus, NIC: nic, Path: node.PathPeermem, OK: c.peermem == "registered" || c.peermem == "doca"}
		if !pm.OK {
			pm.Error = "ibv_reg_mr: Bad address (errno 14)"
		}
		rec.Verbs.Registrations = append(rec.Verbs.Registrations, dm, pm)
	}
	return rec
}

// RTX6000Ada2 builds a workstation node: 2 x RTX 6000 Ada (BAR1 256 MiB,
// idle at PCIe Gen1 of Gen4 in P8, as nvidia-smi -q in
// fixtures/corpus/nvidia-smi-q shows) behind one switch with a
// ConnectX-7 (PXB), on the proprietary driver without nvidia_peermem.
func RTX6000Ada2(dir string) (*Tree, error) {
	t := New(dir)
	t.Hostname = "ws-node"
	t.Proprietary = true
	t.Driver = "550.127.05"
	t.CPUs(1, 32, 2) // Threadripper PRO 32 cores
	t.CPUInfo("AuthenticAMD", 25, 8, "AMD Ryzen Threadripper PRO 5975WX 32-Cores", false)
	t.HostBridge("pci0000:00", 0, "0-63")
	t.Bridge("pci0000:00", "0000:00:01.0", 0)
	t.Bridge("0000:00:01.0", "0000:01:00.0", -1)
	t.Bridge("0000:01:00.0", "0000:02:00.0", 0)
	t.Bridge("0000:01:00.0", "0000:02:01.0", 0)
	t.Bridge("0000:01:00.0", "0000:02:02.0", 0)
	t.Bridge("0000:02:02.0", "0000:05:00.0", -1)
	t.Bridge("0000:05:00.0", "0000:06:00.0", 0)
	idle := Link{CurGTs: 2.5, MaxGTs: 16, CurWidth: 16, MaxWidth: 16}
	t.GPU("0000:02:00.0", "0000:03:00.0", 0x26b1, idle)
	t.GPU("0000:02:01.0", "0000:04:00.0", 0x26b1, idle)
	t.AddNIC("0000:06:00.0", "0000:07:00.0", CX7("mlx5_0", "ens1np0"))
	p8 := 8
	rec := &node.NVMLRecording{NVMLFacts: node.NVMLFacts{DriverVersion: "550.127.05", NVMLVersion: "12.550.127.05", CUDADriverVersion: 12040}}
	for i, bus := range []string{"0000:03:00.0", "0000:04:00.0"} {
		rec.GPUs = append(rec.GPUs, node.GPU{
			Index: i, Minor: &i, Name: "NVIDIA RTX 6000 Ada Generation", UUID: fmt.Sprintf("GPU-2c1e0f3e-0000-4000-8000-00000000000%d", i),
			BusID: bus, PCIDeviceID: "0x26b1", MemoryMiB: 49140, NUMANode: -1,
			PCIe: node.GPUPCIe{CurGen: 1, MaxGen: 4, CurWidth: 16, MaxWidth: 16},
			BAR1: &node.BAR1{TotalMiB: 256, UsedMiB: 2, FreeMiB: 254}, PerfState: &p8, Source: "nvml",
			Fabric: &node.GPUFabric{Return: "ERROR_NOT_SUPPORTED"}, // no NVSwitch
		})
	}
	rec.Pairs = []node.GPUPair{{A: "0000:03:00.0", B: "0000:04:00.0", Ancestor: "SINGLE", P2PRead: "CHIPSET_NOT_SUPPORTED", P2PWrite: "CHIPSET_NOT_SUPPORTED", NVLink: "NOT_SUPPORTED"}}
	t.NVML = rec
	zero, one := 0, 1
	gd := &node.GPUDirectRecording{
		CUDA:  node.CUDAFacts{Available: true, DriverVersion: 12040},
		Verbs: node.VerbsFacts{Available: true, Library: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.39.0", RDMACoreVersion: 39, HasRegDMABufMR: true, Devices: []string{"mlx5_0"}},
	}
	for i, bus := range []string{"0000:03:00.0", "0000:04:00.0"} {
		gd.CUDA.GPUs = append(gd.CUDA.GPUs, node.CUDAGPU{Ordinal: i, BusID: bus, GDRSupported: &one, DMABufSupported: &zero,
			Export: node.DMABufExport{Tried: true, Error: "cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED (801): operation not supported"}})
		gd.Verbs.Registrations = append(gd.Verbs.Registrations,
			node.Registration{GPU: bus, NIC: "mlx5_0", Path: node.PathDMABuf, Error: "no dma-buf fd to register: the export failed"},
			node.Registration{GPU: bus, NIC: "mlx5_0", Path: node.PathPeermem, Error: "ibv_reg_mr: Bad address (errno 14)"})
	}
	t.GPUDirect = gd
	return t, t.Finish()
}
