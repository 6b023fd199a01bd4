package perftest

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/results"
)

// Caps on what the parsers keep, so that memory does not grow with the
// input. perftest prints about 30 banner settings, a row per message size
// (23 with -a) and a few failure lines; its longest line, the echoed
// command, is a few hundred bytes.
const (
	maxRows         = 4096    // Result.Rows
	maxFailureLines = 64      // Failure.Lines
	maxSettings     = 256     // Result.Settings
	maxText         = 4 << 10 // a kept line: the command, a failure, the memory evidence
	maxField        = 256     // a kept value: a setting, the test and GPU names, a unit
)

func clipText(s string) string  { return bounded.ClipString(s, maxText) }
func clipField(s string) string { return bounded.ClipString(s, maxField) }

// ErrNoOutput means the input holds nothing perftest prints: no banner, no
// table, no command line, no error.
var ErrNoOutput = errors.New("no perftest output found")

// ErrRunFailed is wrapped by [Result.Err] when the output reports a failure.
var ErrRunFailed = errors.New("perftest run failed")

// Mem says where the test buffers lived.
type Mem string

const (
	// MemUnknown: the output does not say (for example, an excerpt that
	// starts at the banner: perftest prints nothing about host memory).
	MemUnknown Mem = ""
	// MemHost: plain host memory.
	MemHost Mem = "host"
	// MemCUDA: GPU memory registered with ibv_reg_mr, which only works
	// through nvidia_peermem (the legacy GPUDirect RDMA path).
	MemCUDA Mem = "cuda"
	// MemCUDADMABuf: GPU memory exported as a DMA-BUF and registered with
	// ibv_reg_dmabuf_mr (--use_cuda_dmabuf).
	MemCUDADMABuf Mem = "cuda-dmabuf"
)

// Kind is the family of test: bandwidth or latency.
type Kind string

const (
	KindBW  Kind = "bw"  // ib_*_bw
	KindLat Kind = "lat" // ib_*_lat
)

// Units perftest prints in the BW column headers. Before perftest 24.07 the
// binary unit 2^20 bytes/s was labelled MB/sec; it was relabelled MiB/sec
// without changing the number.
const (
	UnitGbps  = "Gb/sec"
	UnitMBps  = "MB/sec"
	UnitMiBps = "MiB/sec"
)

// Result is what one perftest run reported.
type Result struct {
	Test    string `json:"test,omitempty"`    // banner: "RDMA_Write BW Test"
	Kind    Kind   `json:"kind,omitempty"`    // from the banner or the table header
	Command string `json:"command,omitempty"` // echoed command line, when the output has one

	Device     string `json:"device,omitempty"`     // banner "Device": mlx5_3
	LinkType   string `json:"link_type,omitempty"`  // banner "Link type": IB or Ethernet (RoCE)
	GIDIndex   *int   `json:"gid_index,omitempty"`  // banner "GID index"; printed only when not the default
	Transport  string `json:"transport,omitempty"`  // banner "Transport type": IB
	Connection string `json:"connection,omitempty"` // banner "Connection type": RC, UD, DC...
	QPs        int    `json:"qps,omitempty"`        // banner "Number of qps"
	MTU        int    `json:"mtu,omitempty"`        // banner "Mtu", bytes

	Mem         Mem    `json:"mem"`                    // where the buffers lived
	MemEvidence string `json:"mem_evidence,omitempty"` // the line Mem was decided from
	GPU         string `json:"gpu,omitempty"`          // "device name = [NVIDIA H200]"

	Unit        string `json:"unit,omitempty"`         // BW unit as printed: Gb/sec, MB/sec or MiB/sec
	UnitSource  string `json:"unit_source,omitempty"`  // header (text), inferred or assumed (JSON)
	LatencyUnit string `json:"latency_unit,omitempty"` // usec, or cycles with --report-cycles

	// The headline numbers come from the row with the largest message size
	// (with -a) or the single row: that is where the link is saturated.
	MsgSize    int64   `json:"msg_size"`
	BWPeakGbps float64 `json:"bw_peak_gbps"`
	BWAvgGbps  float64 `json:"bw_avg_gbps"`

	Rows     []Row             `json:"rows,omitempty"`
	Settings map[string]string `json:"settings,omitempty"` // every banner "key : value" as printed

	Error   string   `json:"error,omitempty"`   // the failure lines joined by "; "
	Failure *Failure `json:"failure,omitempty"` // the same, decoded

	// Partial is set when the output does not hold a whole run and
	// printed no failure that explains why: it ends mid-line, its table
	// stops before perftest's closing dashed line, or it has no result
	// row. PartialReason says which, naming the last size read, in one or
	// more sentences joined by "; ". Parse and ParseJSON document the rules.
	// Prefix is the launcher or collector prefix the output's lines had,
	// stripped before parsing ("mpirun", "kubectl", ...); "" when none.
	Prefix        string `json:"prefix,omitempty"`
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`
}

// Row is one line of the result table. BW fields are in Gb/s; latency
// fields are in Result.LatencyUnit.
type Row struct {
	Bytes       int64   `json:"bytes"`
	Iterations  int64   `json:"iterations"`
	BWPeakGbps  float64 `json:"bw_peak_gbps,omitempty"`
	BWAvgGbps   float64 `json:"bw_avg_gbps,omitempty"`
	MsgRateMpps float64 `json:"msg_rate_mpps,omitempty"`
	TMin        float64 `json:"t_min,omitempty"`
	TMax        float64 `json:"t_max,omitempty"`
	TTypical    float64 `json:"t_typical,omitempty"`
	TAvg        float64 `json:"t_avg,omitempty"`
	TStdev      float64 `json:"t_stdev,omitempty"`
	P99         float64 `json:"p99,omitempty"`
	P999        float64 `json:"p99_9,omitempty"`
	TPSAvg      float64 `json:"tps_avg,omitempty"` // latency tests in duration mode (-D)
	CPUUtil     float64 `json:"cpu_util,omitempty"`
}

// Failure is a decoded failure report.
type Failure struct {
	// Kind groups causes so that verdicts can be stable: completion, mr,
	// dmabuf, cuda, resource, connection, device, run or other.
	Kind  string   `json:"kind"`
	Cause string   `json:"cause"` // the line that names the cause, not the unwinding after it
	Lines []string `json:"lines"` // the failure lines in order, counters included; the first 64
	// LinesOmitted counts the failure lines past the first 64.
	LinesOmitted int `json:"lines_omitted,omitempty"`

	Line int `json:"line,omitempty"` // the input line of Cause (1-based); 0 for a cause the parser names

	Side         string `json:"side,omitempty"`           // completion error seen at client or server
	WCStatus     *int   `json:"wc_status,omitempty"`      // ibv_wc_status
	WCStatusName string `json:"wc_status_name,omitempty"` // IBV_WC_REM_ACCESS_ERR
	WRID         int64  `json:"wr_id,omitempty"`
	Syndrome     string `json:"syndrome,omitempty"` // vendor_err, as printed: 0x88
	Errno        int    `json:"errno,omitempty"`
	ErrnoName    string `json:"errno_name,omitempty"` // EFAULT
}

// Failed reports whether the output shows a failure. Output that ends
// before any result row counts as failed too.
func (r *Result) Failed() bool { return r.Error != "" }

// RoCE reports whether the link layer is Ethernet, i.e. RoCE.
func (r *Result) RoCE() bool { return strings.EqualFold(r.LinkType, "Ethernet") }

// Err returns the failure as an error wrapping ErrRunFailed, or nil.
func (r *Result) Err() error {
	if !r.Failed() {
		return nil
	}
	who := r.Test
	if who == "" {
		who = "perftest"
	}
	if r.Device != "" {
		who += " on " + r.Device
	}
	return fmt.Errorf("%s: %s: %w", who, r.Error, ErrRunFailed)
}

// Row returns the last row for a message size.
func (r *Result) Row(bytes int64) (Row, bool) {
	for i := len(r.Rows) - 1; i >= 0; i-- {
		if r.Rows[i].Bytes == bytes {
			return r.Rows[i], true
		}
	}
	return Row{}, false
}

// Parse reads perftest's text output: what a client or server prints,
// optionally with the command line echoed before it, indented or not.
//
// Output is recognised by perftest's own lines: the banner, the #bytes
// table header, the echoed ib_* command, CUDA and DMA-BUF lines, or a
// failure that names an RDMA or GPU thing (a QP, an MR, a completion, a
// CUDA call). NCCL log lines are never read, and a generic error line
// ("failed to ...") alone is not perftest output: such input is
// ErrNoOutput.
//
// The result is Partial, with the reason, when:
//   - r stopped before its end (a bounded.Reader at its total cap, or
//     interrupted): the lines before stand, the one it fell in is not read;
//   - the output ends mid-line: that line is not read (unless it is a
//     dashed line), since a cut row ("2048 5000 52.4") reads as a result;
//   - a table stops before the dashed line perftest prints after its
//     last row, and no failure was printed: the run was killed or the
//     output cut;
//   - there is no result row and no failure: the run stopped before its
//     table, or this is a server's side or an excerpt. Failure then
//     says so too (Kind "run"), so that Failed() holds for a client that
//     printed nothing to measure.
//
// A row must have as many fields as its header; a shorter line is not a
// row.
//
// Memory stays bounded however long the input: a line longer than 1 MiB
// is skipped and makes the result partial, rows past maxRows are counted
// and make it partial, failure lines past maxFailureLines are counted,
// and what is kept of a line is clipped (maxText, maxField).
func Parse(r io.Reader) (*Result, error) { return parse(r, false) }

// parse is Parse; slow sends every line through line, the path the hot
// one (lineBytes) is held to.
func parse(r io.Reader, slow bool) (*Result, error) {
	p := parser{res: &Result{}, slow: slow}
	lr := bounded.NewLines(r, bounded.MaxLine)
	lr.StripPrefixes()
	for {
		b, ok := lr.Next()
		if !ok {
			break
		}
		p.n = lr.N()
		p.lineBytes(b)
	}
	if err := lr.Err(); err != nil {
		return nil, fmt.Errorf("reading perftest output: %w", err)
	}
	if n, tail, cut := lr.Cut(); cut {
		p.cutLine(n, tail)
	}
	p.skipped, p.stopped = lr.Skipped(), lr.Stopped()
	if !p.seen {
		return nil, ErrNoOutput
	}
	p.finish()
	p.res.setPartial(p.partialReasons())
	p.res.Prefix = lr.Prefix()
	return p.res, nil
}

type parser struct {
	res     *Result
	seen    bool     // anything perftest-like at all
	cols    []column // current table header, nil before one
	open    bool     // a table header came and no dashed line after it yet
	bwScale float64  // multiplier to Gb/s for the current table
	memRank int
	// memPrinted: Mem comes from a line the run printed, not the command.
	memPrinted    bool
	failed        []string
	failedAt      []int                 // the line numbers of failed
	failedOmitted int                   // failure lines past maxFailureLines
	rowsOmitted   int                   // rows past maxRows
	firstOmitted  int                   // the line of the first of them
	skipped       string                // the lines over bounded.MaxLine, for a partial reason
	stopped       error                 // why the input was not read to its end (bounded.Reader), or nil
	n             int                   // the number of the line being read
	cutAt         int                   // the line number of a last line cut without its newline, not read
	known         map[string]*knownLine // lines read before (bannerPairs, keepTail)
	lastKnown     *knownLine            // the last of them read (knownLine)
	banners       int                   // banner lines in known
	tails         int                   // other lines in known
	headers       map[string]headerCols // table headers already split (header)
	fields        []string              // the fields of the row being read, reused
	fieldsB       [][]byte              // the same, on the hot path (parse_fast.go)
	low           []byte                // the line being read, lower-cased (lower)
	slow          bool                  // every line through line: the path the tests hold the hot one to
}

// cutLine handles line n, the last, which lacks its newline: a dashed
// line is still one, anything else (or a line over the limit: tail nil)
// is not read.
func (p *parser) cutLine(n int, tail []byte) {
	p.n = n
	if s := strings.TrimSpace(string(tail)); tail != nil && (s == "" || isSeparator(s)) {
		p.line(s)
		return
	}
	p.cutAt = n
}

// partialReasons says why the text does not hold a whole run (see Parse).
func (p *parser) partialReasons() []string {
	r := p.res
	last := ""
	if n := len(r.Rows); n > 0 {
		last = "the " + results.SizeString(r.Rows[n-1].Bytes) + " row"
	}
	var reasons []string
	if p.stopped != nil {
		reasons = append(reasons, fmt.Sprintf("the output was not read to its end: %v", p.stopped))
	}
	if p.cutAt > 0 {
		after := ""
		if last != "" {
			after = " after " + last
		}
		reasons = append(reasons, fmt.Sprintf("the output ends mid-line%s; the cut line (line %d) was not read", after, p.cutAt))
	}
	if p.skipped != "" {
		reasons = append(reasons, p.skipped)
	}
	if p.rowsOmitted > 0 {
		reasons = append(reasons, fmt.Sprintf("more than %d result rows: the %d past them (from line %d) were not kept", maxRows, p.rowsOmitted, p.firstOmitted))
	}
	switch {
	case len(p.failed) > 0:
		// The failure explains why the table stops.
	case p.open && last != "":
		reasons = append(reasons, "the table stops after "+last+" without perftest's closing dashed line: the run stopped or the output was cut")
	case p.open:
		reasons = append(reasons, "the table stops after its header without a row or perftest's closing dashed line: the run stopped or the output was cut")
	case len(r.Rows) == 0:
		reasons = append(reasons, noRows)
	}
	return reasons
}

const noRows = "no result row and no failure line: the run stopped before its table, or this is a server's side or an excerpt"

func (r *Result) setPartial(reasons []string) {
	if len(reasons) > 0 {
		r.Partial, r.PartialReason = true, strings.Join(reasons, "; ")
	}
}

func (p *parser) finish() {
	r := p.res
	if n := len(r.Rows); n > 0 {
		best := 0
		for i := range r.Rows {
			if r.Rows[i].Bytes >= r.Rows[best].Bytes {
				best = i
			}
		}
		b := r.Rows[best]
		r.MsgSize, r.BWPeakGbps, r.BWAvgGbps = b.Bytes, b.BWPeakGbps, b.BWAvgGbps
	}
	if len(p.failed) > 0 {
		r.Failure = decodeFailure(p.failed, p.failedAt)
		r.Failure.LinesOmitted = p.failedOmitted
	} else if len(r.Rows) == 0 {
		r.Failure = &Failure{Kind: "run", Cause: "output ends before any result row"}
	}
	if r.Failure != nil {
		r.Error = r.Failure.text()
	}
}
