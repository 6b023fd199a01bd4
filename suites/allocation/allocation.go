// Package allocation judges what no node can judge alone: the properties
// that must agree between the nodes of one job, where a difference hangs
// or slows NCCL although every node passes on its own. A RoCE GID index or
// active MTU on some nodes only, a port in Ethernet mode among InfiniBand
// ones, a net plugin on part of the nodes, mixed NCCL, driver or HCA
// firmware versions. The merged job (slurm.Collect) shows it every node's
// facts once; the specs go on the allocation entry and name, per property,
// the value most nodes have and the odd nodes out.
//
// It is one pass with a count per value: 16,384 nodes cost a map entry
// per distinct value and a name per node, never a comparison per pair.
package allocation

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
)

// SuiteName names the suite on the allocation entry.
const SuiteName = "allocation"

// Property is one fact (results.Node.Facts, written by harness/runner)
// that must be the same on every node, with the spec that says so and the
// fix in the admin's words.
type Property struct {
	Fact   string // the fact's name
	Spec   string // the It-style spec name
	What   string // what differs, for the message
	Fix    string
	Source string // the public report of the failure it causes
	// Action is what remediation does about the odd nodes out (the
	// spec's scope is node, its entity their hostlist).
	Action results.Action
}

// Properties are what the suite compares, in report order.
var Properties = []Property{
	{Fact: "link_layer", Action: results.ActionFixConfig, Spec: "runs every node's rail ports on the same link layer", What: "the rail ports' link layer",
		Fix:    "set the port type of the odd nodes' HCAs to the fabric's (mlxconfig LINK_TYPE_P1: 1 InfiniBand, 2 Ethernet) and reboot them",
		Source: "claudebarthels/infinity#5, NVIDIA/nccl#958"},
	{Fact: "roce_gid_index", Action: results.ActionFixConfig, Spec: "gives NCCL the same RoCE v2 GID index on every node", What: "the RoCE GID index NCCL uses (NCCL_IB_GID_INDEX, else its own choice)",
		Fix:    "give each rail netdev of the odd nodes its IPv4 address the way the other nodes have it, so the RoCE v2 GID sits at the same index, or set NCCL_IB_GID_INDEX per node",
		Source: "NVIDIA/nccl#426"},
	{Fact: "roce_active_mtu", Action: results.ActionFixConfig, Spec: "runs every node's RoCE ports at the same active MTU", What: "the RoCE active MTU",
		Fix:    "set the rail netdevs' MTU alike on every node (4200 or more gives an active MTU of 4096): NCCL 2.20.3 and later no longer renegotiate it and hang",
		Source: "NVIDIA/nccl#1524, NVIDIA/nccl#2135"},
	{Fact: "nccl_net_plugin", Action: results.ActionFixConfig, Spec: "gives every node the same NCCL net plugin", What: "the NCCL net plugin",
		Fix:    "install the same libnccl-net plugin (or none) on every node, in the same library path",
		Source: "NVIDIA/nccl#1634"},
	{Fact: "nccl", Action: results.ActionFixConfig, Spec: "runs the same NCCL on every node", What: "the NCCL version",
		Fix: "install one NCCL version on every node (or in the job's container)", Source: "NVIDIA/nccl#1634"},
	{Fact: "driver", Action: results.ActionReimage, Spec: "runs the same NVIDIA driver on every node", What: "the NVIDIA driver version",
		Fix: "install the fleet's driver version on the odd nodes and reload its modules"},
	{Fact: "mofed", Action: results.ActionReimage, Spec: "runs the same MLNX_OFED or DOCA on every node", What: "the MLNX_OFED/DOCA version",
		Fix: "install the fleet's MLNX_OFED/DOCA on the odd nodes, then rebuild or reload nvidia_peermem"},
	{Fact: "hca_fw", Action: results.ActionFixConfig, Spec: "runs the same HCA firmware on every node", What: "the rail HCAs' firmware",
		Fix: "flash the fleet's firmware onto the odd nodes' HCAs (mlxfwmanager) and reset them"},
}

// absent stands for a node without the fact when other nodes have it.
const absent = "(not reported)"

// maxValue is how much of a value a message quotes: facts come from the
// nodes and are untrusted.
const maxValue = 96

// maxOdd is how many minority values a message lists; the rest are
// counted.
const maxOdd = 8

// Tally counts, per property, the nodes of each value as the nodes go by.
type Tally struct {
	props []Property
	nodes []string              // every node counted, in order
	vals  []map[string][]string // per property: value -> nodes
	seen  []map[string]struct{} // per property: nodes with the fact
}

// NewTally starts a count over Properties.
func NewTally() *Tally { return newTally(Properties) }

func newTally(props []Property) *Tally {
	t := &Tally{props: props}
	for range props {
		t.vals = append(t.vals, map[string][]string{})
		t.seen = append(t.seen, map[string]struct{}{})
	}
	return t
}

// Add counts one node's facts. Only evaluated hosts count: the allocation
// entry is no node, a node's container run shares its host's hardware but
// may carry its own NCCL, and a node without results has no facts.
func (t *Tally) Add(n results.Node) {
	if n.Status != results.NodeEvaluated || n.Name == results.AllocationNode || strings.HasSuffix(n.Name, results.ContainerSuffix) {
		return
	}
	t.nodes = append(t.nodes, n.Name)
	for _, f := range n.Facts {
		for i, p := range t.props {
			if f.Name == p.Fact {
				if _, dup := t.seen[i][n.Name]; dup {
					continue
				}
				t.seen[i][n.Name] = struct{}{}
				t.vals[i][f.Value] = append(t.vals[i][f.Value], n.Name)
			}
		}
	}
}

// Suite is the allocation suite over the nodes counted; ok is false with
// fewer than two nodes, where there is nothing to compare.
func (t *Tally) Suite() (results.Suite, bool) {
	if len(t.nodes) < 2 {
		return results.Suite{}, false
	}
	s := results.Suite{Name: SuiteName}
	for i, p := range t.props {
		s.Specs = append(s.Specs, t.spec(i, p))
	}
	return s, true
}

// spec judges one property: passed when every node has one value,
// skipped when no node reported it, else failed naming the value most
// nodes have and each other value's nodes.
func (t *Tally) spec(i int, p Property) results.Spec {
	sp := results.Spec{Name: p.Spec}
	vals := t.vals[i]
	if len(vals) == 0 {
		sp.State, sp.SkipKind = results.StateSkipped, results.SkipNotApplicable
		sp.Message = fmt.Sprintf("no node reported %s", p.What)
		return sp
	}
	if missing := len(t.nodes) - len(t.seen[i]); missing > 0 {
		var without []string
		for _, n := range t.nodes {
			if _, ok := t.seen[i][n]; !ok {
				without = append(without, n)
			}
		}
		vals[absent] = without
	}
	type group struct {
		value string
		nodes []string
	}
	groups := make([]group, 0, len(vals))
	for v, ns := range vals {
		groups = append(groups, group{v, ns})
	}
	// Most nodes first; a tie goes to the smaller value, so the
	// message is the same whatever order the nodes came in.
	slices.SortFunc(groups, func(a, b group) int {
		return cmp.Or(cmp.Compare(len(b.nodes), len(a.nodes)), strings.Compare(a.value, b.value))
	})
	top := groups[0]
	if len(groups) == 1 {
		sp.State = results.StatePassed
		sp.Notes = []string{fmt.Sprintf("%s on all %d nodes: %s", p.What, len(top.nodes), quote(top.value))}
		return sp
	}
	sp.State = results.StateFailed
	var odd []string
	var parts []string
	for _, g := range groups[1:] {
		odd = append(odd, g.nodes...)
		if len(parts) < maxOdd {
			parts = append(parts, fmt.Sprintf("%s has %s", hostlist.Compress(g.nodes), quote(g.value)))
		}
	}
	if more := len(groups) - 1 - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more values", more))
	}
	sp.Message = fmt.Sprintf("%s differs between the nodes: %d of %d have %s; %d odd out: %s. Fix: %s",
		p.What, len(top.nodes), len(t.nodes), quote(top.value), len(odd), strings.Join(parts, "; "), p.Fix)
	if p.Source != "" {
		sp.Message += " (" + p.Source + ")"
	}
	sp.SetRemedy(results.Remedy{Action: p.Action, Scope: results.ScopeNode, Entity: hostlist.Compress(odd)})
	return sp
}

// quote is a node's value as a message shows it: clipped, quoted so a
// value holding spaces or punctuation reads as one.
func quote(v string) string {
	if v == absent {
		return v
	}
	return fmt.Sprintf("%q", bounded.ClipString(v, maxValue))
}
