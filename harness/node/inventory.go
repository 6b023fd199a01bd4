package node

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"go.yaml.in/yaml/v3"
)

// Inventory is the GPU <-> NIC rail map that schedulers and runbooks
// consume, and what `--expect` compares against after hardware work.
type Inventory struct {
	Node  string          `json:"node" yaml:"node"`
	GPUs  []InventoryGPU  `json:"gpus" yaml:"gpus"`
	Paths []InventoryPath `json:"paths" yaml:"paths"`
	// Overrides are the NCCL, UCX and MCA settings a job here inherits,
	// in the order NCCL applies them (Evidence.Overrides).
	Overrides []InventoryOverride `json:"overrides,omitempty" yaml:"overrides,omitempty"`
	// Warnings say what the map was made without: a source that could
	// not be used (NVML: no UUIDs, names or indexes), sources that
	// disagree, a part of sysfs that could not be read.
	Warnings []string `json:"warnings,omitempty" yaml:"warnings,omitempty"`
}

// InventoryGPU is one GPU and its rail.
type InventoryGPU struct {
	Index         int       `json:"index" yaml:"index"`
	UUID          string    `json:"uuid" yaml:"uuid"`
	BusID         string    `json:"bus_id" yaml:"bus_id"`
	Name          string    `json:"name,omitempty" yaml:"name,omitempty"`
	NUMANode      int       `json:"numa_node" yaml:"numa_node"`
	CPUList       string    `json:"cpu_list" yaml:"cpu_list"`
	PreferredNIC  string    `json:"preferred_nic,omitempty" yaml:"preferred_nic,omitempty"`
	PreferredPort string    `json:"preferred_port,omitempty" yaml:"preferred_port,omitempty"` // mlx5_0:1
	NetDev        string    `json:"netdev,omitempty" yaml:"netdev,omitempty"`
	Path          PathClass `json:"path,omitempty" yaml:"path,omitempty"`
	NICNUMANode   *int      `json:"nic_numa_node,omitempty" yaml:"nic_numa_node,omitempty"`
}

// InventoryOverride is one inherited setting and where it came from. Fit
// is the override audit's word on it (suites/overrides), written by the
// command that judged it: evidence knows nothing of verdicts, so
// Inventory leaves it empty.
type InventoryOverride struct {
	Setting `yaml:",inline"`
	Fit     string `json:"fit,omitempty" yaml:"fit,omitempty"`
	Why     string `json:"why,omitempty" yaml:"why,omitempty"`
}

// InventoryPath is one GPU <-> NIC pair and its class.
type InventoryPath struct {
	GPU      string    `json:"gpu" yaml:"gpu"` // bus id
	GPUIndex int       `json:"gpu_index" yaml:"gpu_index"`
	NIC      string    `json:"nic" yaml:"nic"`
	Path     PathClass `json:"path" yaml:"path"`
}

// Inventory derives the rail map from the evidence.
func (e *Evidence) Inventory() Inventory {
	inv := Inventory{Node: e.Host.Hostname, GPUs: []InventoryGPU{}, Paths: []InventoryPath{}}
	for _, g := range e.GPUs {
		ig := InventoryGPU{Index: g.Index, UUID: g.UUID, BusID: g.BusID, Name: g.Name, NUMANode: g.NUMANode, CPUList: g.CPUList}
		if p, ok := e.PreferredPath(g.BusID); ok {
			ig.PreferredNIC, ig.Path = p.NIC, p.Class
			if n, ok := e.NIC(p.NIC); ok {
				numa := n.NUMANode
				ig.NICNUMANode = &numa
				if port, ok := firstActivePort(n); ok {
					ig.PreferredPort = fmt.Sprintf("%s:%d", n.Name, port)
				}
				if len(n.NetDevs) > 0 {
					ig.NetDev = n.NetDevs[0]
				}
			}
		}
		inv.GPUs = append(inv.GPUs, ig)
	}
	for _, p := range e.Paths {
		inv.Paths = append(inv.Paths, InventoryPath{GPU: p.GPU, GPUIndex: p.GPUIndex, NIC: p.NIC, Path: p.Class})
	}
	for _, p := range e.Problems {
		if !p.Fatal {
			inv.Warnings = append(inv.Warnings, p.String())
		}
	}
	if o := e.Overrides; o != nil {
		for _, s := range o.Settings {
			inv.Overrides = append(inv.Overrides, InventoryOverride{Setting: s})
		}
		for _, u := range o.Unreadable {
			inv.Warnings = append(inv.Warnings, "overrides: cannot read "+u)
		}
	}
	return inv
}

// MapError says why the GPU <-> NIC map is not complete: a fatal problem,
// or GPUs NVML lists that sysfs cannot place. Sources that only add to
// the map (NVML's UUIDs and names) leave it complete.
func (e *Evidence) MapError() error {
	if err := e.Fatal(); err != nil {
		return err
	}
	if len(e.NVMLOnly) > 0 {
		for _, p := range e.Problems {
			if p.Source == SourceGPUs && p.Incomplete {
				return errors.New(p.String())
			}
		}
	}
	return nil
}

// firstActivePort picks the port a rail uses: the first active one, else
// the first.
func firstActivePort(n NIC) (uint, bool) {
	for _, p := range n.Ports {
		if p.Active() {
			return p.Port, true
		}
	}
	if len(n.Ports) > 0 {
		return n.Ports[0].Port, true
	}
	return 0, false
}

// InventoryLimit caps an inventory file (inventory --expect), which is
// parsed whole: that of an 8-GPU node is about 3 KB.
var InventoryLimit = bounded.Limit{Bytes: 1 << 20, What: "an inventory file",
	Why: "the inventory of an 8-GPU node is about 3 KB"}

// ParseInventory reads an inventory written by `gdrcheck inventory` as YAML
// or JSON. Unknown fields are errors; errors name the line. Input over
// InventoryLimit is refused.
func ParseInventory(b []byte) (Inventory, error) {
	var inv Inventory
	if n := int64(len(b)); n > InventoryLimit.Bytes {
		return inv, &bounded.TooLargeError{Limit: InventoryLimit, Size: n, Offset: -1}
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&inv); err != nil {
		return inv, inventoryError(err)
	}
	if len(inv.GPUs) == 0 {
		return inv, fmt.Errorf("no gpus listed")
	}
	for i, g := range inv.GPUs {
		if g.BusID == "" {
			return inv, fmt.Errorf("gpus[%d]: bus_id is empty", i)
		}
		if g.Path != "" {
			if _, err := ParsePathClass(string(g.Path)); err != nil {
				return inv, fmt.Errorf("gpus[%d] (%s): %w", i, g.BusID, err)
			}
		}
	}
	return inv, nil
}

// Drift lists how the actual inventory differs from the expected one, GPU by
// GPU (matched by PCI slot, since that is what stays put across a swap),
// in sentences that name the GPU, what was found and what was expected.
func Drift(expected, actual Inventory) []string {
	act := map[string]InventoryGPU{}
	for _, g := range actual.GPUs {
		act[g.BusID] = g
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range expected.GPUs {
		g, ok := act[w.BusID]
		seen[w.BusID] = true
		if !ok {
			out = append(out, fmt.Sprintf("GPU %s (%s) is missing; expected %s on rail %s", w.BusID, w.UUID, w.Name, railOf(w)))
			continue
		}
		who := g.Label()
		// An unknown UUID (NVML did not answer) is not a swap; the
		// inventory's warnings say what it was made without.
		if w.UUID != "" && g.UUID != "" && g.UUID != w.UUID {
			out = append(out, fmt.Sprintf("%s: UUID %s, expected %s (GPU swapped)", who, g.UUID, w.UUID))
		}
		if g.PreferredNIC != w.PreferredNIC || g.Path != w.Path {
			out = append(out, fmt.Sprintf("%s: rail %s, expected %s", who, railOf(g), railOf(w)))
		}
		if g.NUMANode != w.NUMANode {
			out = append(out, fmt.Sprintf("%s: NUMA node %d, expected %d", who, g.NUMANode, w.NUMANode))
		}
	}
	var extra []string
	for id := range act {
		if !seen[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	for _, id := range extra {
		g := act[id]
		out = append(out, fmt.Sprintf("%s (%s) is not in the expected inventory", g.Label(), orUnknownUUID(g.UUID)))
	}
	return out
}

// Label is "GPU 3 0000:39:00.0", or the bus id alone where NVML gave no
// index.
func (g InventoryGPU) Label() string {
	if g.Index < 0 {
		return "GPU " + g.BusID
	}
	return fmt.Sprintf("GPU %d %s", g.Index, g.BusID)
}

func orUnknownUUID(u string) string {
	if u == "" {
		return "UUID unknown"
	}
	return u
}

func railOf(g InventoryGPU) string {
	if g.PreferredNIC == "" {
		return "none"
	}
	return fmt.Sprintf("%s (%s)", g.PreferredNIC, g.Path)
}

// unknownField is the YAML decoder's word for a key Inventory lacks.
var unknownField = regexp.MustCompile(`^line ([0-9]+): field (.+) not found in type \S+$`)

// inventoryError says in a user's terms why a file is no inventory: the
// keys it does not know (a results.json, a baseline given by mistake),
// the first three with their lines, without the Go type they missed.
func inventoryError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("not YAML an inventory can be read from: %w", err)
	}
	var msgs []string
	for _, e := range te.Errors {
		if m := unknownField.FindStringSubmatch(e); m != nil {
			e = fmt.Sprintf("line %s: unknown key %q", m[1], m[2])
		}
		msgs = append(msgs, e)
	}
	more := ""
	if len(msgs) > 3 {
		more = fmt.Sprintf(" (and %d more)", len(msgs)-3)
		msgs = msgs[:3]
	}
	return fmt.Errorf("not an inventory (gdrcheck inventory --format yaml writes one): %s%s", strings.Join(msgs, "; "), more)
}
