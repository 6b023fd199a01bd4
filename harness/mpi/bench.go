package mpi

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/osu"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
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
	// ToolPerftestPair is ucx_perftest started as its own server and
	// client on this node, no MPI between them: what proves UCX's GPU
	// path inside a node where no CUDA-aware MPI is installed.
	ToolPerftestPair = "ucx_perftest-pair"
)

// PairSize and PairIters are the pair's tag_bw run: 4 MiB messages,
// whose bulk protocol row is the one judged, as in the H200 captures
// (fixtures/corpus/ucx); 2000 take under a second on cuda_ipc and about
// 20 s staged over tcp.
const (
	PairSize  = 4194304
	PairIters = 2000
)

// ErrBenchNotFound: neither tool is there.
var ErrBenchNotFound = errors.New("no GPU point-to-point benchmark found")

// ErrUnfit: the tool ran but cannot measure GPU memory through MPI as
// built (OSU without CUDA, ucx_perftest without MPI): the run proves
// nothing either way.
var ErrUnfit = errors.New("the benchmark cannot measure GPU buffers as built")

// BenchSpec is one run.
type BenchSpec struct {
	Binary   string // osu_bw, osu_latency, ucx_perftest
	Args     []string
	Op       string // bw or latency
	Scope    string
	Mode     BenchMode
	Launcher []string // filled: mpirun --mca pml ucx -np 2
	// Pair: started as a ucx_perftest server and a client of it on
	// localhost (Args without -p PORT, which the run adds); no launcher.
	Pair bool
}

// BenchRun is what one run produced.
type BenchRun struct {
	Spec    BenchSpec
	Command []string
	LogFile string // "" when none was kept
	// ServerLogFile is a pair's server output beside LogFile, the
	// client's; "" otherwise.
	ServerLogFile string
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

// Specs are the runs of one scope: bandwidth and latency on the direct
// path, then bandwidth with the fallback forced.
func Specs(tool, scope string, launcher []string, forced BenchMode) []BenchSpec {
	if tool == ToolPerftestPair {
		return PairSpecs(forced)
	}
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

// PairSpecs are a ucx_perftest pair's runs inside the node: tag_bw of
// GPU buffers on the direct path, then with the fallback forced. No
// latency run: the tables of the bandwidth run show the path, and the
// pair's purpose is the path.
func PairSpecs(forced BenchMode) []BenchSpec {
	bw := []string{"-t", "tag_bw", "-m", "cuda", "-s", fmt.Sprint(PairSize), "-n", fmt.Sprint(PairIters)}
	return []BenchSpec{
		{Binary: "ucx_perftest", Args: bw, Op: "bw", Scope: IntraNode, Mode: ModeDirect, Pair: true},
		{Binary: "ucx_perftest", Args: bw, Op: "bw", Scope: IntraNode, Mode: forced, Pair: true},
	}
}

// BenchLog names a run's log in the log directory.
func BenchLog(s BenchSpec) string {
	return fmt.Sprintf("%s-%s-%s-%s.log", s.Binary, s.Op, s.Scope, s.Mode.Name)
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
