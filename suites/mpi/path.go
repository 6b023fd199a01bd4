package mpi

import (
	"fmt"
	"regexp"
	"slices"
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

// JudgedTransfer is a UCX_PROTO_INFO table and the path of the rows
// that decide it: those holding the sizes the benchmark moved, or the
// bulk row where the log names no size.
type JudgedTransfer struct {
	ucx.Transfer
	Path string `json:"path"`
	// Judged are the rows the path is of; Cut says the table stops
	// before the rows it needs (before its "..inf" row, or below a size
	// the benchmark moved), so it is not judged.
	Judged []ucx.Row `json:"judged_rows,omitempty"`
	Cut    bool      `json:"cut,omitempty"`
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
	// Errors are the UCX error lines that fail the log, with their
	// meaning; Failure says the worst in one sentence ("" without any).
	Errors  []JudgedError
	Failure string
	// Cut names the GPU-memory tables cut before the rows they need: a
	// log with one cannot prove a direct path.
	Cut []string
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
	return classifyRow(t.GPU, t.Protocol, t.Lanes)
}

func classifyRow(gpu bool, protocol, lanes string) string {
	if !gpu {
		return PathHost
	}
	p, l := strings.ToLower(protocol), strings.ToLower(lanes)
	switch {
	case strings.Contains(p, "no data"):
		return PathUnknown
	case containsAny(p, stagedWords), strings.Contains(l, "tcp/"):
		return PathStaged
	case strings.Contains(l, "cuda_ipc"):
		return PathIPC
	case strings.Contains(l, "cuda_copy"):
		return PathStaged // a bounce through cuda_copy, no network lane zero-copy
	case strings.Contains(p, "zero-copy") && rdmaLane.MatchString(l):
		return PathRDMA
	}
	return PathUnknown
}

// judgeTransfer classifies the rows of a table that decide it: those
// holding sizes, or its bulk row with none. Staged wins over unknown,
// unknown over direct, as any staged size stages the benchmark.
func judgeTransfer(t ucx.Transfer, sizes []uint64) JudgedTransfer {
	j := JudgedTransfer{Transfer: t, Path: PathHost}
	if !t.GPU || len(t.Rows) == 0 {
		return j
	}
	if len(sizes) == 0 {
		if !t.Complete {
			j.Path, j.Cut = PathUnknown, true
			return j
		}
		j.Judged = t.Rows[len(t.Rows)-1:]
	} else {
		for _, size := range sizes {
			i := slices.IndexFunc(t.Rows, func(r ucx.Row) bool { return r.Covers(size) })
			if i < 0 {
				// Past its last row: cut, unless UCX closed the table
				// there (then no protocol carries the size at all).
				j.Cut = !t.Complete
				continue
			}
			if !slices.Contains(j.Judged, t.Rows[i]) {
				j.Judged = append(j.Judged, t.Rows[i])
			}
		}
	}
	j.Path = PathUnknown
	if j.Cut || len(j.Judged) == 0 {
		return j
	}
	paths := make([]string, len(j.Judged))
	for i, r := range j.Judged {
		paths[i] = classifyRow(true, r.Protocol, r.Lanes)
	}
	switch {
	case slices.Contains(paths, PathStaged):
		j.Path = PathStaged
	case slices.Contains(paths, PathUnknown):
	default:
		j.Path = paths[len(paths)-1]
	}
	return j
}

// JudgeLog classifies every table of a log, each rank's apart, by the
// rows for the sizes its ucx_perftest header names (the bulk row
// without one): fallback when any GPU-memory transfer is staged, direct
// when every judged one is RDMA zero-copy or cuda_ipc, else unknown.
// Host-memory tables never decide. Its UCX error lines are judged too
// (Errors, Failure): a failure whatever the tables say. info is the
// node's `ucx_info -d` (nil when unknown; a log holding its own lines
// uses those): it names why a staged transfer's lanes could not carry
// GPU memory.
func JudgeLog(s *ucx.LogSummary, info *ucx.Info) LogVerdict {
	if s.Info != nil {
		info = s.Info
	}
	var v LogVerdict
	var direct, staged []string
	for _, t := range s.Transfers {
		j := judgeTransfer(t, s.MessageSizes)
		v.Transfers = append(v.Transfers, j)
		d := describe(j)
		switch {
		case j.Cut:
			v.Cut = append(v.Cut, fmt.Sprintf("line %d: %s%s | %s stops at its %s row, before the sizes it must show", t.Line, rankOf(t.Rank), t.Config, t.Operation, t.Range))
		case j.Path == PathStaged:
			staged = append(staged, d)
		case j.Path == PathRDMA, j.Path == PathIPC:
			direct = append(direct, d)
		}
	}
	if v.Errors = judgeErrors(s.Errors); len(v.Errors) > 0 {
		_, v.Failure = worstError(v.Errors)
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

// describe writes a judged table for a reason: its line, rank, header
// and the rows that decided it.
func describe(j JudgedTransfer) string {
	rows := j.Judged
	if len(rows) == 0 {
		rows = []ucx.Row{{Range: j.Range, Protocol: j.Protocol, Lanes: j.Lanes}}
	}
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s on %s", r.Range, r.Protocol, orNone(r.Lanes))
	}
	return fmt.Sprintf("line %d: %s%s | %s: %s (%s)", j.Line, rankOf(j.Rank), j.Config, j.Operation, b.String(), j.Path)
}

// rankOf writes a table's process for a reason: "[srun 0 vm:29941] ".
func rankOf(r string) string {
	if r = strings.TrimSpace(r); r == "" {
		return ""
	}
	return "[" + r + "] "
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
