package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// DebugEnv is what every run sets so the log names the transports: INFO
// level, and the subsystems that print channel connections and per-HCA GDR
// state (the default INIT,ENV does not).
var DebugEnv = []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM"}

// SafeEnv keeps NVLink SHARP multicast off: on shared machines a program
// that uses it can put every GPU of the host out of service.
var SafeEnv = []string{"NCCL_NVLS_ENABLE=0"}

// Spec is one run: which binary, its arguments, and the mode's variables.
type Spec struct {
	Binary string   // all_reduce_perf
	Args   []string // -b 8 -e 2G -f 2 -g 2
	Env    []string // NCCL_P2P_DISABLE=1 ...
	// Log names the output's file in bench.NCCLRunner's log directory, a plain file name
	// (all_reduce_perf-direct.log); empty makes a unique one.
	Log string
}

// Result is what one run produced.
type Result struct {
	Spec    Spec
	Command []string
	// LogFile holds the whole output, stdout and stderr together (NCCL
	// logs to stdout), in bench.NCCLRunner's log directory; "" when none was
	// kept.
	LogFile string
	// Tail is the end of the output, at most TailBytes from a line start,
	// for an excerpt.
	Tail   []byte
	Tests  *TestsResult
	Log    *LogSummary
	CPUPct *float64
	// CPUSeconds is the user + system CPU time of the run's process tree
	// (the binary or its launcher, and every descendant each level waited
	// for), from rusage; nil when the ranks are not our descendants
	// (srun starts them under slurmstepd).
	CPUSeconds *float64
	// Fabric is what the RDMA ports counted during the run; nil when not
	// sampled.
	Fabric   *node.FabricDelta
	Duration time.Duration
	// Err is why the run failed: the binary missing, a non-zero exit, a
	// timeout, or an output that does not parse.
	Err error
}

// TailBytes is how much of the output's end Result.Tail keeps.
const TailBytes = 16 << 10

// ErrNotFound says the binary is not in the nccl-tests directory or on
// PATH.
var ErrNotFound = errors.New("nccl-tests binary not found")

// Output is a run's output kept where it can be read again (the log
// file harness/bench writes it to).
type Output interface {
	io.ReadSeeker
	io.ReaderAt
}

// ReadBack parses a run's output back from where it was kept: the
// parsers read a line at a time, so memory does not grow with the output,
// and the tail is read from the end.
func (res *Result) ReadBack(f Output) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	res.Tests, _ = ParseTests(f)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	res.Log, _ = ParseLog(f)
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	from := max(size-TailBytes, 0)
	tail := make([]byte, size-from)
	n, err := f.ReadAt(tail, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	tail = tail[:n]
	if i := bytes.IndexByte(tail, '\n'); from > 0 && i >= 0 {
		tail = tail[i+1:] // from a line start
	}
	res.Tail = tail
	return nil
}

// FailureOrLast quotes the first failure nccl-tests printed, else the
// output's last line: what a launcher that never started the ranks said
// (srun: error: ...).
func (res Result) FailureOrLast() string {
	if f := res.Tests.FailureText(); f != "" {
		return f
	}
	t := bytes.TrimSpace(res.Tail)
	if len(t) == 0 {
		return ""
	}
	if i := bytes.LastIndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	}
	return ": last output: " + keepField(bytes.TrimSpace(t))
}

// FailureText quotes the first failure nccl-tests printed; "" for none.
func (t *TestsResult) FailureText() string {
	if t == nil {
		return ""
	}
	if len(t.Failures) > 0 {
		f := t.Failures[0]
		if f.Kind == FailureWarn || f.Kind == FailureError {
			return fmt.Sprintf(": NCCL %s on line %d inside the result table: %s", f.Kind, f.Line, strings.TrimSpace(f.Message))
		}
		return fmt.Sprintf(": Test %s failure %s %s", f.Kind, f.Where, strings.TrimSpace(f.Message))
	}
	if t.OutOfBounds != nil && *t.OutOfBounds > 0 {
		return fmt.Sprintf(": %d out-of-bounds values", *t.OutOfBounds)
	}
	for _, r := range t.Rows {
		if r.Wrong > 0 {
			return fmt.Sprintf(": %d wrong elements at %d bytes", r.Wrong, r.Size)
		}
	}
	return ""
}

// Dominant is the transport class with the most channel connections, or
// "" when the log shows none.
func (l *LogSummary) Dominant() string {
	if l == nil {
		return ""
	}
	best, n := "", 0
	for c, k := range l.Transports {
		if k > n || k == n && c < best {
			best, n = c, k
		}
	}
	return best
}
