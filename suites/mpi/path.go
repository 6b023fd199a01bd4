package mpi

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/results"
)

// Path classes of a UCX transfer's bulk (largest-size) protocol.
const (
	PathRDMA    = "rdma-zcopy" // zero-copy on an IB/RoCE lane: GPUDirect RDMA for GPU memory
	PathIPC     = "cuda-ipc"   // cuda_ipc: GPU to GPU inside a node (or over multi-node NVLink)
	PathStaged  = "staged"     // through host memory: pipeline, copy-in/out, bcopy, cuda_copy, tcp
	PathHost    = "host"       // host memory on both sides: says nothing about GPUs
	PathUnknown = "unknown"
)

// Outcomes of a UCX log, named as results.json names a run's path.
const (
	OutcomeDirect   = results.PathDirect
	OutcomeFallback = results.PathFallback
	OutcomeUnknown  = results.PathUnknown
)

// JudgedTransfer is a UCX_PROTO_INFO table and the path its bulk
// protocol takes.
type JudgedTransfer struct {
	ucx.Transfer
	Path string `json:"path"`
}

// LogVerdict is the path a UCX log shows for GPU memory.
type LogVerdict struct {
	Transfers []JudgedTransfer
	Outcome   string
	// Reasons name the transfers behind the outcome.
	Reasons []string
	// Hints say what `ucx_info -d` shows of a staged transfer's cause,
	// where it is known.
	Hints []string
}

// HintUCXLog is how to get a UCX log the path can be judged from.
const HintUCXLog = "rerun with UCX_PROTO_INFO=y (UCX 1.13 and later) and GPU buffers, as osu_bw -d cuda D D or ucx_perftest -m cuda, which prints a protocol table per transfer"

var (
	rdmaLane = regexp.MustCompile(`\b(?:rc|dc|ud)_(?:mlx5|verbs)/|\brc_x\b`)
	laneDev  = regexp.MustCompile(`\b(?:rc|dc|ud)_(?:mlx5|verbs)/([A-Za-z0-9_.-]+(?::\d+)?)`)
)

// stagedWords name protocols that move the data through a bounce
// buffer: the pipeline ("ppln"), copy-in/out, bcopy, and the rendezvous
// through cuda_copy fragments ("rendezvous cuda_copy, fenced write to
// remote, cuda_copy", UCX 1.16).
var stagedWords = []string{"pipeline", "ppln", "copy-in", "copy-out", "bcopy", "fragmented", "software emulation", "cuda_copy"}

// ClassifyTransfer names the path of a transfer's bulk protocol.
func ClassifyTransfer(t ucx.Transfer) string {
	if !t.GPU {
		return PathHost
	}
	p, lanes := strings.ToLower(t.Protocol), strings.ToLower(t.Lanes)
	switch {
	case strings.Contains(p, "no data"):
		return PathUnknown
	case containsAny(p, stagedWords), strings.Contains(lanes, "tcp/"):
		return PathStaged
	case strings.Contains(lanes, "cuda_ipc"):
		return PathIPC
	case strings.Contains(lanes, "cuda_copy"):
		return PathStaged // a bounce through cuda_copy, no network lane zero-copy
	case strings.Contains(p, "zero-copy") && rdmaLane.MatchString(lanes):
		return PathRDMA
	}
	return PathUnknown
}

// JudgeLog classifies every table of a log: fallback when any
// GPU-memory transfer is staged, direct when every judged one is RDMA
// zero-copy or cuda_ipc, else unknown. info is the node's `ucx_info -d`
// (nil when unknown; a log holding its own lines uses those): it names
// why a staged transfer's lanes could not carry GPU memory.
func JudgeLog(s *ucx.LogSummary, info *ucx.Info) LogVerdict {
	if s.Info != nil {
		info = s.Info
	}
	var v LogVerdict
	var direct, staged []string
	for _, t := range s.Transfers {
		j := JudgedTransfer{Transfer: t, Path: ClassifyTransfer(t)}
		v.Transfers = append(v.Transfers, j)
		d := fmt.Sprintf("line %d: %s | %s: %s on %s (%s)", t.Line, t.Config, t.Operation, t.Protocol, orNone(t.Lanes), j.Path)
		switch j.Path {
		case PathStaged:
			staged = append(staged, d)
		case PathRDMA, PathIPC:
			direct = append(direct, d)
		}
	}
	switch {
	case len(staged) > 0:
		v.Outcome, v.Reasons, v.Hints = OutcomeFallback, staged, infoHints(v.Transfers, info)
	case len(direct) > 0:
		v.Outcome, v.Reasons = OutcomeDirect, direct
	default:
		v.Outcome, v.Reasons = OutcomeUnknown, []string{"no GPU-memory transfer with a judgeable protocol: rerun with UCX_PROTO_INFO=y and GPU buffers (osu_bw -d cuda D D, ucx_perftest -m cuda)"}
	}
	return v
}

// infoHints say, for the staged transfers, what `ucx_info -d` shows of
// the cause: an RDMA lane whose domain registers no cuda memory
// (GPUDirect RDMA off for UCX), or no cuda_ipc inside a node.
func infoHints(ts []JudgedTransfer, info *ucx.Info) []string {
	if info == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range ts {
		if t.Path != PathStaged {
			continue
		}
		for _, m := range laneDev.FindAllStringSubmatch(t.Lanes, 16) {
			d, ok := info.DomainOf(m[1])
			if !ok || seen[d.Name] {
				continue
			}
			seen[d.Name] = true
			if has, listed := d.Registers("cuda"); listed && !has {
				out = append(out, fmt.Sprintf("ucx_info -d: memory domain %s registers %s memory only, no cuda: GPUDirect RDMA is off for UCX on it (nvidia_peermem not loaded, or no DMA-BUF), so GPU data is staged through host memory", d.Name, strings.Join(d.MemoryTypes, ", ")))
			}
		}
		if t.Peer == "intra-node" && !seen["cuda_ipc"] && !hasTransport(*info, "cuda_ipc") {
			seen["cuda_ipc"] = true
			out = append(out, "ucx_info -d lists no cuda_ipc transport: GPUs inside a node cannot reach each other directly through UCX")
		}
	}
	return out
}

func hasTransport(i ucx.Info, name string) bool {
	for _, t := range i.TransportNames() {
		if t == name {
			return true
		}
	}
	return false
}

// Dominant names a verdict's path in one word: staged where any
// GPU-memory transfer was, else the direct path most transfers took; ""
// with none judged.
func Dominant(v LogVerdict) string {
	if v.Outcome == OutcomeFallback {
		return PathStaged
	}
	n := map[string]int{}
	best := ""
	for _, t := range v.Transfers {
		if t.Path != PathRDMA && t.Path != PathIPC {
			continue
		}
		n[t.Path]++
		if n[t.Path] > n[best] || n[t.Path] == n[best] && t.Path < best {
			best = t.Path
		}
	}
	return best
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "no lane"
	}
	return s
}
