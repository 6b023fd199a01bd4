// Package overrides judges the NCCL and UCX settings a job on a node
// inherits (harness/node.Overrides) against the node's GPU <-> NIC paths:
// whether each fits, or breaks the direct path and why. It runs no Ginkgo,
// so the topology suite's spec, inventory and compare share one judgement.
package overrides

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// Verdict is the audit's word on one setting.
type Verdict string

const (
	Fits      Verdict = "fits"
	Breaks    Verdict = "breaks the direct path"
	Shadowed  Verdict = "shadowed"   // an earlier setting of the name wins
	NotJudged Verdict = "not judged" // an MCA parameter: listed only
	// Ignored: the tool does not read it as written (a name NCCL reads
	// with a space in it, a value it cannot parse, a level it does not
	// know); Why says what it does instead.
	Ignored Verdict = "ignored"
	// Clamped: the tool reads it as a nearer value; Why says which.
	Clamped Verdict = "clamped"
)

// Judged is one inherited setting and the audit's word on it.
type Judged struct {
	node.Setting
	Verdict Verdict `json:"verdict"`
	// Why is why it breaks the path, with the value the tool reads and
	// the fix, or what the tool does with an ignored or clamped one.
	Why string `json:"why,omitempty"`
}

// Judge judges every setting of ev.Overrides, in their order; none where
// the node inherits nothing.
func Judge(ev *node.Evidence) []Judged {
	if ev.Overrides == nil {
		return nil
	}
	var out []Judged
	for _, s := range ev.Overrides.Settings {
		j := Judged{Setting: s, Verdict: Fits}
		switch {
		case s.Shadowed:
			j.Verdict = Shadowed
		case s.MCA:
			j.Verdict = NotJudged
		default:
			j.Verdict, j.Why = judge(ev, s)
		}
		out = append(out, j)
	}
	return out
}

// judge is one setting's verdict on the node and why: each tool's by its
// own grammar (ncclgrammar.go, ucx.go).
func judge(ev *node.Evidence, s node.Setting) (Verdict, string) {
	if strings.HasPrefix(s.Name, "UCX_") {
		return judgeUCX(ev, s)
	}
	return judgeNCCL(ev, s)
}

// breaks and fits shorten the judges' returns.
func breaks(format string, a ...any) (Verdict, string) { return Breaks, fmt.Sprintf(format, a...) }
func fits() (Verdict, string)                          { return Fits, "" }

// remoteNICs is why the NICs a job is limited to are far from its GPUs:
// each GPU whose nearest NIC among them is SYS (across the CPU
// interconnect, where NCCL never uses GPUDirect RDMA), "" where none is.
func remoteNICs(ev *node.Evidence, nics []string, fix string) string {
	var far []string
	for _, g := range ev.GPUs {
		best := node.PathClass("")
		for _, p := range ev.Paths {
			if p.GPU == g.BusID && slices.Contains(nics, p.NIC) && (best == "" || p.Class.Rank() < best.Rank()) {
				best = p.Class
			}
		}
		if best == node.PathSYS {
			far = append(far, g.BusID)
		}
	}
	if len(far) == 0 {
		return ""
	}
	return fmt.Sprintf("%s is SYS to %d GPU(s) (%s): no GPUDirect RDMA for them; %s", strings.Join(nics, ", "), len(far), strings.Join(firstN(far, 3), ", "), fix)
}

func nicNames(ev *node.Evidence) string {
	if len(ev.NICs) == 0 {
		return "no RDMA NICs"
	}
	var n []string
	for _, nic := range ev.NICs {
		n = append(n, nic.Name)
	}
	return strings.Join(firstN(n, 8), ", ")
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}
