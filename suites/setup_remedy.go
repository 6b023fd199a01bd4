package suites

import (
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// problemActions map the error names that a source's message carries
// (NVML's return codes, CUDA's, as go-nvml and cuda.h spell them) to what
// clears them, as the causes the harness names say
// (harness/node/evidence_causes.go). Names, not prose: the message is
// the source's own.
var problemActions = []struct {
	name   string
	action results.Action
}{
	{"ERROR_LIB_RM_VERSION_MISMATCH", results.ActionReloadDriver}, // upgraded driver, old modules
	{"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", results.ActionReloadDriver},
	{"ERROR_DRIVER_NOT_LOADED", results.ActionReloadDriver},
	{"ERROR_GPU_IS_LOST", results.ActionReboot},             // Xid 79: the GPU is off the bus
	{"CUDA_ERROR_SYSTEM_NOT_READY", results.ActionResetGPU}, // fabric manager: start it, reset the GPUs
	{"ERROR_LIBRARY_NOT_FOUND", results.ActionFixConfig},
	{"CUDA_ERROR_INSUFFICIENT_DRIVER", results.ActionReimage},
	{"ERROR_NO_PERMISSION", results.ActionRerun}, // gdrcheck's own: run it as root
}

// evidenceRemedy is what to do about a node whose evidence could not be
// collected in full: the most disruptive action of its problems, each
// taken from the error it names, INVESTIGATE for one that names none
// gdrcheck knows (a node with no NVIDIA GPU at all among them).
func evidenceRemedy(ev *node.Evidence) results.Remedy {
	var as []results.Action
	for _, p := range ev.Problems {
		if !p.Fatal && !p.Incomplete {
			continue
		}
		a := results.ActionInvestigate
		for _, pa := range problemActions {
			if strings.Contains(p.Message, pa.name) {
				a = pa.action
				break
			}
		}
		as = append(as, a)
	}
	return results.Remedy{Action: results.MostDisruptive(as...), Scope: results.ScopeNode}
}
