package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/stopwatch"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
	"github.com/gdrcheck/gdrcheck/suites/knownbad"
	mpisuite "github.com/gdrcheck/gdrcheck/suites/mpi"

	// The spec areas register themselves.
	_ "github.com/gdrcheck/gdrcheck/suites/areas"
)

// Options configure one run on one node.
type Options struct {
	HostRoot string // "/" or a recorded tree
	// HostLabel is how the report names the root when it differs from
	// HostRoot (an archive unpacked to a temporary directory).
	HostLabel string
	Suites    []string // areas to run; empty means every area
	NodeName  string   // name in the report; default SLURMD_NODENAME, then the host name
	Config    suites.Config
	// Sources overrides the NVML source (tests); nil picks the live
	// library on "/" and the recording for a tree.
	Sources  *node.Sources
	Progress io.Writer // the benchmarks' commentary; nil discards it
	Verbose  bool      // Ginkgo's report, too (suites.RunOptions.Verbose)
	Timeout  time.Duration
	// NCCLTestsDir holds the nccl-tests binaries; empty searches PATH.
	NCCLTestsDir string
	// NCCLTimeout bounds each nccl-tests run.
	NCCLTimeout time.Duration
	// NCCLLauncher starts the nccl-tests processes, e.g. "mpirun -np
	// {gpus}" for one process per GPU ({gpus} is replaced); empty runs one
	// process driving every GPU.
	NCCLLauncher string
	// LogDir receives each benchmark's raw output; empty keeps none.
	LogDir string
	// LogRef is what results.json calls LogDir, beside results.json
	// ("logs"), where LogDir is a staging directory committed under that
	// name with the reports; empty: LogDir's own base name.
	LogRef string
	// PerftestDir holds ib_write_bw & co.; empty searches PATH.
	PerftestDir string
	// MPIBenchDir holds osu_bw, osu_latency or ucx_perftest; empty
	// searches PATH. MPILauncher starts an intra-node run's two ranks
	// ({ranks}; empty: DefaultMPILauncher), MPIInternodeLauncher an
	// inter-node run's, one here and one on another node (empty: none).
	MPIBenchDir          string
	MPILauncher          string
	MPIInternodeLauncher string
	// UCXPerftest is the ucx_perftest run as a server and client pair
	// inside the node (--ucx-perftest); empty: one found as MPIBenchDir's
	// tools are, where OSU is not there.
	UCXPerftest string
	// MPITimeout bounds each benchmark run; zero is five minutes.
	MPITimeout time.Duration
	// MPIFactsTimeout bounds each of the mpi suite's build-facts
	// commands on the live host (ompi_info, ucx_info, mpichversion);
	// zero is a minute.
	MPIFactsTimeout time.Duration
	// Ctx cancels the benchmarks (SIGINT, SIGTERM); nil never cancels.
	Ctx context.Context
	// BaselineDir holds the baseline YAML files; empty uses the ones
	// shipped with gdrcheck.
	BaselineDir string
	// Scaling configures the allocation-level run of the scaling area.
	Scaling ScalingOptions
	// GPUs limits the run to these GPUs and their rail NICs (a prolog's
	// job: SLURM_JOB_GPUS, host indices or UUIDs, comma-separated);
	// empty is every GPU. A GPU the list names that the node does not
	// show is an error, a GPUSelectionError.
	GPUs string
	// Whole, when set, sees the whole node's evidence before GPUs
	// scopes it (the deep cache's key names every NIC's firmware); it
	// must not keep ev.
	Whole   func(h node.Host, ev *node.Evidence)
	Version string
	Args    []string
}

// Run collects the node's evidence and runs the specs. It returns results
// even when the node cannot be evaluated, or only in part (NVML, libcuda or
// libibverbs could not be used): the report says why, and the exit code is
// 2.
func Run(opt Options) (*results.Results, *node.Evidence, error) {
	if err := suites.CheckLabels(opt.Suites); err != nil {
		return nil, nil, err
	}
	if len(opt.Suites) == 0 {
		opt.Suites = suites.Defaults()
	}
	store, err := loadBaselines(opt.BaselineDir)
	if err != nil {
		return nil, nil, err
	}
	if slices.Contains(opt.Suites, suites.ScalingArea) {
		res, err := runScaling(opt, store)
		return res, nil, err
	}
	res := &results.Results{
		Schema:  results.Schema,
		Tool:    results.Tool{Version: opt.Version, Args: opt.Args, Suites: opt.Suites},
		Started: time.Now().UTC(),
	}
	n := results.Node{Started: res.Started}
	w := stopwatch.Start()
	var ev *node.Evidence
	// /dev before NVML runs: it creates device nodes it misses.
	var devs node.DeviceView
	if slices.Contains(opt.Suites, "container") {
		devs = node.ObserveDevices()
	}
	h, err := node.Open(opt.HostRoot)
	w.Lap("open the host root")
	if err != nil {
		hostUnreadable(opt, &n, err)
	} else {
		if ev, err = collectEvidence(opt, h, devs, w); err != nil {
			return nil, nil, err
		}
		r := &nodeRun{opt: opt, store: store, h: h, ev: ev, n: &n, w: w,
			sc: &suites.Context{Evidence: ev, Config: opt.Config}}
		if err := r.run(); err != nil {
			return nil, nil, err
		}
	}
	n.Steps = steps(w)
	n.Finished = time.Now().UTC()
	res.Finished = n.Finished
	res.Nodes = []results.Node{n}
	return res, ev, nil
}

// GPUSelectionError says the job's GPU list names a GPU this node does
// not show: one lost from the bus, or a gres.conf that does not match
// the node.
type GPUSelectionError struct {
	List string // as given
	Err  error
}

func (e *GPUSelectionError) Error() string {
	return fmt.Sprintf("job GPUs %s: %v", e.List, e.Err)
}

func (e *GPUSelectionError) Unwrap() error { return e.Err }

// hostUnreadable makes n the entry of a node whose host root cannot be
// opened: unevaluable, saying why.
func hostUnreadable(opt Options, n *results.Node, err error) {
	n.Name = NodeName(opt.NodeName, "")
	n.Status = results.NodeUnevaluable
	// Named as the user gave it, not as the temporary directory an
	// archive was unpacked to.
	n.Reason = err.Error()
	if opt.HostLabel != "" {
		n.Reason = strings.ReplaceAll(n.Reason, opt.HostRoot, opt.HostLabel)
	}
}

// collectEvidence reads the host: the node's evidence, the GPUDirect
// probe where a suite needs it, and the container's view where the
// container suite runs.
func collectEvidence(opt Options, h node.Host, devs node.DeviceView, w *stopwatch.Watch) (*node.Evidence, error) {
	src := node.DefaultSources(h)
	if opt.Sources != nil {
		src = *opt.Sources
	}
	probe := suites.NeedProbe(opt.Suites)
	if probe && h.Live() && opt.Sources == nil {
		// cuInit runs beside the reads below, not after them.
		node.WarmCUDA()
	}
	w.Lap("the NVML and GPUDirect sources")
	ev := node.Collect(h, src)
	for _, l := range ev.Timings.Laps {
		w.Add("evidence: "+l.Name, l.Took)
	}
	w.Lap("read the node's evidence (its evidence: steps)")
	if opt.Whole != nil && ev.Fatal() == nil {
		opt.Whole(h, ev)
	}
	var scope []string
	if opt.GPUs != "" && ev.Fatal() == nil {
		var err error
		if scope, err = ev.SelectGPUs(opt.GPUs); err != nil {
			return nil, &GPUSelectionError{List: opt.GPUs, Err: err}
		}
		ev.Scope(scope)
	}
	if probe && scope != nil {
		ev.ProbeJobGPUs(src.GPUDirect, src.GPUDirectErr)
		w.Lap("GPUDirect probe of the job's GPUs: libcuda and libibverbs")
	} else if probe {
		ev.ProbeGPUDirect(src.GPUDirect, src.GPUDirectErr)
		w.Lap("GPUDirect probe: libcuda and libibverbs")
	}
	if scope != nil {
		ev.Scope(scope) // a recording answers for every GPU
	}
	// Run alone, the container suite judges a container given no GPU
	// (NVML unreachable there) instead of calling the node unevaluable.
	alone := len(opt.Suites) == 1
	if slices.Contains(opt.Suites, "container") && (ev.Fatal() == nil || alone) {
		c, err := h.CollectContainer(ev, devs)
		if err != nil {
			return nil, err
		}
		ev.Container = &c
		if alone {
			ev.KeepWithoutGPUs()
		}
		w.Lap("the container's view")
	}
	ev.Relabel(opt.HostLabel)
	return ev, nil
}

// nodeRun is one node's run once its evidence is read: the benchmarks,
// the baseline, the suites, and the node's entry they fill in.
type nodeRun struct {
	opt   Options
	store *baseline.Store
	h     node.Host
	ev    *node.Evidence
	sc    *suites.Context
	n     *results.Node
	w     *stopwatch.Watch // the steps' wall times
}

// run fills in the node's entry: its facts, the benchmarks' runs and
// the suites' verdicts.
func (r *nodeRun) run() error {
	ev, n := r.ev, r.n
	n.Name = NodeName(r.opt.NodeName, ev.Host.Hostname)
	n.Facts, n.GPUs = facts(ev), gpus(ev)
	if b, err := json.Marshal(ev); err == nil {
		n.Evidence = b
	}
	r.w.Lap("facts and the evidence's JSON")
	// Matched before the runs to size them, and again after, once the
	// NCCL version is known.
	r.match("")
	// Before any benchmark: a node in a known-bad cell hears why its
	// numbers will be what they are before it waits for them.
	if ev.Fatal() == nil {
		printKnownBad(r.opt.Progress, knownbad.FromEvidence(ev, ""))
	}
	r.w.Lap("baseline match and known-bad versions")
	r.benchmarks()
	r.w.Lap("benchmarks")
	if b := r.sc.Baseline; b != nil {
		n.Profile = b.Profile.Name
		n.Facts = append(n.Facts, results.Fact{Name: "profile", Value: n.Profile})
	}
	return r.judge()
}

// match matches the baseline for the node and the NCCL that ran ("":
// none yet).
func (r *nodeRun) match(ncclVer string) {
	sc := r.sc
	sc.Baseline, sc.BaselineErr = r.store.Match(BaselineFacts(r.ev, ncclVer))
	if p, ok := r.ev.Unusable("nvml"); ok {
		// The profile's GPU model and interconnect are NVML's:
		// without it a match would be a guess.
		sc.Baseline, sc.BaselineErr = nil, fmt.Errorf("no baseline can be matched: the GPU model and interconnect profiles are matched by come from NVML, which could not be used (%s)", p.Message)
		sc.BaselineUnknowable = true
	}
}

// benchmarks runs what the selected areas compare: the MPI benchmarks,
// nccl-tests and the rails' perftest, each only on a node whose evidence
// allows it. The MPI runs go last in the entry.
func (r *nodeRun) benchmarks() {
	opt, h, ev, sc, n := r.opt, r.h, r.ev, r.sc, r.n
	// Before any benchmark, and on a node whose evidence failed too:
	// the build facts need no GPU.
	// Cheap (no command runs): whom a missing gdrdrv would slow.
	sc.UCXOrMPI, sc.UCXOrMPILooked = mpi.Installed(h.Root(), h.Live(), bench.BuildFacts{}), true
	var mpiBench []results.Run
	if slices.Contains(opt.Suites, "mpi") {
		facts := bench.BuildFacts{Ctx: opt.Ctx, Timeout: opt.MPIFactsTimeout}
		if opt.UCXPerftest != "" {
			facts.UCXDir = filepath.Dir(opt.UCXPerftest)
		}
		f := mpi.Collect(h.Root(), h.Live(), h.GDRCopy(), facts)
		sc.MPI = &f
		printMisbuilds(opt.Progress, f, nicNames(ev))
		if ev.Fatal() == nil {
			sc.MPIBench = measureMPI(opt, ev, f)
			mpiBench = mpiRuns(opt, sc.MPIBench, f, n.Name)
		}
	}
	r.collectives()
	if slices.Contains(opt.Suites, "fabric") && len(ev.NICs) > 0 && ev.Fatal() == nil {
		sc.Perftest, sc.PerftestErr = measureRails(opt, h, ev)
		n.Runs = append(n.Runs, railRuns(sc.Perftest, n.Name)...)
	}
	n.Runs = append(n.Runs, mpiBench...)
}

// collectives runs nccl-tests where a selected area needs them and
// libcuda can be used, and rematches the baseline by the NCCL that ran.
func (r *nodeRun) collectives() {
	opt, ev, sc, n := r.opt, r.ev, r.sc, r.n
	if p, ok := ev.Unusable("libcuda"); ok && suites.NeedNCCL(opt.Suites) {
		sc.NCCLErr = fmt.Errorf("nccl-tests not run: libcuda could not be used, so no CUDA program can (%s)", p.Message)
		sc.NCCLBlocked = true
		return
	}
	if !suites.NeedNCCL(opt.Suites) || ev.Fatal() != nil {
		return
	}
	sc.NCCL, sc.NCCLErr = measureNCCL(opt, r.h, ev, sc.Baseline)
	if sc.NCCL == nil {
		return
	}
	r.match(sc.NCCL.NCCLVersion())
	// What ran wins over the library the loader would pick.
	if v := sc.NCCL.NCCLVersion(); v != "" {
		n.Facts = setFact(n.Facts, "nccl", v)
	}
	n.Runs = ncclRuns(sc.NCCL, n.Name, sc.Baseline)
	keepLogs(opt, sc.NCCL, n.Runs)
}

// judge runs the suites over the context and sets the node's status.
func (r *nodeRun) judge() error {
	opt, n := r.opt, r.n
	var err error
	n.Suites, err = suites.Run(r.sc, suites.RunOptions{Ctx: opt.Ctx, Areas: opt.Suites, Timeout: opt.Timeout, Progress: opt.Progress, Verbose: opt.Verbose})
	r.w.Lap("suites")
	if err != nil {
		return err
	}
	// A source that could not be used leaves the node judged only in
	// part: its verdicts are reported, and it exits 2.
	n.Status = results.NodeEvaluated
	if err := r.ev.Incomplete(); err != nil {
		n.Status = results.NodeUnevaluable
		n.Reason = err.Error()
	}
	finish(opt, n)
	return nil
}

// finish completes a judged node: interrupted where a signal stopped it,
// and its actions settled (results.Node.Settle) before any view renders
// it.
func finish(opt Options, n *results.Node) {
	interrupted(opt, n)
	n.Settle()
}

// interrupted marks a node whose run a signal stopped: its report holds
// what ran, and it is not a pass (exit 2).
func interrupted(opt Options, n *results.Node) {
	if opt.Ctx == nil || opt.Ctx.Err() == nil {
		return
	}
	why := fmt.Sprintf("%v before every spec ran: the report holds what ran, the rest is skipped", context.Cause(opt.Ctx))
	if n.Reason != "" {
		why += "; " + n.Reason
	}
	n.Status, n.Reason = results.NodeInterrupted, why
}

// printKnownBad tells the progress writer of every known-bad cell the
// facts are in, with its source and fix, and where the NCCL came from;
// the kernel suite's spec judges it.
func printKnownBad(w io.Writer, f knownbad.Facts) {
	if w == nil {
		return
	}
	from := ""
	if f.NCCLFrom != "" {
		from = ", NCCL from " + f.NCCLFrom
	}
	for _, h := range knownbad.Match(f) {
		fmt.Fprintf(w, "known-bad combination (%s%s): %s\n", h.Rule.Severity, from, h)
	}
}

// printMisbuilds tells the progress writer, before any benchmark, each
// MPI or UCX misbuild the mpi suite will fail and why it could not look.
// What ompi_info printed is the node's: control characters in it are
// shown as '?', never sent to the terminal.
func printMisbuilds(w io.Writer, f mpi.Facts, nics []string) {
	if w == nil {
		return
	}
	for _, c := range []struct {
		what string
		c    mpisuite.Check
	}{{"MPI", mpisuite.MPICUDA(f)}, {"MPICH", mpisuite.MPICHCUDA(f)}, {"UCX", mpisuite.UCXCUDA(f)}, {"gdr_copy", mpisuite.GDRCopy(f)}, {"UCX RDMA", mpisuite.UCXRDMA(f, nics)}} {
		switch {
		case c.c.Failed != "":
			fmt.Fprintf(w, "%s misbuild: %s\n", c.what, printable(c.c.Failed))
		case c.c.Unknown != "":
			fmt.Fprintf(w, "%s not judged: %s\n", c.what, printable(c.c.Unknown))
		}
	}
}

func nicNames(ev *node.Evidence) []string {
	var out []string
	for _, n := range ev.NICs {
		out = append(out, n.Name)
	}
	return out
}

func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
}

// steps are the watch's laps as results.json holds them.
func steps(w *stopwatch.Watch) []results.Step {
	out := make([]results.Step, 0, len(w.Laps))
	for _, l := range w.Laps {
		out = append(out, results.Step{Name: l.Name, Duration: l.Took.Seconds()})
	}
	return out
}
