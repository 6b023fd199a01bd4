package perftest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

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
	Lines []string `json:"lines"` // every failure line in order, counters included

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
func Parse(r io.Reader) (*Result, error) {
	p := parser{res: &Result{}}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			p.line(line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading perftest output: %w", err)
		}
	}
	if !p.seen {
		return nil, ErrNoOutput
	}
	p.finish()
	return p.res, nil
}

type parser struct {
	res     *Result
	seen    bool     // anything perftest-like at all
	cols    []column // current table header, nil before one
	bwScale float64  // multiplier to Gb/s for the current table
	memRank int
	// memPrinted: Mem comes from a line the run printed, not the command.
	memPrinted bool
	failed     []string
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
		r.Failure = decodeFailure(p.failed)
	} else if len(r.Rows) == 0 {
		r.Failure = &Failure{Kind: "run", Cause: "output ends before any result row"}
	}
	if r.Failure != nil {
		r.Error = r.Failure.text()
	}
}
