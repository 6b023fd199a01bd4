package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// maxNVLinks is NVML_NVLINK_MAX_LINKS for Hopper and Blackwell.
const maxNVLinks = 18

// ErrNVML wraps every NVML failure, so callers can tell "NVML did not
// answer" (no driver, no library) from a broken sysfs.
var ErrNVML = errors.New("NVML")

// NVMLFacts is what NVML answered for the node.
type NVMLFacts struct {
	DriverVersion     string    `json:"driver_version"`      // nvmlSystemGetDriverVersion
	NVMLVersion       string    `json:"nvml_version"`        // nvmlSystemGetNVMLVersion
	CUDADriverVersion int       `json:"cuda_driver_version"` // nvmlSystemGetCudaDriverVersion, e.g. 13000
	GPUs              []GPU     `json:"gpus"`                // nvmlDeviceGetCount, then each nvmlDeviceGetHandleByIndex
	Pairs             []GPUPair `json:"pairs"`               // every two of GPUs
}

// NVMLError is a failed NVML call: what was asked and what NVML returned.
// It matches ErrNVML with errors.Is.
type NVMLError struct {
	What string
	Ret  nvml.Return
}

func (e *NVMLError) Error() string {
	if e.Ret == nvml.ERROR_LIBRARY_NOT_FOUND {
		return "NVML: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND)"
	}
	return fmt.Sprintf("NVML: %s: %s", e.What, returnName(e.Ret))
}

func (e *NVMLError) Is(target error) bool { return target == ErrNVML }

// nvmlError wraps a failed NVML call with what was asked.
func nvmlError(what string, ret nvml.Return) error {
	return &NVMLError{What: what, Ret: ret}
}

// CollectNVML initialises lib, reads every device and every pair, and shuts
// it down in the background. Optional answers (NOT_SUPPORTED on some parts) leave fields zero;
// failures of the calls every GPU answers are errors.
func CollectNVML(lib nvml.Interface) (NVMLFacts, error) {
	var f NVMLFacts
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return f, nvmlError("initialising", ret)
	}
	// nvmlShutdown waits for a cuInit running in another thread: on an
	// H200 it took 0.18 s beside the probe's cuInit and 0.004 s alone,
	// which put cuInit on the evidence's path. Nothing here needs it done;
	// NVML's and go-nvml's init counts keep a later Init safe.
	defer func() { go lib.Shutdown() }()

	var ret nvml.Return
	if f.DriverVersion, ret = lib.SystemGetDriverVersion(); ret != nvml.SUCCESS {
		return f, nvmlError("driver version", ret)
	}
	f.NVMLVersion, _ = lib.SystemGetNVMLVersion()
	f.CUDADriverVersion, _ = lib.SystemGetCudaDriverVersion()

	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return f, nvmlError("device count", ret)
	}
	devs := make([]nvml.Device, 0, n)
	fabric := fabricEntry(lib)
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return f, nvmlError(fmt.Sprintf("GPU %d handle", i), ret)
		}
		g, err := nvmlGPU(i, d)
		if err != nil {
			return f, err
		}
		g.Fabric = gpuFabric(fabric, d)
		devs = append(devs, d)
		f.GPUs = append(f.GPUs, g)
	}
	for i := range devs {
		for j := i + 1; j < len(devs); j++ {
			f.Pairs = append(f.Pairs, nvmlPair(f.GPUs[i].BusID, f.GPUs[j].BusID, devs[i], devs[j]))
		}
	}
	return f, nil
}

func nvmlGPU(i int, d nvml.Device) (GPU, error) {
	g := GPU{Index: i, NUMANode: -1, Source: "nvml"}
	var ret nvml.Return
	pci, ret := d.GetPciInfo()
	if ret != nvml.SUCCESS {
		return g, nvmlError(fmt.Sprintf("GPU %d PCI info", i), ret)
	}
	g.BusID = NormalizeBusID(cString(pci.BusId[:]))
	if g.BusID == "" {
		g.BusID = fmt.Sprintf("%04x:%02x:%02x.0", pci.Domain, pci.Bus, pci.Device)
	}
	g.PCIDeviceID = fmt.Sprintf("%#04x", pci.PciDeviceId>>16)
	if g.Name, ret = d.GetName(); ret != nvml.SUCCESS {
		return g, nvmlError(fmt.Sprintf("GPU %s name", g.BusID), ret)
	}
	if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return g, nvmlError(fmt.Sprintf("GPU %s UUID", g.BusID), ret)
	}
	if m, ret := d.GetMinorNumber(); ret == nvml.SUCCESS {
		g.Minor = &m
	}
	if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.MemoryMiB = m.Total >> 20
	}
	if b, ret := d.GetBAR1MemoryInfo(); ret == nvml.SUCCESS {
		g.BAR1 = &BAR1{TotalMiB: b.Bar1Total >> 20, UsedMiB: b.Bar1Used >> 20, FreeMiB: b.Bar1Free >> 20}
	}
	g.PCIe.CurGen, _ = d.GetCurrPcieLinkGeneration()
	g.PCIe.CurWidth, _ = d.GetCurrPcieLinkWidth()
	g.PCIe.MaxGen, _ = d.GetMaxPcieLinkGeneration()
	g.PCIe.MaxWidth, _ = d.GetMaxPcieLinkWidth()
	if p, ret := d.GetPerformanceState(); ret == nvml.SUCCESS && p != nvml.PSTATE_UNKNOWN {
		ps := int(p)
		g.PerfState = &ps
	}
	g.C2C = c2cLinks(d) > 0
	if cur, _, ret := d.GetMigMode(); ret == nvml.SUCCESS {
		on := cur == nvml.DEVICE_MIG_ENABLE
		g.MIG = &on
	}
	if m, ret := d.GetPersistenceMode(); ret == nvml.SUCCESS {
		on := m == nvml.FEATURE_ENABLED
		g.Persistence = &on
	}
	for l := 0; l < maxNVLinks; l++ {
		st, ret := d.GetNvLinkState(l)
		if ret != nvml.SUCCESS {
			// Links past the part's count answer INVALID_ARGUMENT;
			// PCIe parts answer NOT_SUPPORTED for all.
			continue
		}
		g.NVLinks.Total++
		if st == nvml.FEATURE_ENABLED {
			g.NVLinks.Up++
		}
	}
	return g, nil
}

// c2cLinks is the GPU's NVLink-C2C link count; 0 where it has none or
// NVML cannot say (parts and drivers before Grace answer NOT_SUPPORTED).
func c2cLinks(d nvml.Device) uint32 {
	v := []nvml.FieldValue{{FieldId: nvml.FI_DEV_C2C_LINK_COUNT}}
	if d.GetFieldValues(v) != nvml.SUCCESS || nvml.Return(v[0].NvmlReturn) != nvml.SUCCESS {
		return 0
	}
	return binary.LittleEndian.Uint32(v[0].Value[:4])
}

func nvmlPair(a, b string, da, db nvml.Device) GPUPair {
	p := GPUPair{A: a, B: b}
	if lvl, ret := da.GetTopologyCommonAncestor(db); ret == nvml.SUCCESS {
		p.Ancestor = topologyLevelName(lvl)
	} else {
		p.Ancestor = returnName(ret)
	}
	p.P2PRead = p2pStatus(da.GetP2PStatus(db, nvml.P2P_CAPS_INDEX_READ))
	p.P2PWrite = p2pStatus(da.GetP2PStatus(db, nvml.P2P_CAPS_INDEX_WRITE))
	p.NVLink = p2pStatus(da.GetP2PStatus(db, nvml.P2P_CAPS_INDEX_NVLINK))
	return p
}

// topologyLevelName names NVML's nvmlGpuTopologyLevel_t. TOPOLOGY_CPU is a
// deprecated alias generated as 0, so it is never compared against.
func topologyLevelName(l nvml.GpuTopologyLevel) string {
	switch l {
	case nvml.TOPOLOGY_INTERNAL:
		return "INTERNAL"
	case nvml.TOPOLOGY_SINGLE:
		return "SINGLE"
	case nvml.TOPOLOGY_MULTIPLE:
		return "MULTIPLE"
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return "HOSTBRIDGE"
	case nvml.TOPOLOGY_NODE:
		return "NODE"
	case nvml.TOPOLOGY_SYSTEM:
		return "SYSTEM"
	}
	return fmt.Sprintf("LEVEL_%d", l)
}

// topologyLevel is the inverse of topologyLevelName, for recordings.
func topologyLevel(name string) (nvml.GpuTopologyLevel, bool) {
	for _, l := range []nvml.GpuTopologyLevel{nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE, nvml.TOPOLOGY_MULTIPLE, nvml.TOPOLOGY_HOSTBRIDGE, nvml.TOPOLOGY_NODE, nvml.TOPOLOGY_SYSTEM} {
		if topologyLevelName(l) == name {
			return l, true
		}
	}
	return 0, false
}

var p2pStatusNames = map[nvml.GpuP2PStatus]string{
	nvml.P2P_STATUS_OK:                         "OK",
	nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED:      "CHIPSET_NOT_SUPPORTED",
	nvml.P2P_STATUS_GPU_NOT_SUPPORTED:          "GPU_NOT_SUPPORTED",
	nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED: "IOH_TOPOLOGY_NOT_SUPPORTED",
	nvml.P2P_STATUS_DISABLED_BY_REGKEY:         "DISABLED_BY_REGKEY",
	nvml.P2P_STATUS_NOT_SUPPORTED:              "NOT_SUPPORTED",
	nvml.P2P_STATUS_UNKNOWN:                    "UNKNOWN",
}

func p2pStatus(s nvml.GpuP2PStatus, ret nvml.Return) string {
	if ret != nvml.SUCCESS {
		return returnName(ret)
	}
	if n, ok := p2pStatusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("STATUS_%d", s)
}

// p2pStatusValue is the inverse of p2pStatus, for recordings.
func p2pStatusValue(name string) (nvml.GpuP2PStatus, bool) {
	for v, n := range p2pStatusNames {
		if n == name {
			return v, true
		}
	}
	return 0, false
}

// cString converts NVML's NUL-terminated char arrays.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
