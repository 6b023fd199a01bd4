package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/launch"
)

// DebugEnv is what every run sets so the log names the transports: INFO
// level, and the subsystems that print channel connections and per-HCA GDR
// state (the default INIT,ENV does not).
var DebugEnv = []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM"}

// SafeEnv keeps NVLink SHARP multicast off: on shared machines a program
// that uses it can put every GPU of the host out of service.
var SafeEnv = []string{"NCCL_NVLS_ENABLE=0"}

// Runner runs nccl-tests binaries.
type Runner struct {
	// Dir holds the binaries (--nccl-tests-dir); empty means PATH.
	Dir string
	// Launcher prefixes the command, e.g. srun arguments for multi-node
	// runs; empty runs the binary directly.
	Launcher []string
	// Env is added to the process environment (before the mode's).
	Env []string
	// Timeout bounds each run; zero means ten minutes.
	Timeout time.Duration
	// CPU samples host CPU time (busy and total seconds over all CPUs)
	// around a run; nil leaves utilisation unmeasured.
	CPU func() (busy, total float64, err error)
	// Fabric samples the RDMA port counters around a run, so errors and
	// the bytes that crossed each NIC during it are known; nil skips it.
	Fabric func() (node.FabricSample, error)
	// LogDir keeps each run's output, in the file its Spec.Log names.
	// Without it the output goes to a temporary file, removed once
	// parsed. Either way the output goes to disk as it arrives and is
	// parsed from there, never held: with NCCL's debug lines from every
	// rank of an allocation it grows with the ranks.
	LogDir string
}

// Spec is one run: which binary, its arguments, and the mode's variables.
type Spec struct {
	Binary string   // all_reduce_perf
	Args   []string // -b 8 -e 2G -f 2 -g 2
	Env    []string // NCCL_P2P_DISABLE=1 ...
	// Log names the output's file in Runner.LogDir, a plain file name
	// (all_reduce_perf-direct.log); empty makes a unique one.
	Log string
}

// Result is what one run produced.
type Result struct {
	Spec    Spec
	Command []string
	// LogFile holds the whole output, stdout and stderr together (NCCL
	// logs to stdout), in Runner.LogDir; "" when none was kept.
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

// ErrNotFound says the binary is not in Dir or on PATH.
var ErrNotFound = errors.New("nccl-tests binary not found")

// Lookup finds a binary in Dir, else on PATH.
func (r Runner) Lookup(name string) (string, error) {
	if r.Dir != "" {
		p := filepath.Join(r.Dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
		return "", fmt.Errorf("%w: %s in %q", ErrNotFound, name, r.Dir)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s on PATH (install nccl-tests, or set --nccl-tests-dir)", ErrNotFound, name)
	}
	return p, nil
}

// Run runs one spec and parses what it printed.
func (r Runner) Run(ctx context.Context, s Spec) Result {
	res := Result{Spec: s}
	bin, err := r.Lookup(s.Binary)
	if err != nil {
		res.Err = err
		return res
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res.Command = append(append(append([]string{}, r.Launcher...), bin), s.Args...)
	out, err := launch.OpenLog(r.LogDir, s.Binary, s.Log)
	if err != nil {
		res.Err = fmt.Errorf("%s: %w", s.Binary, err)
		return res
	}
	defer out.Close()
	if r.LogDir != "" {
		res.LogFile = out.Name()
	} else {
		defer os.Remove(out.Name())
	}
	cmd := exec.CommandContext(ctx, res.Command[0], res.Command[1:]...)
	cmd.Env = append(append(append(append(os.Environ(), SafeEnv...), DebugEnv...), r.Env...), s.Env...)
	// A killed launcher must not leave ranks behind.
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = out, out

	var b0, t0 float64
	var cpuErr error = errors.New("not sampled")
	if r.CPU != nil {
		b0, t0, cpuErr = r.CPU()
	}
	var before node.FabricSample
	var fabricErr error = errors.New("not sampled")
	if r.Fabric != nil {
		before, fabricErr = r.Fabric()
	}
	start := time.Now()
	runErr := cmd.Run()
	res.Duration = time.Since(start)
	res.CPUSeconds = launch.TreeCPU(r.Launcher, cmd.ProcessState)
	if r.Fabric != nil && (fabricErr == nil || errors.Is(fabricErr, node.ErrAbsent)) {
		if after, err := r.Fabric(); err == nil || errors.Is(err, node.ErrAbsent) {
			d := node.Delta(before, after)
			res.Fabric = &d
		}
	}
	if r.CPU != nil && cpuErr == nil {
		if b1, t1, err := r.CPU(); err == nil && t1 > t0 {
			pct := 100 * (b1 - b0) / (t1 - t0)
			res.CPUPct = &pct
		}
	}
	if err := res.parse(out); err != nil {
		res.Err = fmt.Errorf("%s: reading its output back: %w", s.Binary, err)
		return res
	}
	partial := ""
	if res.Tests != nil && res.Tests.Partial {
		partial = "; partial: " + res.Tests.PartialReason
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.Err = fmt.Errorf("%s timed out after %s%s", s.Binary, timeout, partial)
	case runErr != nil:
		res.Err = fmt.Errorf("%s: %w%s", s.Binary, runErr, failureOrLast(res))
	case res.Tests == nil || len(res.Tests.Rows) == 0:
		res.Err = fmt.Errorf("%s printed no result table%s", s.Binary, failureOrLast(res))
	case res.Tests.Failed():
		res.Err = fmt.Errorf("%s reported a failure%s%s", s.Binary, failureText(res.Tests), partial)
	case partial != "":
		// Exit 0 and rows, but the table stops short or is damaged:
		// the largest size measured is not known, so this is no pass.
		res.Err = fmt.Errorf("%s output is cut short or damaged%s", s.Binary, partial)
	}
	return res
}

// parse reads the output back from its file: the parsers read a line at
// a time, so memory does not grow with the output, and the tail is read
// from the file's end.
func (res *Result) parse(f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	res.Tests, _ = ParseTests(f)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	res.Log, _ = ParseLog(f)
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	from := max(fi.Size()-TailBytes, 0)
	tail := make([]byte, fi.Size()-from)
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

// failureOrLast quotes the first failure nccl-tests printed, else the
// output's last line: what a launcher that never started the ranks said
// (srun: error: ...).
func failureOrLast(res Result) string {
	if f := failureText(res.Tests); f != "" {
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

// failureText quotes the first failure nccl-tests printed.
func failureText(t *TestsResult) string {
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
