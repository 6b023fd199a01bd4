package mpi

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

	"github.com/gdrcheck/gdrcheck/harness/osu"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/launch"
)

// Scopes of a benchmark run: two ranks on two GPUs of this node, or one
// rank here and one on another node.
const (
	IntraNode = "intra-node"
	InterNode = "inter-node"
)

// BenchMode is the direct run or a fallback forced through UCX's
// variables.
type BenchMode struct {
	Name string
	Env  []string
}

var (
	ModeDirect = BenchMode{Name: "direct"}
	// ModeNoCUDAIPC takes cuda_ipc away inside a node.
	ModeNoCUDAIPC = BenchMode{Name: "no-cuda-ipc", Env: []string{"UCX_TLS=^cuda_ipc"}}
	// ModeNoGDR stops UCX registering GPU memory with the NICs.
	ModeNoGDR = BenchMode{Name: "no-gdr", Env: []string{"UCX_IB_GPU_DIRECT_RDMA=no"}}
)

// ProtoEnv makes UCX (1.13 and later) print a protocol table for each
// transfer it sets up, the path evidence.
var ProtoEnv = []string{"UCX_PROTO_INFO=y"}

// The tools the benchmarks run with: the OSU micro-benchmarks, else
// UCX's own ucx_perftest.
const (
	ToolOSU      = "osu"
	ToolPerftest = "ucx_perftest"
)

// ErrBenchNotFound: neither tool is there.
var ErrBenchNotFound = errors.New("no GPU point-to-point benchmark found")

// ErrUnfit: the tool ran but cannot measure GPU memory through MPI as
// built (OSU without CUDA, ucx_perftest without MPI): the run proves
// nothing either way.
var ErrUnfit = errors.New("the benchmark cannot measure GPU buffers as built")

// BenchRunner runs the benchmarks.
type BenchRunner struct {
	Dir     string        // holds osu_bw & co.; "" searches PATH
	Timeout time.Duration // each run; zero is five minutes
	LogDir  string        // keeps each run's output; "" keeps none
}

// BenchSpec is one run.
type BenchSpec struct {
	Binary   string // osu_bw, osu_latency, ucx_perftest
	Args     []string
	Op       string // bw or latency
	Scope    string
	Mode     BenchMode
	Launcher []string // filled: mpirun --mca pml ucx -np 2
}

// BenchRun is what one run produced.
type BenchRun struct {
	Spec    BenchSpec
	Command []string
	LogFile string // "" when none was kept
	// OSU or Perftest is the tool's result; UCX its protocol tables, nil
	// when it printed none (UCX before 1.13, or the variable not passed
	// on to the ranks).
	OSU      *osu.Result
	Perftest *ucx.Perftest
	UCX      *ucx.LogSummary
	// CPUSeconds is the process tree's user + system time (rusage), for
	// an intra-node run whose ranks are the launcher's children; nil
	// otherwise (a remote rank is not ours to count).
	CPUSeconds *float64
	Duration   time.Duration
	Err        error
}

// Benchmarks are the runs of one node, and what the plan was made of.
type Benchmarks struct {
	Tool string
	Runs []BenchRun
	// InterNode: a launcher across nodes was given.
	InterNode bool
	// Blocked names the misbuild that kept the benchmarks from running.
	Blocked string
	// Err says why none ran (no tool, a bad launcher).
	Err error
}

// Find returns the run of an op in a scope and mode.
func (b *Benchmarks) Find(op, scope, mode string) (BenchRun, bool) {
	if b == nil {
		return BenchRun{}, false
	}
	for _, r := range b.Runs {
		if r.Spec.Op == op && r.Spec.Scope == scope && r.Spec.Mode.Name == mode {
			return r, true
		}
	}
	return BenchRun{}, false
}

// Lookup finds a binary in Dir, else on PATH.
func (r BenchRunner) Lookup(name string) (string, error) {
	if r.Dir != "" {
		p := filepath.Join(r.Dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
		return "", fmt.Errorf("%s not in %q", name, r.Dir)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not on PATH", name)
	}
	return p, nil
}

// Tool picks the OSU micro-benchmarks where osu_bw and osu_latency are
// there, else ucx_perftest.
func (r BenchRunner) Tool() (string, error) {
	var missing []string
	for _, b := range []string{"osu_bw", "osu_latency"} {
		if _, err := r.Lookup(b); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) == 0 {
		return ToolOSU, nil
	}
	_, err := r.Lookup("ucx_perftest")
	if err == nil {
		return ToolPerftest, nil
	}
	missing = append(missing, err.Error())
	return "", fmt.Errorf("%w (%s): install the OSU micro-benchmarks built --enable-cuda (osu_bw, osu_latency: libexec/osu-micro-benchmarks/mpi/pt2pt) or UCX's ucx_perftest built --with-mpi, or set --mpi-bench-dir", ErrBenchNotFound, strings.Join(missing, "; "))
}

// Specs are the runs of one scope: bandwidth and latency on the direct
// path, then bandwidth with the fallback forced.
func Specs(tool, scope string, launcher []string, forced BenchMode) []BenchSpec {
	bw, lat := []string{"-d", "cuda", "-m", "33554432", "D", "D"}, []string{"-d", "cuda", "D", "D"}
	bin := map[string]string{"bw": "osu_bw", "latency": "osu_latency"}
	if tool == ToolPerftest {
		bw, lat = []string{"-t", "tag_bw", "-m", "cuda", "-s", "33554432", "-n", "200"}, []string{"-t", "tag_lat", "-m", "cuda", "-s", "8", "-n", "10000"}
		bin = map[string]string{"bw": "ucx_perftest", "latency": "ucx_perftest"}
	}
	return []BenchSpec{
		{Binary: bin["bw"], Args: bw, Op: "bw", Scope: scope, Mode: ModeDirect, Launcher: launcher},
		{Binary: bin["latency"], Args: lat, Op: "latency", Scope: scope, Mode: ModeDirect, Launcher: launcher},
		{Binary: bin["bw"], Args: bw, Op: "bw", Scope: scope, Mode: forced, Launcher: launcher},
	}
}

// BenchLog names a run's log in the log directory.
func BenchLog(s BenchSpec) string {
	return fmt.Sprintf("%s-%s-%s-%s.log", s.Binary, s.Op, s.Scope, s.Mode.Name)
}

// Measure runs the specs one at a time, telling progress what it starts.
func Measure(ctx context.Context, r BenchRunner, specs []BenchSpec, progress io.Writer) []BenchRun {
	if progress == nil {
		progress = io.Discard
	}
	var out []BenchRun
	for _, s := range specs {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(progress, "mpi: %s %s (%s, %s) ...\n", s.Binary, s.Op, s.Scope, s.Mode.Name)
		res := r.Run(ctx, s)
		fmt.Fprintf(progress, "mpi: %s %s (%s, %s) took %s\n", s.Binary, s.Op, s.Scope, s.Mode.Name, res.Duration.Round(1e8))
		out = append(out, res)
	}
	return out
}

// Run runs one spec: the launcher starts `env VAR=... BINARY ARGS` on
// each rank, so the variables reach ranks on other nodes whatever the
// launcher passes on.
func (r BenchRunner) Run(ctx context.Context, s BenchSpec) BenchRun {
	res := BenchRun{Spec: s}
	bin, err := r.Lookup(s.Binary)
	if err != nil {
		res.Err = err
		return res
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env := append(append([]string{}, ProtoEnv...), s.Mode.Env...)
	res.Command = append(append(append(append(append([]string{}, s.Launcher...), "env"), env...), bin), s.Args...)
	out, err := launch.OpenLog(r.LogDir, s.Binary, BenchLog(s))
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
	// gdrcheck runs as root on a node; Open MPI's mpirun refuses root
	// unless told (the variables stand for --allow-run-as-root, and other
	// launchers ignore them).
	cmd.Env = append(append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"), env...)
	cmd.WaitDelay = 5 * time.Second // a killed launcher must not leave ranks behind
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	runErr := cmd.Run()
	res.Duration = time.Since(start)
	if s.Scope == IntraNode { // a remote rank's CPU cannot be counted
		res.CPUSeconds = launch.TreeCPU(s.Launcher, cmd.ProcessState)
	}
	last, err := res.parse(out)
	if err != nil {
		res.Err = fmt.Errorf("%s: reading its output back: %w", s.Binary, err)
		return res
	}
	res.Err = res.judgeRun(ctx, runErr, timeout, last)
	return res
}

// judgeRun says why a run gave no measurement to use, or nil.
func (res *BenchRun) judgeRun(ctx context.Context, runErr error, timeout time.Duration, last string) error {
	s := res.Spec
	switch {
	case res.Perftest != nil && res.Perftest.Waiting && res.Perftest.Iterations == 0:
		return fmt.Errorf("%w: ucx_perftest waited for a client (\"Waiting for connection...\"): it was built without MPI (--with-mpi), so a launcher cannot start it as a pair; use the OSU micro-benchmarks", ErrUnfit)
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("%s timed out after %s", s.Binary, timeout)
	case runErr != nil:
		return fmt.Errorf("%s: %w%s", s.Binary, runErr, last)
	case res.OSU != nil && !res.OSU.CUDA:
		return fmt.Errorf("%w: %s printed %q, not MPI-CUDA: the OSU micro-benchmarks were built without --enable-cuda, so the buffers were on the host", ErrUnfit, s.Binary, res.OSU.Title)
	case res.OSU != nil && len(res.OSU.Failed) > 0:
		return fmt.Errorf("%s: validation failed at %d bytes", s.Binary, res.OSU.Failed[0])
	case res.OSU != nil && res.OSU.Partial:
		return fmt.Errorf("%s output is cut short or damaged: %s", s.Binary, res.OSU.PartialReason)
	case res.OSU == nil && res.Perftest == nil:
		return fmt.Errorf("%s printed no result%s", s.Binary, last)
	}
	return nil
}

// parse reads the output back from its file, a line at a time, and
// returns its last line for an error message.
func (res *BenchRun) parse(f *os.File) (string, error) {
	read := func(p func(io.Reader) error) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return p(f)
	}
	var err error
	if res.Spec.Binary == "ucx_perftest" {
		err = read(func(r io.Reader) error {
			p, err := ucx.ParsePerftest(r)
			if err == nil || p != nil && p.Waiting {
				res.Perftest = p
			}
			return nil
		})
	} else {
		err = read(func(r io.Reader) error { res.OSU, _ = osu.Parse(r); return nil })
	}
	if err == nil {
		err = read(func(r io.Reader) error { res.UCX, _ = ucx.ParseLog(r); return nil })
	}
	if err != nil {
		return "", err
	}
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	from := max(fi.Size()-4096, 0)
	tail := make([]byte, fi.Size()-from)
	n, _ := f.ReadAt(tail, from)
	t := bytes.TrimSpace(tail[:n])
	if i := bytes.LastIndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	}
	if len(t) == 0 {
		return "", nil
	}
	return ": last output: " + bounded.Clip(bytes.TrimSpace(t), 300), nil
}

// BandwidthGBs is a bandwidth run's result at its largest size, in GB/s
// (10^9 bytes a second), and that size; false for a run without one.
func (r BenchRun) BandwidthGBs() (float64, int64, bool) {
	switch {
	case r.OSU != nil && r.OSU.Unit == "MB/s":
		if row, ok := r.OSU.Largest(); ok {
			return row.Value / 1000, row.Size, true
		}
	case r.Perftest != nil && r.Perftest.Iterations > 0 && r.Spec.Op == "bw":
		return r.Perftest.BandwidthMBs / 1000, perftestSize(r.Spec.Args), true
	}
	return 0, 0, false
}

// LatencyUS is a latency run's smallest-size latency and that size.
func (r BenchRun) LatencyUS() (float64, int64, bool) {
	switch {
	case r.OSU != nil && r.OSU.Unit == "us" && len(r.OSU.Rows) > 0:
		return r.OSU.Rows[0].Value, r.OSU.Rows[0].Size, true
	case r.Perftest != nil && r.Perftest.Iterations > 0 && r.Spec.Op == "latency":
		return r.Perftest.LatencyUS, perftestSize(r.Spec.Args), true
	}
	return 0, 0, false
}

func perftestSize(args []string) int64 {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-s" {
			var n int64
			fmt.Sscan(args[i+1], &n)
			return n
		}
	}
	return 0
}

// Ratio compares a forced run's bandwidth with the direct run's at the
// largest size both measured.
func Ratio(forced, direct BenchRun) (float64, bool) {
	f, size, ok := forced.BandwidthGBs()
	if !ok {
		return 0, false
	}
	d, dsize, ok := direct.BandwidthGBs()
	if ok && dsize != size && direct.OSU != nil {
		v, found := direct.OSU.At(size)
		d, ok = v/1000, found
	}
	if !ok || d <= 0 {
		return 0, false
	}
	return f / d, true
}

// FillRanks fills a launcher's {ranks}: two, one per GPU.
func FillRanks(launch []string) []string {
	out := make([]string, len(launch))
	for i, w := range launch {
		out[i] = strings.ReplaceAll(w, "{ranks}", "2")
	}
	return out
}
