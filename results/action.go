package results

import (
	"fmt"
	"slices"
)

// Action is what a remediation pipeline does about a failure: one word
// of a fixed vocabulary, ordered by disruption (docs/reference.md, "Health
// loop", maps it onto NVML's, DCGM's, NVSentinel's and HyperPod's names).
// The empty Action is "not given", which only a passing spec may have.
type Action string

// The vocabulary, least disruptive first. INVESTIGATE ranks above the
// automated actions: a cause gdrcheck cannot name keeps the node out until
// a person has looked. CHECK_CABLE and REPLACE need someone at the rack.
const (
	ActionNone         Action = "NONE"          // nothing to do: a warning, or not this node's fault
	ActionRerun        Action = "RERUN"         // run the check again (stale result, transient, gdrcheck could not evaluate)
	ActionFixConfig    Action = "FIX_CONFIG"    // change a setting, a file or a package; no reboot
	ActionReloadDriver Action = "RELOAD_DRIVER" // unload and load a kernel module (nvidia_peermem, gdrdrv, nvidia)
	ActionResetGPU     Action = "RESET_GPU"     // nvidia-smi -r or a PCIe function reset of one GPU
	ActionReboot       Action = "REBOOT"        // reboot the node
	ActionReimage      Action = "REIMAGE"       // reinstall the node's image (kernel, driver, OFED)
	ActionInvestigate  Action = "INVESTIGATE"   // a person looks; the cause is not one gdrcheck can name
	ActionCheckCable   Action = "CHECK_CABLE"   // reseat or replace a cable or transceiver
	ActionReplace      Action = "REPLACE"       // replace a GPU, NIC or board
)

// Actions is the vocabulary in order of disruption.
var Actions = []Action{ActionNone, ActionRerun, ActionFixConfig, ActionReloadDriver, ActionResetGPU,
	ActionReboot, ActionReimage, ActionInvestigate, ActionCheckCable, ActionReplace}

// Rank is the action's place in Actions (0 for NONE); -1 for a word
// outside the vocabulary and for the empty Action.
func (a Action) Rank() int { return slices.Index(Actions, a) }

// Valid says whether a is a word of the vocabulary.
func (a Action) Valid() bool { return a.Rank() >= 0 }

// ParseAction reads an action word, refusing one outside the vocabulary.
func ParseAction(s string) (Action, error) {
	if a := Action(s); a.Valid() {
		return a, nil
	}
	return "", fmt.Errorf("action %q: want one of %v", s, Actions)
}

// MostDisruptive is the most disruptive of the actions given, the empty
// Action where none is valid.
func MostDisruptive(as ...Action) Action {
	var m Action
	for _, a := range as {
		if a.Rank() > m.Rank() {
			m = a
		}
	}
	return m
}

// Scope is what an action applies to.
type Scope string

const (
	ScopeGPU        Scope = "gpu"        // one GPU: Entity is its PCI bus id
	ScopeNIC        Scope = "nic"        // one RDMA NIC: mlx5_3
	ScopePort       Scope = "port"       // one NIC port: mlx5_3/1
	ScopeLink       Scope = "link"       // a PCIe or NVLink link: the device at its end
	ScopeNode       Scope = "node"       // the whole node: its name
	ScopeFabric     Scope = "fabric"     // the network beyond the node
	ScopeAllocation Scope = "allocation" // the job's nodes together
)

// Scopes lists the scopes.
var Scopes = []Scope{ScopeGPU, ScopeNIC, ScopePort, ScopeLink, ScopeNode, ScopeFabric, ScopeAllocation}

// Valid says whether s is one of Scopes.
func (s Scope) Valid() bool { return slices.Contains(Scopes, s) }
