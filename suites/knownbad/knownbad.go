// Package knownbad holds the known-bad cells of the compatibility matrix of
// kernel, driver, rdma-core, MOFED/DOCA, NCCL and container versions: the
// combinations a public source shows to break GPUDirect RDMA, each with
// its source and its fix (table.go). Match checks a node's facts against
// them; the kernel suite fails a node in a fail-level cell, the runner
// prints the hits before any benchmark starts, and the compare suite flags
// an upgrade that moves a node into one. It runs no Ginkgo, so all three
// can use it.
package knownbad

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
)

// Severity is what a hit does to the verdict.
type Severity string

const (
	// Fail: the combination breaks GPUDirect RDMA; the node fails.
	Fail Severity = "fail"
	// Warn: it may break, depending on what the source could not pin
	// down; the node passes with a warning.
	Warn Severity = "warn"
)

// Tri is a fact that may be unknown: a cell matches only on known facts,
// so a node is never flagged for what was not collected.
type Tri int8

const (
	Unknown Tri = iota
	Yes
	No
)

// The states of nvidia_peermem, as results.json's "peermem" fact names
// them. Registered means a memory_peers client NCCL looks for exists.
const (
	PeermemAbsent     = "absent"
	PeermemLoaded     = "loaded"
	PeermemRegistered = "registered"
)

// Facts are what the cells are stated over: one node's versions and the
// states of its peer-memory paths. The zero value of each is unknown.
type Facts struct {
	NCCL     string // the NCCL in effect, "2.21.5"
	NCCLFrom string // where it was read: "nccl-tests", or the library's path
	Kernel   string // "6.8.0-60-generic"
	// DriverFlavour is "open" or "proprietary".
	DriverFlavour string
	RDMANICs      int
	Peermem       string // PeermemAbsent, PeermemLoaded or PeermemRegistered
	// Mechanism is the peer-memory path that works (dmabuf, peermem,
	// none); "" where the kernel suite's probe did not run.
	Mechanism string
	// GPUDMABuf: the GPUs export their memory as dma-bufs (open modules,
	// DMA_BUF_SUPPORTED, a real export). NICDMABuf: the NICs can register
	// a dma-buf (kernel >= 5.12, rdma-core >= 34 with ibv_reg_dmabuf_mr,
	// the probe's registration). The Why fields say what decided a No.
	GPUDMABuf, NICDMABuf       Tri
	GPUDMABufWhy, NICDMABufWhy string
	RDMACore                   int    // rdma-core's version, 0 unknown
	MOFED                      string // MLNX_OFED/DOCA-OFED's mlx5_core version
	// RoCEMTUMin and RoCEMTUMax are the smallest and largest active MTU
	// of the node's active RoCE ports; 0 where none was read.
	RoCEMTUMin, RoCEMTUMax int
	// Hopper: every GPU's name is a Hopper part (H100, H200, H800, GH200).
	Hopper Tri
	// ForceFlush is NCCL_NET_FORCE_FLUSH as a job here inherits it, ""
	// where it is not set.
	ForceFlush string
	// C2CRails is the GPUs whose rail NIC hangs off the CPU they reach
	// over NVLink-C2C (path P2C: GH200, GB200); 0 where none or unknown.
	C2CRails int
	// GDRC2C and GDRLevel are NCCL_NET_GDR_C2C and NCCL_NET_GDR_LEVEL as
	// a job here inherits them, "" where they are not set.
	GDRC2C, GDRLevel string
}

// Rule is one known-bad cell.
type Rule struct {
	ID       string // the source's short name: "NVIDIA/nccl#1676"
	Source   string // its address
	Severity Severity
	// NCCL is the NCCL versions in the cell; a rule with a range never
	// matches a node whose NCCL is unknown. The zero Range is any NCCL.
	NCCL baseline.Range
	// Match says whether the node's other facts are in the cell and, if
	// so, which ones put it there, as a clause of a sentence.
	Match  func(Facts) (bool, string)
	Breaks string // what goes wrong, as the source shows it
	Fix    string
}

// Hit is a node in a known-bad cell.
type Hit struct {
	Rule Rule
	// Why is the node's facts that put it in the cell.
	Why string
}

// String is the sentence reports show: the source's short name, why the
// node is in the cell, what breaks, the fix and the source's address.
func (h Hit) String() string {
	return fmt.Sprintf("%s: %s: %s; fix: %s (%s)", h.Rule.ID, h.Why, h.Rule.Breaks, h.Rule.Fix, h.Rule.Source)
}

// Match returns the cells of Table the facts are in, in table order.
func Match(f Facts) []Hit { return MatchIn(Table, f) }

// MatchIn returns the cells of rules the facts are in.
func MatchIn(rules []Rule, f Facts) []Hit {
	var hits []Hit
	for _, r := range rules {
		var clauses []string
		if !r.NCCL.IsZero() {
			v, ok := f.ncclVersion()
			if !ok || !r.NCCL.Contains(v) {
				continue
			}
			clauses = append(clauses, fmt.Sprintf("NCCL %s is %s", f.NCCL, r.NCCL))
		}
		in, why := r.Match(f)
		if !in {
			continue
		}
		hits = append(hits, Hit{Rule: r, Why: strings.Join(append(clauses, why), ", ")})
	}
	return hits
}

// Failing keeps the fail-level hits.
func Failing(hits []Hit) []Hit { return bySeverity(hits, Fail) }

// Warning keeps the warn-level hits.
func Warning(hits []Hit) []Hit { return bySeverity(hits, Warn) }

func bySeverity(hits []Hit, s Severity) []Hit {
	var out []Hit
	for _, h := range hits {
		if h.Rule.Severity == s {
			out = append(out, h)
		}
	}
	return out
}

// ncclVersion parses the NCCL version, ignoring what follows the dotted
// number ("2.21.5+cuda12.4").
func (f Facts) ncclVersion() (baseline.Version, bool) {
	s := f.NCCL
	if i := strings.IndexFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		s = s[:i]
	}
	v, err := baseline.ParseVersion(strings.TrimRight(s, "."))
	return v, err == nil
}

// ncclBefore says whether the NCCL is known and older than major.minor.
func (f Facts) ncclBefore(major, minor int) bool {
	v, ok := f.ncclVersion()
	return ok && v.Compare(baseline.Version{major, minor}) < 0
}

// peermemOnlyPath says whether nvidia_peermem is NCCL's only GPUDirect
// path on the node, and why: NCCL before 2.13 has no dma-buf support, and
// otherwise dma-buf must be ruled out. A node whose peer-memory paths are
// proven broken (mechanism none) is not in a cell about NCCL ignoring a
// working one.
func (f Facts) peermemOnlyPath() (bool, string) {
	switch {
	case f.Mechanism == "none" || f.Mechanism == "dmabuf" && !f.ncclBefore(2, 13):
		return false, ""
	case f.ncclBefore(2, 13):
		return true, "NCCL before 2.13 has no dma-buf path"
	case f.Mechanism == "peermem":
		why := "it is the only GPUDirect path"
		if r := f.dmabufWhy(); r != "" {
			why += " (" + r + ")"
		}
		return true, why
	case f.GPUDMABuf == No || f.NICDMABuf == No:
		return true, "it is the only GPUDirect path (" + f.dmabufWhy() + ")"
	}
	return false, ""
}

func (f Facts) dmabufWhy() string {
	switch {
	case f.GPUDMABuf == No:
		return f.GPUDMABufWhy
	case f.NICDMABuf == No:
		return f.NICDMABufWhy
	}
	return ""
}
