package runner

import (
	"context"
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/osu"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/results"
	mpisuite "github.com/gdrcheck/gdrcheck/suites/mpi"
)

// DefaultMPILauncher starts the two ranks of an intra-node run.
const DefaultMPILauncher = "mpirun --mca pml ucx -np {ranks}"

// measureMPI runs the mpi suite's benchmarks, which the cluster provides
// (gdrcheck ships none), once the build facts show no misbuild: inside
// the node between two GPUs where it has two, across nodes where a
// launcher for that was given and the node has RDMA NICs.
func measureMPI(opt Options, ev *node.Evidence, f mpi.Facts) *mpi.Benchmarks {
	b := &mpi.Benchmarks{InterNode: opt.MPIInternodeLauncher != ""}
	r := bench.MPIRunner{Dir: opt.MPIBenchDir, Timeout: opt.MPITimeout, LogDir: opt.LogDir, Perftest: opt.UCXPerftest}
	tool, toolErr := r.Tool()
	// A ucx_perftest pair is two processes, which one GPU can serve:
	// cuda_ipc works between processes on the same GPU.
	pair := toolErr == nil && tool == mpi.ToolPerftestPair
	intra, inter := len(ev.GPUs) >= 2 || pair && len(ev.GPUs) == 1, b.InterNode && len(ev.NICs) > 0
	if !intra && !inter {
		return b // the specs say why neither applies
	}
	if p, ok := ev.Unusable("libcuda"); ok {
		b.Err = fmt.Errorf("not run: libcuda could not be used, so no CUDA program can (%s)", p.Message)
		return b
	}
	if why := mpisuite.BenchBlocker(f, pair && !inter); why != "" {
		b.Blocked = why
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "mpi: benchmarks not run: %s\n", printable(why))
		}
		return b
	}
	if toolErr != nil {
		b.Err = toolErr
		return b
	}
	b.Tool = tool
	var specs []mpi.BenchSpec
	add := func(tool, flag, tmpl, scope string, forced mpi.BenchMode) error {
		l, err := bench.ParseMPILaunch(tmpl)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		specs = append(specs, mpi.Specs(tool, scope, mpi.FillRanks(l), forced)...)
		return nil
	}
	if intra {
		tmpl := opt.MPILauncher
		if tmpl == "" {
			tmpl = DefaultMPILauncher // unused by a pair
		}
		if err := add(tool, "--mpi-launcher", tmpl, mpi.IntraNode, mpi.ModeNoCUDAIPC); err != nil {
			b.Err = err
			return b
		}
	}
	if inter {
		across := tool
		if pair { // across nodes ucx_perftest runs under the launcher
			across = mpi.ToolPerftest
		}
		if err := add(across, "--mpi-internode-launcher", opt.MPIInternodeLauncher, mpi.InterNode, mpi.ModeNoGDR); err != nil {
			b.Err = err
			return b
		}
	}
	ctx := opt.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	b.Runs = bench.MeasureMPI(ctx, r, specs, opt.Progress)
	return b
}

// mpiRuns turns the benchmark runs into results.json runs: bandwidth in
// GB/s at the largest size, the path UCX's tables show, and the CPU per
// GB of an intra-node run.
func mpiRuns(opt Options, b *mpi.Benchmarks, f mpi.Facts, nodeName string) []results.Run {
	if b == nil {
		return nil
	}
	info, haveInfo := f.UCXInfoParsed()
	var out []results.Run
	for _, r := range b.Runs {
		run := results.Run{Suite: "mpi", Tool: r.Spec.Binary, Op: r.Spec.Op + " " + r.Spec.Scope, Mode: r.Spec.Mode.Name,
			Env: r.Spec.Mode.Env, Nodes: []string{nodeName}, Ranks: 2, CPUSeconds: r.CPUSeconds, Duration: r.Duration.Seconds()}
		if r.Err != nil {
			run.Error = r.Err.Error()
		}
		if r.LogFile != "" {
			run.Log = opt.logRef(r.LogFile)
		}
		if bw, size, ok := r.BandwidthGBs(); ok {
			run.BusBW = bw
			run.Points = append(run.Points, results.Point{Size: size, BusBW: bw})
		}
		if lat, size, ok := r.LatencyUS(); ok {
			run.Points = append(run.Points, results.Point{Size: size, TimeUS: lat})
		}
		if r.OSU != nil && len(r.OSU.Rows) > 1 {
			run.Points = osuPoints(r.OSU) // the whole curve, for the chart
		}
		if r.UCX != nil {
			var ip *ucx.Info
			if haveInfo {
				ip = &info
			}
			v := mpisuite.JudgeLog(r.UCX, ip)
			run.PathVerdict, run.Reasons = v.Outcome, append(v.Reasons, v.Hints...)
			run.Transports = map[string]int{}
			for _, t := range v.Transfers {
				if t.GPU {
					run.Transports[t.Path]++
				}
			}
			run.Transport = mpisuite.Dominant(v)
		}
		if d, ok := b.Find(r.Spec.Op, r.Spec.Scope, mpi.ModeDirect.Name); ok && r.Spec.Mode.Name != mpi.ModeDirect.Name {
			if ratio, ok := mpi.Ratio(r, d); ok {
				run.RatioToDirect = &ratio
			}
		}
		if c, ok := run.CPUPerGB(); ok {
			run.CPUSecondsPerGB = &c
		}
		out = append(out, run)
	}
	return out
}

// osuPoints is every row an OSU benchmark printed: MB/s (10^6 bytes) as
// GB/s, or a latency in microseconds.
func osuPoints(o *osu.Result) []results.Point {
	pts := make([]results.Point, 0, len(o.Rows))
	for _, row := range o.Rows {
		p := results.Point{Size: row.Size}
		switch o.Unit {
		case "MB/s":
			p.BusBW = row.Value / 1000
		case "us":
			p.TimeUS = row.Value
		}
		pts = append(pts, p)
	}
	return pts
}
