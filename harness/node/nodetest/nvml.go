package nodetest

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// DGXH200 is go-nvml's dgxh200 mock server (8 x H200 SXM 141GB) with the
// methods the collector calls and the mock leaves unset (they would panic)
// answered as on a healthy HGX H200: BAR1 256 GiB, Gen5 x16 in P0, 18
// NVLinks up, peer access OK, GPUs 0-3 and 4-7 on separate sockets.
func DGXH200() *server.Server {
	s := dgxh200.New()
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		i := i
		// The mock answers only the device id; NVML fills the bus id.
		pci := nvml.PciInfo{PciDeviceId: dev.Config.PciDeviceId, Bus: uint32(i)}
		copy(pci.BusId[:], toInt8(fmt.Sprintf("%08X:%02X:00.0", 0, i)))
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pci, nvml.SUCCESS }
		dev.GetBAR1MemoryInfoFunc = func() (nvml.BAR1Memory, nvml.Return) {
			return nvml.BAR1Memory{Bar1Total: 256 << 30, Bar1Used: 1 << 20, Bar1Free: 256<<30 - 1<<20}, nvml.SUCCESS
		}
		gen5 := func() (int, nvml.Return) { return 5, nvml.SUCCESS }
		x16 := func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		dev.GetCurrPcieLinkGenerationFunc, dev.GetMaxPcieLinkGenerationFunc = gen5, gen5
		dev.GetCurrPcieLinkWidthFunc, dev.GetMaxPcieLinkWidthFunc = x16, x16
		dev.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
		dev.GetPerformanceStateFunc = func() (nvml.Pstates, nvml.Return) { return nvml.PSTATE_0, nvml.SUCCESS }
		// On NVSwitch, registered by nvidia-fabricmanager: Completed,
		// Success, as nvidia-smi -q shows a healthy HGX.
		dev.GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
			return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS)}, nvml.SUCCESS
		}
		dev.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
			if l >= 18 {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		dev.GetTopologyCommonAncestorFunc = func(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			if i/4 == o.(*server.Device).Index/4 {
				return nvml.TOPOLOGY_NODE, nvml.SUCCESS
			}
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
		dev.GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		// An x86 HGX board: no NVLink-C2C.
		dev.GetFieldValuesFunc = func(v []nvml.FieldValue) nvml.Return {
			for i := range v {
				v[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			}
			return nvml.SUCCESS
		}
	}
	return s
}

// WithFabric answers every GPU's fabric info of a mock server with state
// and status, as nvidia-fabricmanager left them.
func WithFabric(s *server.Server, state uint8, status nvml.Return) *server.Server {
	for _, d := range s.Devices {
		d.(*server.Device).GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
			return nvml.GpuFabricInfo{State: state, Status: uint32(status)}, nvml.SUCCESS
		}
	}
	return s
}

// WithoutPeerAccess makes every GPU pair of a mock server refuse peer
// reads and writes, as with P2P disabled by a registry key.
func WithoutPeerAccess(s *server.Server) *server.Server {
	for _, d := range s.Devices {
		d.(*server.Device).GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			return nvml.P2P_STATUS_DISABLED_BY_REGKEY, nvml.SUCCESS
		}
	}
	return s
}

func toInt8(s string) []int8 {
	out := make([]int8, len(s))
	for i := range s {
		out[i] = int8(s[i])
	}
	return out
}
