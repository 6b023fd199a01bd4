package nodetest

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// The node shapes besides the HGX H100 board: a PCIe box without NVLink
// and a Grace node, each healthy, as gdrcheck meets them on real clusters.

// Gen4x16 is the link of PCIe Gen4 parts (L40S).
var Gen4x16 = Link{16, 16, 16, 16}

// L40S8 builds an 8 x L40S PCIe server without NVLink, on one socket whose
// two root complexes (one NUMA node, as AMD EPYC in NPS1) each hold a
// PCIe switch with four GPUs, behind two second-level switches of two, and
// one ConnectX-7: every GPU is PXB to its own NIC and NODE to the other.
// GPUs reach peers over PCIe P2P under their own root complex only; across
// them NVML reports no P2P support, so NCCL uses SHM there.
func L40S8(dir string) (*Tree, error) {
	t := New(dir)
	t.Hostname = "l40s-node"
	rec := &node.NVMLRecording{NVMLFacts: node.NVMLFacts{DriverVersion: "580.95.05", NVMLVersion: "13.580.95.05", CUDADriverVersion: 13000}}
	t.NVML = rec
	var gpus []string
	t.CPUs(1, 64, 2) // EPYC 9554: 64 cores with SMT
	t.CPUInfo("AuthenticAMD", 25, 17, "AMD EPYC 9554 64-Core Processor", false)
	for rc, hb := range []string{"pci0000:10", "pci0000:90"} {
		t.HostBridge(hb, 0, "0-127")
		base := 0x10 + 0x80*rc
		rp := fmt.Sprintf("0000:%02x:01.0", base)
		usp := fmt.Sprintf("0000:%02x:00.0", base+1)
		t.Bridge(hb, rp, 0)
		t.Bridge(rp, usp, -1)
		for sw := 0; sw < 2; sw++ {
			dsp := fmt.Sprintf("0000:%02x:%02x.0", base+2, sw)
			usp2 := fmt.Sprintf("0000:%02x:00.0", base+3+4*sw)
			t.Bridge(usp, dsp, 0)
			t.Bridge(dsp, usp2, -1)
			for port := 0; port < 2; port++ {
				dsp2 := fmt.Sprintf("0000:%02x:%02x.0", base+4+4*sw, port)
				ep := fmt.Sprintf("0000:%02x:00.0", base+0xa+4*sw+port)
				t.Bridge(usp2, dsp2, 0)
				t.GPU(dsp2, ep, 0x26b9, Gen4x16)
				rec.GPUs = append(rec.GPUs, l40s(len(gpus), ep))
				gpus = append(gpus, ep)
			}
		}
		nicPort := fmt.Sprintf("0000:%02x:02.0", base+2)
		t.Bridge(usp, nicPort, 0)
		t.AddNIC(nicPort, fmt.Sprintf("0000:%02x:00.0", base+0x20), CX7(fmt.Sprintf("mlx5_%d", rc), fmt.Sprintf("ens%dnp0", rc+1)))
	}
	for i := range gpus {
		for j := i + 1; j < len(gpus); j++ {
			p := node.GPUPair{A: gpus[i], B: gpus[j], Ancestor: "NODE", P2PRead: "NOT_SUPPORTED", P2PWrite: "NOT_SUPPORTED", NVLink: "NOT_SUPPORTED"}
			switch {
			case i/2 == j/2:
				p.Ancestor, p.P2PRead, p.P2PWrite = "SINGLE", "OK", "OK"
			case i/4 == j/4:
				p.Ancestor, p.P2PRead, p.P2PWrite = "MULTIPLE", "OK", "OK"
			}
			rec.Pairs = append(rec.Pairs, p)
		}
	}
	t.GPUDirect = railRegistrations(gpus, func(i int) int { return i / 4 }, 2)
	return t, t.Finish()
}

func l40s(i int, bus string) node.GPU {
	ps := 0
	return node.GPU{
		Index: i, Minor: &i, Name: "NVIDIA L40S", UUID: fmt.Sprintf("GPU-4c405000-0000-4000-8000-00000000000%d", i),
		BusID: bus, PCIDeviceID: "0x26b9", MemoryMiB: 46068, NUMANode: -1,
		PCIe: node.GPUPCIe{CurGen: 4, MaxGen: 4, CurWidth: 16, MaxWidth: 16},
		// Datacenter Ada ships with a large BAR1 (64 GiB).
		BAR1:      &node.BAR1{TotalMiB: 65536, UsedMiB: 1, FreeMiB: 65535},
		PerfState: &ps, Source: "nvml",
		Fabric: &node.GPUFabric{Return: "ERROR_NOT_SUPPORTED"}, // PCIe: no fabric
	}
}

// GH200x4 builds a quad Grace Hopper node (aarch64): four GH200 superchips,
// each a Grace CPU with its own NUMA node and a Hopper GPU joined to it by
// NVLink-C2C, the GPUs NVLinked to each other, and one ConnectX-7 per Grace
// on that CPU's PCIe. Each GPU reaches its NIC through its own CPU over
// C2C (P2C), where NCCL 2.27 and later use GPUDirect RDMA by default.
func GH200x4(dir string) (*Tree, error) {
	t := New(dir)
	t.Hostname = "gh200-node"
	t.Arch = "aarch64"
	t.Kernel = "6.8.0-1021-nvidia-64k"
	t.GDRCopy = true // the one fixture with GDRCopy installed and loaded
	rec := &node.NVMLRecording{NVMLFacts: node.NVMLFacts{DriverVersion: "580.95.05", NVMLVersion: "13.580.95.05", CUDADriverVersion: 13000}}
	t.NVML = rec
	var gpus []string
	t.CPUs(4, 72, 1) // Grace: 72 cores, no SMT
	for s := 0; s < 4; s++ {
		cpus := fmt.Sprintf("%d-%d", 72*s, 72*s+71)
		gpuHB, nicHB := fmt.Sprintf("pci%04x:00", 0x9+0x10*s), fmt.Sprintf("pci%04x:00", 0x10*s)
		t.HostBridge(gpuHB, s, cpus)
		t.HostBridge(nicHB, s, cpus)
		grp := fmt.Sprintf("%04x:00:00.0", 0x9+0x10*s)
		t.Bridge(gpuHB, grp, 0)
		ep := fmt.Sprintf("%04x:01:00.0", 0x9+0x10*s)
		t.GPU(grp, ep, 0x2342, Gen5x16)
		rec.GPUs = append(rec.GPUs, gh200(s, ep))
		gpus = append(gpus, ep)
		nrp := fmt.Sprintf("%04x:00:00.0", 0x10*s)
		t.Bridge(nicHB, nrp, 0)
		t.AddNIC(nrp, fmt.Sprintf("%04x:01:00.0", 0x10*s), CX7(fmt.Sprintf("mlx5_%d", s), fmt.Sprintf("ibp%ds0", 1+s)))
	}
	for i := range gpus {
		for j := i + 1; j < len(gpus); j++ {
			rec.Pairs = append(rec.Pairs, node.GPUPair{A: gpus[i], B: gpus[j], Ancestor: "SYSTEM", P2PRead: "OK", P2PWrite: "OK", NVLink: "OK"})
		}
	}
	t.GPUDirect = railRegistrations(gpus, func(i int) int { return i }, 4)
	return t, t.Finish()
}

func gh200(i int, bus string) node.GPU {
	ps := 0
	return node.GPU{
		Index: i, Minor: &i, Name: "NVIDIA GH200 120GB", UUID: fmt.Sprintf("GPU-6b200000-0000-4000-8000-00000000000%d", i),
		BusID: bus, PCIDeviceID: "0x2342", MemoryMiB: 97871, NUMANode: -1,
		PCIe:      node.GPUPCIe{CurGen: 5, MaxGen: 5, CurWidth: 16, MaxWidth: 16},
		BAR1:      &node.BAR1{TotalMiB: 131072, UsedMiB: 1, FreeMiB: 131071},
		PerfState: &ps, NVLinks: node.NVLinks{Up: 18, Total: 18}, C2C: true, Source: "nvml",
		// NVLinked to each other without an NVSwitch: NVML answers,
		// with no fabric state (as leptonai/gpud#1108 shows one).
		Fabric: &node.GPUFabric{State: node.FabricNotSupported, Status: "SUCCESS"},
	}
}

// railRegistrations is what libcuda and libibverbs answer on an open-module
// node: every GPU exports its memory as a dma-buf and registers it with its
// rail NIC (nicOf) on the DMA-BUF path; nvidia_peermem is not loaded.
func railRegistrations(gpus []string, nicOf func(int) int, nics int) *node.GPUDirectRecording {
	one, ordering := 1, 200
	rec := &node.GPUDirectRecording{
		CUDA:  node.CUDAFacts{Available: true, DriverVersion: 13000},
		Verbs: node.VerbsFacts{Available: true, Library: "/usr/lib/libibverbs.so.1.14.50.0", RDMACoreVersion: 50, HasRegDMABufMR: true},
	}
	for i := 0; i < nics; i++ {
		rec.Verbs.Devices = append(rec.Verbs.Devices, fmt.Sprintf("mlx5_%d", i))
	}
	for i, bus := range gpus {
		rec.CUDA.GPUs = append(rec.CUDA.GPUs, node.CUDAGPU{Ordinal: i, BusID: bus, GDRSupported: &one, FlushWritesOptions: &one, WritesOrdering: &ordering, DMABufSupported: &one,
			Export: node.DMABufExport{Tried: true, OK: true, Bytes: 2 << 20}})
		nic := fmt.Sprintf("mlx5_%d", nicOf(i))
		rec.Verbs.Registrations = append(rec.Verbs.Registrations,
			node.Registration{GPU: bus, NIC: nic, Path: node.PathDMABuf, OK: true},
			node.Registration{GPU: bus, NIC: nic, Path: node.PathPeermem, Error: "ibv_reg_mr: Bad address (errno 14)"})
	}
	return rec
}

// PCIeWorkstation builds the box of NVIDIA/nccl#2079: 2 x RTX 6000 Ada
// on an AMD Threadripper PRO, each GPU behind its own GPP bridge (a root
// port) of one root complex (PHB), no NVLink, no RDMA NIC. NVML reports
// PCIe P2P between them, so NCCL moves intra-node traffic over it. acsCtl
// is the ACS control of both GPP bridges: 0 is healthy; 0x1d (SrcValid,
// ReqRedir, CmpltRedir, UpstreamFwd), as that board's firmware left it,
// redirects the peer traffic to the root complex and NCCL deadlocks.
func PCIeWorkstation(acsCtl int) func(dir string) (*Tree, error) {
	return func(dir string) (*Tree, error) {
		t := New(dir)
		t.Hostname = "ws-node"
		t.CPUs(1, 32, 2)
		t.CPUInfo("AuthenticAMD", 25, 8, "AMD Ryzen Threadripper PRO 5975WX 32-Cores", false)
		t.HostBridge("pci0000:40", 0, "0-63")
		rec := &node.NVMLRecording{NVMLFacts: node.NVMLFacts{DriverVersion: "580.95.05", NVMLVersion: "13.580.95.05", CUDADriverVersion: 13000}}
		var gpus []string
		for i, gpp := range []string{"0000:40:01.1", "0000:40:03.1"} {
			bus := fmt.Sprintf("0000:%02x:00.0", 0x41+i)
			t.Bridge("pci0000:40", gpp, acsCtl)
			t.GPU(gpp, bus, 0x26b1, Gen4x16)
			ps := 0
			rec.GPUs = append(rec.GPUs, node.GPU{
				Index: i, Minor: &i, Name: "NVIDIA RTX 6000 Ada Generation", UUID: fmt.Sprintf("GPU-2c1e0f3e-0000-4000-8000-00000000010%d", i),
				BusID: bus, PCIDeviceID: "0x26b1", MemoryMiB: 49140, NUMANode: -1,
				PCIe: node.GPUPCIe{CurGen: 4, MaxGen: 4, CurWidth: 16, MaxWidth: 16},
				BAR1: &node.BAR1{TotalMiB: 65536, UsedMiB: 2, FreeMiB: 65534}, PerfState: &ps, Source: "nvml",
			})
			gpus = append(gpus, bus)
		}
		rec.Pairs = []node.GPUPair{{A: gpus[0], B: gpus[1], Ancestor: "HOSTBRIDGE", P2PRead: "OK", P2PWrite: "OK", NVLink: "NOT_SUPPORTED"}}
		t.NVML = rec
		return t, t.Finish()
	}
}
