package baseline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Direction says which way a metric improves.
type Direction string

// Directions.
const (
	Higher Direction = "higher" // bandwidths: more is better
	Lower  Direction = "lower"  // ratios, latencies: less is better
)

// Better renders the direction as people say it.
func (d Direction) Better() string { return string(d) + " is better" }

// NoNIC is the NIC model of a node without RDMA NICs, in profiles and
// Facts alike.
const NoNIC = "none"

// Profile says which nodes a baseline is for. Every field but Name is
// optional; a zero field is unspecified and matches anything.
type Profile struct {
	Name         string   // profile.name: unique across the store
	GPU          GPU      // profile.gpu
	GPUsPerNode  int      // profile.gpus_per_node
	Interconnect string   // profile.interconnect: NV<n> (NVLinks per GPU) or PCIe
	NIC          NIC      // profile.nic
	PCIeGen      int      // profile.pcie_gen: the GPUs' maximum link generation
	Software     Software // profile.software
}

// GPU identifies the GPU model.
type GPU struct {
	Model       string // gpu.model: case-insensitive prefix of the NVML name
	PCIDeviceID string // gpu.pci_device_id: "0x2335", matched exactly
}

// NIC identifies the RDMA NICs.
type NIC struct {
	Model    string  // nic.model: case-insensitive prefix, or NoNIC
	RateGbps float64 // nic.rate_gbps: port rate in Gb/s (400 for NDR)
	// LinkLayer is nic.link_layer: LinkInfiniBand or LinkEthernet, the
	// link layer the rail ports run (sysfs ports/<n>/link_layer), matched
	// like the model: the same ConnectX-7 runs NDR InfiniBand or 400 GbE
	// RoCE (Google's A3 Ultra), and an InfiniBand profile's numbers and
	// expectations are not a RoCE node's. A node matches by the link
	// layer most of its rail ports run (Facts.LinkLayer), so one port
	// flipped after a firmware reset keeps its profile and fails the
	// fabric suite's link-layer spec instead (claudebarthels/infinity#5).
	LinkLayer string
}

// The link layers sysfs names (ports/<n>/link_layer), and LinkMixed,
// the Facts of a node whose rail ports run as many of one as of the
// other: it matches no profile that sets nic.link_layer.
const (
	LinkInfiniBand = "InfiniBand"
	LinkEthernet   = "Ethernet"
	LinkMixed      = "mixed"
)

// Software holds optional version ranges.
type Software struct {
	Driver Range // software.driver: NVIDIA driver, 580.95.05
	NCCL   Range // software.nccl: 2.28.3
	CUDA   Range // software.cuda: CUDA driver API version, 13.0
}

// Tolerance is the shortfall allowed on the bad side of expected.
type Tolerance struct {
	Relative float64 // tolerance.relative: a fraction of expected (0.10 is 10%)
	Absolute float64 // tolerance.absolute: in the metric's unit
}

// MaxRelative is the largest relative tolerance: a band may let at most
// half of the expected value go. The negative suite counts a forced
// fallback that keeps at most half of the direct bandwidth as detected
// (nccl.fallback.<mode>.ratio, 0.5 in the shipped baselines), so a
// wider band would pass a node on the very fallback path gdrcheck exists
// to catch; 0.999999 would pass one at a millionth of its bandwidth. An
// absolute tolerance is held to the same half of every expected value.
const MaxRelative = 0.5

// Allowed is the shortfall allowed against expected:
// max(Relative*expected, Absolute).
func (t Tolerance) Allowed(expected float64) float64 {
	return max(t.Relative*expected, t.Absolute)
}

// Metric is one expected measurement.
type Metric struct {
	Name      string     // metrics[i].name: dotted id, unique in the file
	Unit      string     // metrics[i].unit: GB/s, Gb/s; empty for ratios
	Direction Direction  // metrics[i].direction
	Expected  float64    // metrics[i].expected: > 0
	Tolerance *Tolerance // metrics[i].tolerance; nil: Expected is a hard limit
	// BySize holds per-message-size expectations in bytes
	// (metrics[i].by_size); they take precedence over Expected.
	BySize map[int64]float64
	// Comment is the comment written above the metric, if any (kept by
	// Load and written by Write; Diff ignores it).
	Comment string
}

// Sizes returns the BySize keys in ascending order.
func (m Metric) Sizes() []int64 { return slices.Sorted(maps.Keys(m.BySize)) }

// BAR1Limits are per-GPU BAR1 limits in MiB; zero is unspecified.
type BAR1Limits struct {
	MinTotalMiB uint64 // bar1.min_total_mib
	MinFreeMiB  uint64 // bar1.min_free_mib
}

// Baseline is one profile with its expected metrics: one YAML file.
type Baseline struct {
	// File is where the baseline was loaded from, as errors name it;
	// empty for one made by Record.
	File string
	// Comment is the file's header comment: how the numbers were
	// obtained.
	Comment string
	Profile Profile
	Metrics []Metric
	BAR1    *BAR1Limits

	nameLine int // line of profile.name in File
}

// Metric returns the metric called name.
func (b *Baseline) Metric(name string) (Metric, bool) {
	for _, m := range b.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Compare compares value with the metric called name, at a message size
// (0 for none), and fills in the profile; false when there is no such
// metric.
func (b *Baseline) Compare(name string, value float64, size int64) (Comparison, bool) {
	m, ok := b.Metric(name)
	if !ok {
		return Comparison{}, false
	}
	c := m.Compare(value, size)
	c.Profile = b.Profile.Name
	return c, true
}

// where names the baseline for messages: its file, else its profile.
func (b *Baseline) where() string {
	if b.File != "" {
		return b.File
	}
	if b.Profile.Name == "" {
		return "unnamed baseline"
	}
	return "profile " + b.Profile.Name
}

// ErrSchema is wrapped by every error about a baseline file's content.
var ErrSchema = errors.New("invalid baseline")

// SchemaError is one problem in a baseline file, at a line and a field
// path such as metrics[1].direction.
type SchemaError struct {
	File  string
	Line  int    // 1-based; 0 when unknown
	Field string // empty for whole-file problems such as bad YAML
	Msg   string
}

func (e *SchemaError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

// Unwrap returns ErrSchema.
func (e *SchemaError) Unwrap() error { return ErrSchema }
