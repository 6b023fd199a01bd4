package node

// GPU is one NVIDIA GPU as NVML and sysfs describe it. Fields NVML fills are
// zero when NVML was unavailable; Source says which readers contributed.
type GPU struct {
	Index       int     `json:"index"`                // NVML index; -1 when NVML did not answer
	Minor       *int    `json:"minor,omitempty"`      // nvmlDeviceGetMinorNumber, else proc/driver/nvidia/gpus/<bus id>/information Device Minor: the N of /dev/nvidiaN; optional
	Name        string  `json:"name,omitempty"`       // nvmlDeviceGetName
	Model       string  `json:"model,omitempty"`      // proc/driver/nvidia/gpus/<bus id>/information Model, where NVML gave no name
	UUID        string  `json:"uuid,omitempty"`       // nvmlDeviceGetUUID
	BusID       string  `json:"bus_id"`               // nvmlDeviceGetPciInfo busId, else the sys/bus/pci/devices entry; sysfs form, 0000:18:00.0
	PCIDeviceID string  `json:"pci_device_id"`        // nvmlDeviceGetPciInfo pciDeviceId, else sysfs device; e.g. 0x2335 (H200 SXM)
	MemoryMiB   uint64  `json:"memory_mib,omitempty"` // nvmlDeviceGetMemoryInfo total
	NUMANode    int     `json:"numa_node"`            // sysfs numa_node; -1 unknown
	CPUList     string  `json:"cpu_list,omitempty"`   // sysfs local_cpulist
	PCIe        GPUPCIe `json:"pcie"`                 // NVML's link, and sysfs's beside it
	BAR1        *BAR1   `json:"bar1,omitempty"`       // nvmlDeviceGetBAR1MemoryInfo; optional
	PerfState   *int    `json:"perf_state,omitempty"` // nvmlDeviceGetPerformanceState (0 = P0); optional
	NVLinks     NVLinks `json:"nvlinks"`              // nvmlDeviceGetNvLinkState per link
	// MIG is nvmlDeviceGetMigMode's current mode, true when MIG is on;
	// nil on parts without MIG (NOT_SUPPORTED) or a recording made
	// before gdrcheck read it.
	MIG *bool `json:"mig,omitempty"` // nvmlDeviceGetMigMode; optional
	// Persistence is nvmlDeviceGetPersistenceMode; nil when NVML could
	// not say.
	Persistence *bool `json:"persistence,omitempty"` // nvmlDeviceGetPersistenceMode; optional
	// Fabric is nvmlDeviceGetGpuFabricInfo: the GPU's registration with
	// an NVSwitch fabric (nvml_fabric.go); nil where the library has no
	// such call or a recording was made before gdrcheck read it.
	Fabric *GPUFabric `json:"fabric,omitempty"` // nvmlDeviceGetGpuFabricInfo; optional
	// C2C is an NVLink-C2C link to the GPU's own CPU (Grace:
	// GH200, GB200), from NVML's FI_DEV_C2C_LINK_COUNT: NICs on that
	// CPU are reached through it rather than over PCIe (class P2C).
	C2C   bool        `json:"c2c,omitempty"` // nvmlDeviceGetFieldValues FI_DEV_C2C_LINK_COUNT > 0
	IOMMU DeviceIOMMU `json:"iommu"`         // sys/bus/pci/devices/<bus id>/iommu_group
	// Driver is the PCI driver the GPU is bound to, the name its
	// sys/bus/pci/devices/<bus id>/driver link ends in (nvidia,
	// nouveau, NovaCore, vfio-pci); "" where unbound or not recorded.
	Driver string `json:"driver,omitempty"` // sys/bus/pci/devices/<bus id>/driver; optional
	Source string `json:"source"`           // "nvml+sysfs" or "sysfs"
}

// GPUPCIe is the GPU's link: generation and width, current against max.
// NVML reports generations; sysfs reports GT/s on the same link.
type GPUPCIe struct {
	CurGen   int       `json:"cur_gen,omitempty"`   // nvmlDeviceGetCurrPcieLinkGeneration
	MaxGen   int       `json:"max_gen,omitempty"`   // nvmlDeviceGetMaxPcieLinkGeneration
	CurWidth int       `json:"cur_width,omitempty"` // nvmlDeviceGetCurrPcieLinkWidth
	MaxWidth int       `json:"max_width,omitempty"` // nvmlDeviceGetMaxPcieLinkWidth
	Sysfs    *PCIeLink `json:"sysfs,omitempty"`     // sys/bus/pci/devices/<bus id>/*_link_*; optional
}

// BAR1 is the GPU's BAR1 aperture in MiB: the window peers (NICs, other
// GPUs) map GPU memory through.
type BAR1 struct {
	TotalMiB uint64 `json:"total_mib"` // nvmlDeviceGetBAR1MemoryInfo bar1Total
	UsedMiB  uint64 `json:"used_mib"`  // nvmlDeviceGetBAR1MemoryInfo bar1Used
	FreeMiB  uint64 `json:"free_mib"`  // nvmlDeviceGetBAR1MemoryInfo bar1Free
}

// NVLinks counts links answered and links up (nvmlDeviceGetNvLinkState).
type NVLinks struct {
	Up    int `json:"up"`    // links nvmlDeviceGetNvLinkState says are enabled
	Total int `json:"total"` // links it answered for
}

// GPUPair is what NVML says about two GPUs: their common ancestor and
// whether peer reads and writes work.
type GPUPair struct {
	A        string `json:"a"`          // bus id, as GPU.BusID
	B        string `json:"b"`          // bus id, as GPU.BusID
	Ancestor string `json:"ancestor"`   // nvmlDeviceGetTopologyCommonAncestor: INTERNAL, SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM
	P2PRead  string `json:"p2p_read"`   // nvmlDeviceGetP2PStatus READ: OK or the NVML P2P status name
	P2PWrite string `json:"p2p_write"`  // nvmlDeviceGetP2PStatus WRITE
	NVLink   string `json:"p2p_nvlink"` // nvmlDeviceGetP2PStatus NVLINK: P2P over NVLink
}

// Downtrained reports whether the GPU's link runs below its maximum width or
// generation. GPUs lower the generation when idle to save power, so a lower
// generation counts only in P0 (busy) or when NVML gave no state.
func (g GPU) Downtrained() (bool, string) {
	p := g.PCIe
	if p.MaxWidth > 0 && p.CurWidth > 0 && p.CurWidth < p.MaxWidth {
		return true, "width"
	}
	if p.MaxGen > 0 && p.CurGen > 0 && p.CurGen < p.MaxGen {
		if g.PerfState == nil || *g.PerfState == 0 {
			return true, "generation"
		}
	}
	if p.Sysfs != nil && p.Sysfs.MaxWidth > 0 && p.Sysfs.CurWidth > 0 && p.Sysfs.CurWidth < p.Sysfs.MaxWidth {
		return true, "width"
	}
	return false, ""
}
