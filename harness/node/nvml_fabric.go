package node

import (
	"fmt"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// GPUFabric is what nvmlDeviceGetGpuFabricInfo says of a GPU's place in an
// NVSwitch (NVLink) fabric. On HGX/DGX Hopper and later, nvidia-fabricmanager
// registers every GPU with the fabric at boot; until it has (state
// COMPLETED, status SUCCESS) CUDA answers 802 "system not yet initialized"
// (NVIDIA/nccl-tests#264), and a fabric manager restarted without a GPU
// reset, or one out of resources, leaves the GPUs COMPLETED with another
// status (Azure/azhpc-images#506: "Insufficient Resources").
type GPUFabric struct {
	// Return is the call's own NVML return where it failed:
	// ERROR_NOT_SUPPORTED on a GPU in no NVSwitch fabric (PCIe parts,
	// NVLink bridges, GPUs before Hopper, a lone GPU of an HGX).
	Return string `json:"return,omitempty"` // nvmlDeviceGetGpuFabricInfo's return; optional
	// State is NOT_SUPPORTED, NOT_STARTED, IN_PROGRESS or COMPLETED
	// (NVML_GPU_FABRIC_STATE_*).
	State string `json:"state,omitempty"` // nvmlGpuFabricInfo_t state
	// Status is the registration's nvmlReturn_t, by name (SUCCESS,
	// ERROR_INSUFFICIENT_RESOURCES...); NVML says it counts only once
	// State is COMPLETED.
	Status      string `json:"status,omitempty"`       // nvmlGpuFabricInfo_t status
	CliqueID    uint32 `json:"clique_id,omitempty"`    // nvmlGpuFabricInfo_t cliqueId
	ClusterUUID string `json:"cluster_uuid,omitempty"` // nvmlGpuFabricInfo_t clusterUuid; zero on single-node NVSwitch systems
}

// Fabric states, as NVML_GPU_FABRIC_STATE_* name them.
const (
	FabricNotSupported = "NOT_SUPPORTED"
	FabricNotStarted   = "NOT_STARTED"
	FabricInProgress   = "IN_PROGRESS"
	FabricCompleted    = "COMPLETED"
)

// InFabric says NVML reports the GPU as part of an NVSwitch fabric: the
// call answered and the state is one the fabric manager moves.
func (f GPUFabric) InFabric() bool { return f.Return == "" && f.State != FabricNotSupported }

var fabricStates = []string{FabricNotSupported, FabricNotStarted, FabricInProgress, FabricCompleted}

func fabricStateName(s uint8) string {
	if int(s) < len(fabricStates) {
		return fabricStates[s]
	}
	return fmt.Sprintf("STATE_%d", s)
}

// The fabric entry points, oldest first. The unversioned one is in every
// driver since R525 (deprecated in 13.0, still exported) and is the one
// go-nvml's mocks can answer; the versioned one returns a handler only a
// real library can fill. A driver without either would crash the call
// (go-nvml links with unresolved symbols ignored), so the library is asked
// first (LookupSymbol).
const (
	fabricInfoV1 = "nvmlDeviceGetGpuFabricInfo"
	fabricInfoV  = "nvmlDeviceGetGpuFabricInfoV"
)

// fabricReader reads one device's fabric info; nil when the library has
// no entry point for it.
type fabricReader func(nvml.Device) (info nvml.GpuFabricInfo, ret nvml.Return)

func fabricEntry(lib nvml.Interface) fabricReader {
	ext := lib.Extensions()
	switch {
	case ext.LookupSymbol(fabricInfoV1) == nil:
		return func(d nvml.Device) (nvml.GpuFabricInfo, nvml.Return) { return d.GetGpuFabricInfo() }
	case ext.LookupSymbol(fabricInfoV) == nil:
		return func(d nvml.Device) (nvml.GpuFabricInfo, nvml.Return) {
			v, ret := d.GetGpuFabricInfoV().V2()
			return nvml.GpuFabricInfo{ClusterUuid: v.ClusterUuid, Status: v.Status, CliqueId: v.CliqueId, State: v.State}, ret
		}
	}
	return nil
}

// gpuFabric asks one device; nil when the library cannot be asked.
func gpuFabric(read fabricReader, d nvml.Device) *GPUFabric {
	if read == nil {
		return nil
	}
	info, ret := read(d)
	if ret != nvml.SUCCESS {
		return &GPUFabric{Return: returnName(ret)}
	}
	f := &GPUFabric{State: fabricStateName(info.State), Status: returnName(nvml.Return(info.Status)), CliqueID: info.CliqueId}
	if info.ClusterUuid != ([nvml.GPU_FABRIC_UUID_LEN]uint8{}) {
		u := info.ClusterUuid
		f.ClusterUUID = fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	}
	return f
}

// replayFabric answers GetGpuFabricInfo as a recorded GPU did.
func replayFabric(f *GPUFabric) func() (nvml.GpuFabricInfo, nvml.Return) {
	return func() (nvml.GpuFabricInfo, nvml.Return) {
		if f == nil {
			// Another GPU of the recording has fabric info: this one
			// was a GPU NVML did not answer for.
			return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED
		}
		if f.Return != "" {
			return nvml.GpuFabricInfo{}, returnOf(f.Return)
		}
		info := nvml.GpuFabricInfo{CliqueId: f.CliqueID, Status: uint32(nvml.ERROR_UNKNOWN)}
		if i := slices.Index(fabricStates, f.State); i >= 0 {
			info.State = uint8(i)
		} else {
			fmt.Sscanf(f.State, "STATE_%d", &info.State) // a state NVML added later, kept by number
		}
		if r, ok := returnNames[f.Status]; ok {
			info.Status = uint32(r)
		}
		hex := strings.ReplaceAll(f.ClusterUUID, "-", "")
		for i := 0; i+1 < len(hex) && i/2 < len(info.ClusterUuid); i += 2 {
			fmt.Sscanf(hex[i:i+2], "%02x", &info.ClusterUuid[i/2])
		}
		return info, nvml.SUCCESS
	}
}

// replayExtensions answers LookupSymbol as the recorded library would for
// the entry points the collector asks about: the fabric one exists when
// the recording holds fabric info, so a recording made before gdrcheck
// read it replays with none.
func replayExtensions(gpus []GPU) nvml.ExtendedInterface {
	fabric := false
	for _, g := range gpus {
		fabric = fabric || g.Fabric != nil
	}
	return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
		if s == fabricInfoV1 && fabric {
			return nil
		}
		return fmt.Errorf("%s: not in the recording", s)
	}}
}
