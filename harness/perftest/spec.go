package perftest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Spec is one perftest invocation.
type Spec struct {
	Binary string // ib_write_bw, ib_read_bw, ib_write_lat...
	Device string // -d: the RDMA device (mlx5_0); "" lets perftest take the first
	Port   int    // -i: the device's port; 0 leaves perftest's default, 1
	// Mem is where the buffers live: MemHost (or MemUnknown, the same
	// flags), MemCUDA (--use_cuda=<GPU>, registered with ibv_reg_mr: the
	// nvidia_peermem path) or MemCUDADMABuf (--use_cuda=<GPU>
	// --use_cuda_dmabuf: ibv_reg_dmabuf_mr).
	Mem Mem
	GPU int // CUDA device index for --use_cuda
	// Size is the message size in bytes (-s); 0 leaves perftest's
	// default. All (-a) runs every size from 2 bytes to 8 MiB instead.
	Size        int64
	All         bool
	Iters       int  // -n; 0 leaves perftest's default
	ReportGbits bool // --report_gbits: bandwidth in Gb/s rather than MiB/s
	// TCPPort is the port the two sides exchange queue pair details on
	// (-p); 0 leaves perftest's default, 18515. Runs at the same time
	// need different ports.
	TCPPort int
	// Server is "" to run the server side; a host name or address runs
	// the client against a server there. For Loopback it is the address
	// the client connects to, 127.0.0.1 when "".
	Server string
	Extra  []string // more perftest options, before the host
}

// Args are the command-line arguments of the spec, in the order perftest
// prints them back.
func (s Spec) Args() []string {
	var a []string
	if s.Device != "" {
		a = append(a, "-d", s.Device)
	}
	if s.Port > 0 {
		a = append(a, "-i", strconv.Itoa(s.Port))
	}
	switch {
	case s.All:
		a = append(a, "-a")
	case s.Size > 0:
		a = append(a, "-s", strconv.FormatInt(s.Size, 10))
	}
	if s.Iters > 0 {
		a = append(a, "-n", strconv.Itoa(s.Iters))
	}
	if s.TCPPort > 0 {
		a = append(a, "-p", strconv.Itoa(s.TCPPort))
	}
	switch s.Mem {
	case MemCUDA:
		a = append(a, "--use_cuda="+strconv.Itoa(s.GPU))
	case MemCUDADMABuf:
		a = append(a, "--use_cuda="+strconv.Itoa(s.GPU), "--use_cuda_dmabuf")
	}
	if s.ReportGbits {
		a = append(a, "--report_gbits")
	}
	a = append(a, s.Extra...)
	if s.Server != "" {
		a = append(a, s.Server)
	}
	return a
}

// mem is the memory the flags ask for: "" means host.
func (s Spec) mem() Mem {
	if s.Mem == MemUnknown {
		return MemHost
	}
	return s.Mem
}

// Sides of a run.
const (
	SideServer = "server"
	SideClient = "client"
)

// Side is the side the spec runs: SideServer when it names no server.
func (s Spec) Side() string {
	if s.Server == "" {
		return SideServer
	}
	return SideClient
}

// RunResult is what one side of a run produced.
type RunResult struct {
	Spec    Spec
	Side    string // SideServer or SideClient
	Command []string
	Output  []byte // stdout and stderr together
	// Result is the parsed output, with Mem set from the spec's flags;
	// nil when the output holds nothing perftest prints (a server of a
	// write or read test prints only its banner, at most).
	Result   *Result
	Duration time.Duration
	// Attempts counts the client's tries to reach its server (Loopback
	// retries while the server is not yet listening).
	Attempts int
	// Server is the server side of a Loopback, its output kept.
	Server *RunResult
	// Err is why the run failed: the binary missing, a failure perftest
	// reported (wrapping ErrRunFailed, with the decoded cause), a
	// non-zero exit, a timeout (wrapping context.DeadlineExceeded), or a
	// client that printed no result.
	Err error
}

// ErrNotFound says the binary is not in the perftest directory or on
// PATH.
var ErrNotFound = errors.New("perftest binary not found")

// SetMem records the memory the flags asked for: the text does not always
// say (an excerpt without the command line, a host run), and the JSON never
// tells the CUDA paths apart.
func SetMem(r *Result, s Spec) {
	want := s.mem()
	flags := "no memory flags"
	if want != MemHost {
		flags = strings.Join(Spec{Mem: s.Mem, GPU: s.GPU}.Args(), " ")
	}
	switch {
	case r.Mem == want && r.MemEvidence != "":
	case r.Mem == MemUnknown || r.Mem == want:
		r.MemEvidence = "runner flags: " + flags
	default:
		r.MemEvidence = fmt.Sprintf("runner flags: %s (the output suggested %s: %s)", flags, r.Mem, r.MemEvidence)
	}
	r.Mem = want
}
