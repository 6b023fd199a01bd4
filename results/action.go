package results

import (
	"fmt"
	"slices"
)

// Action is what a remediation pipeline does about a failure: one word
// of a fixed vocabulary, ordered by disruption (docs/reference.md,
// "Remediation actions", maps it onto NVML's, DCGM's, NVSentinel's and
// HyperPod's names).
// The empty Action is "not given", which only a passing spec may have.
type Action string

// The vocabulary, least disruptive first. INVESTIGATE ranks above the
// automated actions: a cause gdrcheck cannot name keeps the node out until
// a person has looked. CHECK_CABLE and REPLACE need someone at the rack.
const (
	ActionNone         Action = "NONE"          // nothing to do: a warning, or not this node's fault
	ActionRerun        Action = "RERUN"         // run the check again (stale result, transient, gdrcheck could not evaluate)
	ActionFixConfig    Action = "FIX_CONFIG"    // change a setting, a file or a package (a BIOS or kernel command-line setting applies at the next boot)
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

// Remedy is what to do about one failing or unevaluable spec: the action,
// what it applies to, and which one.
type Remedy struct {
	Action Action
	Scope  Scope
	Entity string // a bus id, a NIC, "mlx5_3/1", the node's name; several joined by ","
}

// Remedy is the spec's action, scope and entity.
func (sp Spec) Remedy() Remedy { return Remedy{sp.Action, sp.Scope, sp.Entity} }

// SetRemedy gives the spec its action, scope and entity.
func (sp *Spec) SetRemedy(r Remedy) { sp.Action, sp.Scope, sp.Entity = r.Action, r.Scope, r.Entity }

// Unevaluable says the spec applies but could not run here (a skip of
// kind SkipCannotRun): it carries an action as a failure does.
func (sp Spec) Unevaluable() bool {
	return sp.State == StateSkipped && sp.SkipKind == SkipCannotRun
}

// NeedsRemedy says the spec must carry an action: it failed, or it could
// not be evaluated.
func (sp Spec) NeedsRemedy() bool { return sp.Failed() || sp.Unevaluable() }

// Settle completes a node's actions: a node-scoped spec without an entity
// names the node, and the node's Action becomes the most disruptive of
// its failures. Where nothing failed, it is that of the specs that could
// not run if a whole suite could not (the run exits 2 for it), else NONE;
// a node that was not evaluated and says nothing more is to be run again.
// It is idempotent; the encoder and the readers call it on every node.
func (n *Node) Settle() {
	var failed, unevaluable []Action
	for i := range n.Suites {
		s := &n.Suites[i]
		cannot := s.CannotRun()
		for j := range s.Specs {
			sp := &s.Specs[j]
			if !sp.NeedsRemedy() {
				continue
			}
			if sp.Scope == ScopeNode && sp.Entity == "" {
				sp.Entity = n.Name
			}
			switch {
			case sp.Failed() && !sp.Action.Valid():
				// A failure that names no action is one nobody
				// judged: a person looks (tests keep gdrcheck's
				// own specs from writing one).
				failed = append(failed, ActionInvestigate)
			case sp.Failed():
				failed = append(failed, sp.Action)
			case cannot:
				unevaluable = append(unevaluable, sp.Action)
			}
		}
	}
	a := MostDisruptive(failed...)
	if a == "" {
		a = MostDisruptive(unevaluable...)
	}
	switch {
	case a != "":
	case n.Status != NodeEvaluated:
		a = ActionRerun
	default:
		a = ActionNone
	}
	n.Action = a
}

// Settle settles every node of the results (Node.Settle), the members
// of a folded group too: the writers call it, so each view shows the
// same actions.
func (r *Results) Settle() {
	for i := range r.Nodes {
		r.Nodes[i].Settle()
		if g := r.Nodes[i].Group; g != nil {
			for j := range g.Members {
				g.Members[j].Settle()
			}
		}
	}
}

// Unremedied lists the node's failing and unevaluable specs that carry
// no valid action, scope or entity, as "suite / spec": none may (a test
// walks every fixture node's).
func (n Node) Unremedied() []string {
	var out []string
	for _, s := range n.Suites {
		for _, sp := range s.Specs {
			if sp.NeedsRemedy() && (!sp.Action.Valid() || !sp.Scope.Valid() || sp.Entity == "") {
				out = append(out, s.Name+" / "+sp.Name)
			}
		}
	}
	return out
}
