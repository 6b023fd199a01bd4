package perftest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
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

type column int

const (
	colOther column = iota
	colBytes
	colIters
	colBWPeak
	colBWAvg
	colMsgRate
	colTMin
	colTMax
	colTTypical
	colTAvg
	colTStdev
	colP99
	colP999
	colTPS
	colCPU
)

var columnNames = map[string]column{
	"#bytes": colBytes, "#iterations": colIters,
	"BW_peak": colBWPeak, "BW_average": colBWAvg, "MsgRate": colMsgRate,
	"t_min": colTMin, "t_max": colTMax, "t_typical": colTTypical,
	"t_avg": colTAvg, "t_stdev": colTStdev,
	"99%_percentile": colP99, "99.9%_percentile": colP999,
	"tps_average": colTPS, "CPU_Util": colCPU,
}

// Some column titles contain spaces; join them so that a header splits on
// whitespace like its rows do.
var headerJoin = strings.NewReplacer(
	"BW peak", "BW_peak", "BW average", "BW_average",
	"BW Port", "BW_Port", "MsgRate Port", "MsgRate_Port",
	"% percentile", "%_percentile", "tps average", "tps_average",
)

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

// Banner keys perftest prints (ctx_print_test_info); a "key : value" line
// counts as banner only if its first key is one of these, which keeps
// "local address: LID ..." and "GID: 00:00:..." out.
var bannerKeys = map[string]bool{
	"Dual-port": true, "Device": true, "Number of qps": true, "Transport type": true,
	"Connection type": true, "Using SRQ": true, "PCIe relax order": true, "Lock-free": true,
	"ibv_wr* API": true, "Using DDP": true, "Using Enhanced Reorder": true,
	"TX depth": true, "RX depth": true, "CQ Moderation": true, "CQE Poll Batch": true,
	"Post List": true, "Recv Post List": true, "Mtu": true, "Link type": true,
	"Buffer size": true, "GID index": true, "GID index2": true, "Max inline data": true,
	"Outstand reads": true, "rdma_cm QPs": true, "Data ex. method": true,
	"Use ROCm memory": true, "Use MUSA memory": true, "NUMA node": true,
}

var (
	kvRe       = regexp.MustCompile(`([^\s:][^:\t]*?)\s*:\s*(\S+)`)
	testNameRe = regexp.MustCompile(`^(Send|Send_imm|RDMA_Write|RDMA_Write_imm|RDMA_Read|Atomic)\s.*\bTest$`)
	commandRe  = regexp.MustCompile(`(?:^|[\s#$>])((?:ib_(?:write|read|send|atomic)_(?:bw|lat))(?:\s.*)?)$`)
	otherAccel = regexp.MustCompile(`^use_(rocm|neuron|hl|mlu|musa|opencl|supa)`)
	gpuNameRe  = regexp.MustCompile(`device name = \[([^\]]*)\]`)
	cudaRe     = regexp.MustCompile(`(?i:\bcuda\b|gpu buffer)|\bcu[A-Z][A-Za-z]+(?:_v\d)?\(`)

	// Both spellings of the completion error: perftest before 26.01 printed
	// "Failed status 10: wr_id 0 syndrom 0x88", later ones add the name:
	// "Failed status-IBV_WC_REM_ACCESS_ERR (10): wr_id 0 syndrom 0x88".
	statusRe     = regexp.MustCompile(`Failed status(?:\s+(-?\d+)|-(\S+)\s+\((-?\d+)\))\s*:\s*wr_id\s+(-?\d+)(?:\s+syndrom\s+(0x[0-9a-fA-F]+))?`)
	completionRe = regexp.MustCompile(`(?i)completion with error(?: at (client|server))?`)
	errnoRe      = regexp.MustCompile(`(?i)(?:MR with error|errno)\s*[=:]?\s*(\d+)`)
	counterRe    = regexp.MustCompile(`^[a-z]cnt=\d+(?:,\s*[a-z]cnt=\d+)*$`)
)

// strerror texts for the errnos RDMA setups hit; perftest passes some of
// them through (strerror, perror) and the C library prints others.
var errnoTexts = []string{
	"operation not permitted", "no such file or directory", "input/output error",
	"resource temporarily unavailable", "cannot allocate memory", "permission denied",
	"bad address", "device or resource busy", "no such device", "invalid argument",
	"too many open files", "no space left on device", "operation not supported",
	"protocol not supported", "connection timed out", "connection refused",
	"connection reset by peer", "no route to host", "network is unreachable",
}

// Linux errno numbers: perftest runs on Linux, wherever the parser runs.
var errnoNames = map[int]string{
	1: "EPERM", 2: "ENOENT", 5: "EIO", 11: "EAGAIN", 12: "ENOMEM", 13: "EACCES",
	14: "EFAULT", 16: "EBUSY", 19: "ENODEV", 22: "EINVAL", 24: "EMFILE", 28: "ENOSPC",
	93: "EPROTONOSUPPORT", 95: "EOPNOTSUPP", 104: "ECONNRESET", 110: "ETIMEDOUT",
	111: "ECONNREFUSED", 113: "EHOSTUNREACH",
}

// enum ibv_wc_status from libibverbs' verbs.h.
var wcStatusNames = []string{
	"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
	"IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
	"IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
	"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR",
	"IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR",
	"IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
}

func (p *parser) line(raw string) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return
	}
	switch {
	case isSeparator(s):
		return
	case strings.HasPrefix(s, "#bytes") && strings.Contains(s, "#iterations"):
		p.header(s)
		return
	case strings.HasPrefix(s, "#"):
		// perftest prints no other '#' lines worth reading ("#, usec"
		// histograms); our own fixtures use them as comments.
		return
	}
	// Rows are most of the output: try them first. The cheap string tests
	// in front of each regexp keep the parser fast on long inputs.
	if p.cols != nil && p.row(s) {
		return
	}
	if strings.Contains(s, "ib_") {
		if m := commandRe.FindStringSubmatch(s); m != nil {
			p.seen = true
			p.res.Command = m[1]
			p.memFromCommand(strings.Fields(m[1])[1:], s)
			return
		}
	}
	if strings.HasSuffix(s, "Test") && testNameRe.MatchString(s) {
		p.seen = true
		p.res.Test = s
		switch {
		case strings.Contains(s, " BW "):
			p.res.Kind = KindBW
		case strings.Contains(s, " Latency "):
			p.res.Kind = KindLat
		}
		return
	}
	if key, _, ok := strings.Cut(s, ":"); ok && bannerKeys[strings.TrimSpace(key)] {
		p.seen = true
		for _, kv := range kvRe.FindAllStringSubmatch(s, -1) {
			p.setting(kv[1], kv[2])
		}
		return
	}
	if strings.Contains(s, "device name = [") {
		if m := gpuNameRe.FindStringSubmatch(s); m != nil {
			p.res.GPU = m[1]
		}
	}
	low := strings.ToLower(s)
	// Failure lines count as evidence too: "DMA-BUF is not supported on
	// this GPU" says which path was asked for.
	switch {
	case strings.Contains(low, "dmabuf") || strings.Contains(low, "dma-buf"):
		p.seen = true
		p.mem(MemCUDADMABuf, s, true)
	case strings.Contains(low, "cu") && cudaRe.MatchString(s):
		p.seen = true
		p.mem(MemCUDA, s, true)
	}
	if isFailure(low) || (len(p.failed) > 0 && counterRe.MatchString(s)) {
		p.seen = true
		p.failed = append(p.failed, s)
	}
}

func isSeparator(s string) bool {
	return len(s) >= 20 && strings.Trim(s, "-") == ""
}

// isFailure takes a lower-cased line. Literal tests rather than one big
// case-insensitive regexp: this runs on every line that is not a row.
func isFailure(low string) bool {
	for _, p := range failPrefixes {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	for _, t := range failTexts {
		if strings.Contains(low, t) {
			return true
		}
	}
	if strings.HasSuffix(low, " is missing") {
		return true
	}
	// "cuInit(0) returned 100": perftest prints these only for errors.
	if _, after, ok := strings.Cut(low, " returned "); ok {
		after = strings.TrimPrefix(after, "-")
		return after != "" && after[0] >= '1' && after[0] <= '9'
	}
	return false
}

var failPrefixes = []string{
	"couldn't", "couldnt", "could not", "unable to", "failed", "cannot", "can't", "error", "fatal",
}

var failTexts = append([]string{
	"completion with error", "failed", "error=", "not supported", "does not support",
	"not found", "no available device", "segmentation fault", "core dumped",
}, errnoTexts...)

func (p *parser) header(s string) {
	p.seen = true
	f := strings.Fields(headerJoin.Replace(s))
	p.cols = make([]column, len(f))
	p.bwScale = 1
	for i, name := range f {
		unit := ""
		if j := strings.IndexByte(name, '['); j >= 0 {
			unit = strings.TrimSuffix(name[j+1:], "]")
			name = name[:j]
		}
		c := columnNames[name]
		p.cols[i] = c
		switch c {
		case colBWPeak, colBWAvg:
			p.res.Unit, p.res.UnitSource = unit, "header"
			p.bwScale = toGbps(unit)
			if p.res.Kind == "" {
				p.res.Kind = KindBW
			}
		case colTMin, colTAvg:
			p.res.LatencyUnit = unit
			if p.res.Kind == "" {
				p.res.Kind = KindLat
			}
		}
	}
}

// toGbps is the factor from a printed BW unit to Gb/s. perftest divides by
// 0x100000 for MB/sec and MiB/sec, and by 125000000 (10^9 bits) for Gb/sec.
func toGbps(unit string) float64 {
	switch unit {
	case UnitMBps, UnitMiBps:
		return float64(0x100000) * 8 / 1e9
	default:
		return 1
	}
}

// row takes a table line; it returns false for a line that is not one.
func (p *parser) row(s string) bool {
	f := strings.Fields(s)
	if len(f) < 2 || len(f) > len(p.cols) {
		return false
	}
	var r Row
	for i, tok := range f {
		c := p.cols[i]
		if c == colBytes || c == colIters {
			n, err := strconv.ParseInt(tok, 10, 64)
			if err != nil || n < 0 {
				return false
			}
			if c == colBytes {
				r.Bytes = n
			} else {
				r.Iterations = n
			}
			continue
		}
		v, err := strconv.ParseFloat(tok, 64)
		if err != nil {
			return false
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0 // perftest prints -nan/inf when a timer read 0; keep JSON valid
		}
		switch c {
		case colBWPeak:
			r.BWPeakGbps = v * p.bwScale
		case colBWAvg:
			r.BWAvgGbps = v * p.bwScale
		case colMsgRate:
			r.MsgRateMpps = v
		case colTMin:
			r.TMin = v
		case colTMax:
			r.TMax = v
		case colTTypical:
			r.TTypical = v
		case colTAvg:
			r.TAvg = v
		case colTStdev:
			r.TStdev = v
		case colP99:
			r.P99 = v
		case colP999:
			r.P999 = v
		case colTPS:
			r.TPSAvg = v
		case colCPU:
			r.CPUUtil = v
		}
	}
	p.res.Rows = append(p.res.Rows, r)
	return true
}

func (p *parser) setting(key, val string) {
	if p.res.Settings == nil {
		p.res.Settings = map[string]string{}
	}
	p.res.Settings[key] = val
	num := func() (int, bool) {
		n, err := strconv.Atoi(strings.TrimSuffix(val, "[B]"))
		return n, err == nil
	}
	switch key {
	case "Device":
		p.res.Device = val
	case "Link type":
		p.res.LinkType = val
	case "Transport type":
		p.res.Transport = val
	case "Connection type":
		p.res.Connection = val
	case "GID index":
		if n, ok := num(); ok {
			p.res.GIDIndex = &n
		}
	case "Number of qps":
		if n, ok := num(); ok {
			p.res.QPs = n
		}
	case "Mtu":
		if n, ok := num(); ok {
			p.res.MTU = n
		}
	}
}

var memRanks = map[Mem]int{MemHost: 1, MemCUDA: 2, MemCUDADMABuf: 3}

// mem keeps the most specific evidence: DMA-BUF lines imply CUDA memory,
// and any GPU line overrules a command line that looked like host memory.
// At equal rank a line the run printed beats the command line, since it
// shows what happened rather than what was asked for.
func (p *parser) mem(m Mem, evidence string, printed bool) {
	rank := memRanks[m]
	if rank > p.memRank || (rank == p.memRank && printed && !p.memPrinted) {
		p.memRank, p.memPrinted = rank, printed
		p.res.Mem = m
		p.res.MemEvidence = evidence
	}
}

func (p *parser) memFromCommand(args []string, line string) {
	m := MemHost
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "use_cuda_dmabuf":
			m = MemCUDADMABuf
		case strings.HasPrefix(name, "use_cuda") && m != MemCUDADMABuf:
			m = MemCUDA
		case otherAccel.MatchString(name) && m == MemHost:
			// Another accelerator's memory: not a class gdrcheck knows,
			// so say nothing rather than "host".
			m = MemUnknown
		}
	}
	if m != MemUnknown {
		p.mem(m, line, false)
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
		r.Failure = decodeFailure(p.failed)
	} else if len(r.Rows) == 0 {
		r.Failure = &Failure{Kind: "run", Cause: "output ends before any result row"}
	}
	if r.Failure != nil {
		r.Error = r.Failure.text()
	}
}

// Cause kinds, most telling first; "run" and "other" are perftest
// unwinding ("Failed to complete run_iter_bw function successfully").
var causeKinds = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"completion", regexp.MustCompile(`(?i)completion with error|failed status`)},
	{"dmabuf", regexp.MustCompile(`(?i)dma-?buf`)},
	{"mr", regexp.MustCompile(`(?i)allocate MR|reg_mr|create MR|null MR`)},
	{"cuda", regexp.MustCompile(`(?i:\bcuda\b|\bgpu\b)|\bcu[A-Z][A-Za-z]+`)},
	{"device", regexp.MustCompile(`(?i)device .*not found|find the Infiniband|get context|no IB devices|link layer`)},
	{"connection", regexp.MustCompile(`(?i)connect|socket|rdma_cm|exchange`)},
	{"resource", regexp.MustCompile(`(?i)create|allocate|\bQP\b|\bCQ\b|\bPD\b`)},
	{"run", regexp.MustCompile(`(?i)run_iter|run_|complete`)},
}

func classify(line string) (string, int) {
	for i, k := range causeKinds {
		if k.re.MatchString(line) {
			return k.kind, i
		}
	}
	return "other", len(causeKinds)
}

func decodeFailure(lines []string) *Failure {
	f := &Failure{Lines: lines, Kind: "other"}
	best := len(causeKinds) + 1
	for _, l := range lines {
		if counterRe.MatchString(l) {
			continue
		}
		if k, rank := classify(l); rank < best {
			best, f.Kind, f.Cause = rank, k, l
		}
		if m := completionRe.FindStringSubmatch(l); m != nil && m[1] != "" {
			f.Side = strings.ToLower(m[1])
		}
		if m := statusRe.FindStringSubmatch(l); m != nil {
			num, name := m[1], m[2]
			if num == "" {
				num = m[3]
			}
			if n, err := strconv.Atoi(num); err == nil {
				f.WCStatus = &n
				if name == "" && n >= 0 && n < len(wcStatusNames) {
					name = wcStatusNames[n]
				}
			}
			f.WCStatusName = name
			f.WRID, _ = strconv.ParseInt(m[4], 10, 64)
			f.Syndrome = m[5]
			f.Cause = l // the status line says more than "Completion with error"
		}
		if n := errnoOf(l); n > 0 && f.Errno == 0 {
			f.Errno, f.ErrnoName = n, errnoNames[n]
		}
	}
	if f.Cause == "" {
		f.Cause = lines[0]
	}
	return f
}

// text is the one-line form for Result.Error: the failure lines as printed,
// with the names of bare status and errno numbers added.
func (f *Failure) text() string {
	if len(f.Lines) == 0 {
		return f.Cause
	}
	out := make([]string, 0, len(f.Lines))
	for _, l := range f.Lines {
		if counterRe.MatchString(l) {
			continue
		}
		switch {
		case statusRe.MatchString(l) && f.WCStatusName != "" && !strings.Contains(l, f.WCStatusName):
			l += " (" + f.WCStatusName + ")"
		case f.ErrnoName != "" && errnoOf(l) == f.Errno:
			l += " (" + f.ErrnoName + ")"
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return f.Cause
	}
	return strings.Join(out, "; ")
}

// errnoOf returns the errno a line reports, or -1.
func errnoOf(line string) int {
	m := errnoRe.FindStringSubmatch(line)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return n
}
