package topology

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// fabricCheck is the judgement of the GPUs' NVSwitch fabric state:
// failures naming GPU, state and fix; skip (no fabric on this node) or
// unknown (nothing to judge by); notes.
type fabricCheck struct {
	bad     []string
	notes   []string
	skip    string
	unknown string
}

// The fixes, in the admin's words. Until nvidia-fabricmanager has
// registered a GPU with the NVSwitch fabric, CUDA answers 802 "system not
// yet initialized" and NCCL cannot start (NVIDIA/nccl-tests#264,
// NVIDIA/nccl#1488); a fabric manager restarted without a GPU reset, or
// out of resources, leaves the GPUs COMPLETED with another status
// (Azure/azhpc-images#506: "Insufficient Resources"; NVIDIA/nccl#976:
// NVLS fails after a restart until the GPUs are reset).
const (
	fixNotRegistered = "start nvidia-fabricmanager (systemctl enable --now nvidia-fabricmanager; its version must be the driver's) and read /var/log/fabricmanager.log"
	fixRegisterError = "restart nvidia-fabricmanager and reset the GPUs (nvidia-smi -r with no process on them, or reboot): a fabric manager restarted without a GPU reset leaves the GPUs so; if it stays, drain the node for an NVSwitch tray check"
)

// checkFabric judges nvmlDeviceGetGpuFabricInfo per GPU. A GPU NVML puts
// in no fabric (NOT_SUPPORTED: PCIe parts, NVLink bridges, GPUs before
// Hopper, a lone GPU of an HGX) has nothing to check; the others must be
// COMPLETED with status SUCCESS, the status counting only once COMPLETED
// (nvml.h). A COMPLETED GPU whose status is NOT_SUPPORTED is taken as
// outside the fabric, not failed.
func checkFabric(gpus []node.GPU) fabricCheck {
	var c fabricCheck
	known, in, nvlinked := 0, 0, false
	for _, g := range gpus {
		nvlinked = nvlinked || g.NVLinks.Total > 0
		f := g.Fabric
		if f == nil {
			continue
		}
		known++
		if !f.InFabric() || f.State == node.FabricCompleted && f.Status == "ERROR_NOT_SUPPORTED" {
			continue
		}
		in++
		switch {
		case f.State != node.FabricCompleted:
			c.bad = append(c.bad, fmt.Sprintf("%s has NVLink fabric state %s: nvidia-fabricmanager has not registered it with the NVSwitch fabric, so CUDA fails with error 802 (system not yet initialized) and NCCL cannot start; %s",
				suites.GPUName(g), f.State, fixNotRegistered))
		case f.Status != "SUCCESS":
			c.bad = append(c.bad, fmt.Sprintf("%s has NVLink fabric state COMPLETED with status %s: the fabric manager could not add it to the NVSwitch fabric, so peer access and NVLS over NVSwitch fail; %s",
				suites.GPUName(g), f.Status, fixRegisterError))
		default:
			c.notes = append(c.notes, fmt.Sprintf("%s: fabric state COMPLETED, status SUCCESS, clique %d%s", suites.GPUName(g), f.CliqueID, cluster(f.ClusterUUID)))
		}
	}
	switch {
	case len(gpus) == 0:
		c.skip = "no GPU on this node"
	case known == 0 && !nvlinked:
		c.skip = "no GPU has an NVLink: no NVSwitch fabric to check"
	case known == 0:
		c.unknown = "NVML gave no fabric state (nvmlDeviceGetGpuFabricInfo): a driver before R525 lacks the call, or a recording was made before gdrcheck read it (snapshot the node again)"
	case in == 0:
		c.skip = "NVML puts no GPU in an NVSwitch fabric (NOT_SUPPORTED): no NVSwitch here, so no fabric manager to check"
	case in < known:
		c.notes = append(c.notes, fmt.Sprintf("%d of %d GPUs report no NVSwitch fabric (NOT_SUPPORTED) while the others are in one", known-in, known))
	}
	if known > 0 && known < len(gpus) {
		c.notes = append(c.notes, fmt.Sprintf("%d of %d GPUs have no fabric state from NVML", len(gpus)-known, len(gpus)))
	}
	return c
}

func cluster(uuid string) string {
	if uuid == "" {
		return ""
	}
	return ", cluster " + uuid
}
