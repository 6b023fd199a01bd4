package perftest

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// The classifier of perftest output: where the buffers lived (Mem), which
// lines report a failure, and what the failure was.

var (
	otherAccel = regexp.MustCompile(`^use_(rocm|neuron|hl|mlu|musa|opencl|supa)`)

	// Both spellings of the completion error: perftest before 26.01 printed
	// "Failed status 10: wr_id 0 syndrom 0x88", later ones add the name:
	// "Failed status-IBV_WC_REM_ACCESS_ERR (10): wr_id 0 syndrom 0x88".
	statusRe     = regexp.MustCompile(`Failed status(?:\s+(-?\d+)|-(\S+)\s+\((-?\d+)\))\s*:\s*wr_id\s+(-?\d+)(?:\s+syndrom\s+(0x[0-9a-fA-F]+))?`)
	completionRe = regexp.MustCompile(`(?i)completion with error(?: at (client|server))?`)
	errnoRe      = regexp.MustCompile(`(?i)(?:MR with error|errno)\s*[=:]?\s*(\d+)`)
	counterRe    = regexp.MustCompile(`^[a-z]cnt=\d+(?:,\s*[a-z]cnt=\d+)*$`)
)

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
		p.res.MemEvidence = clipText(evidence)
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

// isFailure takes a lower-cased line. Literal tests rather than one big
// case-insensitive regexp: this runs on every line that is not a row.
func isFailure(low []byte) bool {
	for _, p := range failPrefixesB {
		if bytes.HasPrefix(low, p) {
			return true
		}
	}
	if hasFailText(low) {
		return true
	}
	if bytes.HasSuffix(low, txtMissing) {
		return true
	}
	// "cuInit(0) returned 100": perftest prints these only for errors.
	if _, after, ok := bytes.Cut(low, txtReturned); ok {
		after = bytes.TrimPrefix(after, txtMinus)
		return len(after) > 0 && after[0] >= '1' && after[0] <= '9'
	}
	return false
}

var failPrefixes = []string{
	"couldn't", "couldnt", "could not", "unable to", "failed", "cannot", "can't", "error", "fatal",
}

var failTexts = append([]string{
	"completion with error", "failed", "error=", "not supported", "does not support",
	"not found", "no available device", "segmentation fault", "core dumped",
	// perftest refusing its arguments (perftest_parameters.c): the
	// parser's own line, and the refusals printed before it.
	"parser function exited with error", "cannot be used without", "supports cuda latency tests with",
}, errnoTexts...)

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

// decodeFailure decodes the failure lines; at holds their line numbers
// (nil when unknown).
func decodeFailure(lines []string, at []int) *Failure {
	f := &Failure{Lines: lines, Kind: "other"}
	best := len(causeKinds) + 1
	cause := 0
	for i, l := range lines {
		if counterRe.MatchString(l) {
			continue
		}
		if k, rank := classify(l); rank < best {
			best, f.Kind, f.Cause, cause = rank, k, l, i
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
			f.Cause, cause = l, i // the status line says more than "Completion with error"
		}
		if n := errnoOf(l); n > 0 && f.Errno == 0 {
			f.Errno, f.ErrnoName = n, errnoNames[n]
		}
	}
	if f.Cause == "" {
		f.Cause, cause = lines[0], 0
	}
	if cause < len(at) {
		f.Line = at[cause]
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
