package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/perftest"
	"github.com/gdrcheck/gdrcheck/results"
)

// measureNCCL runs nccl-tests before the specs, which only compare: the
// direct sweep of every collective present, then the forced fallbacks the
// node's topology allows.
func measureNCCL(opt Options, h node.Host, ev *node.Evidence, b *baseline.Baseline) (*nccl.Measurements, error) {
	r := bench.NCCLRunner{Dir: opt.NCCLTestsDir, CPU: h.CPUTimes, Fabric: h.FabricCounters, Timeout: opt.NCCLTimeout, LogDir: opt.LogDir}
	gpusPerProcess := len(ev.GPUs)
	if opt.NCCLLauncher != "" {
		l, err := bench.ParseNodeLaunch(opt.NCCLLauncher)
		if err != nil {
			return nil, fmt.Errorf("--nccl-launcher: %w", err)
		}
		r.Launcher, gpusPerProcess = l.ForGPUs(len(ev.GPUs)), 1
	}
	if _, err := r.Lookup("all_reduce_perf"); err != nil {
		return nil, err
	}
	ctx := opt.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	exp, why := nccl.ExpectationFor(ev, 1)
	plan := nccl.DefaultPlan(gpusPerProcess, len(ev.NICs) > 0, remoteNIC(ev))
	if len(ev.GPUs) < 2 {
		// One GPU has no intra-node transport to force a fallback from,
		// and no bus to measure: the specs judge no bandwidth of it.
		plan = nccl.SmokePlan(gpusPerProcess)
	} else if b != nil {
		// Sweep up to the largest size the baseline states, so the
		// comparison is made where its numbers were measured.
		if m, ok := b.Metric(results.BusBWMetric("all_reduce")); ok {
			if s := m.Sizes(); len(s) > 0 && s[len(s)-1] > 2<<30 {
				plan.DirectArgs = []string{"-b", "8", "-e", strconv.FormatInt(s[len(s)-1], 10), "-f", "2"}
			}
		}
	}
	m := bench.MeasureNCCL(ctx, r, plan, exp, why, opt.Progress)
	m.Shape = nccl.ShapeOf(ev)
	return m, nil
}

// measureRails runs ib_write_bw in loopback through every rail NIC, with
// host memory and with the memory of the first GPU that uses the rail.
func measureRails(opt Options, h node.Host, ev *node.Evidence) ([]perftest.RailRun, error) {
	r := bench.PerftestRunner{Dir: opt.PerftestDir, Timeout: 2 * time.Minute}
	if _, err := r.Lookup("ib_write_bw"); err != nil {
		return nil, err
	}
	var rails []perftest.Rail
	seen := map[string]bool{}
	for _, g := range ev.GPUs {
		if p, ok := ev.PreferredPath(g.BusID); ok && !seen[p.NIC] && g.Index >= 0 {
			seen[p.NIC] = true
			rails = append(rails, perftest.Rail{NIC: p.NIC, GPU: g.Index, GPUBusID: g.BusID})
		}
	}
	ctx := opt.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return bench.MeasureRails(ctx, r, rails, h.FabricCounters, opt.Progress), nil
}

// railRuns turns loopback runs into results.json runs, bandwidth in Gb/s.
func railRuns(rs []perftest.RailRun, nodeName string) []results.Run {
	var out []results.Run
	for _, rr := range rs {
		run := results.Run{Suite: "fabric", Tool: rr.Result.Spec.Binary, Op: "write_bw", Mode: "loopback " + rr.Rail.NIC,
			Mem: string(rr.Mem), Unit: "Gb/s", Nodes: []string{nodeName}, Duration: rr.Result.Duration.Seconds()}
		if p := rr.Result.Result; p != nil {
			run.BusBW = p.BWAvgGbps
			if p.MsgSize > 0 {
				run.Points = []results.Point{{Size: p.MsgSize, BusBW: p.BWAvgGbps}}
			}
		}
		if rr.Result.Err != nil {
			run.Error = rr.Result.Err.Error()
		}
		if rr.Fabric != nil {
			run.Fabric = nccl.FabricSummary(*rr.Fabric)
		}
		out = append(out, run)
	}
	return out
}

// remoteNIC is a NIC far from GPU 0 (another socket, else another root
// complex), for the NCCL_IB_HCA fallback; "" when there is none.
func remoteNIC(ev *node.Evidence) string {
	if len(ev.GPUs) == 0 {
		return ""
	}
	best, rank := "", node.PathPHB.Rank()
	for _, p := range ev.Paths {
		if p.GPU == ev.GPUs[0].BusID && p.Class.Rank() > rank {
			best, rank = p.NIC, p.Class.Rank()
		}
	}
	return best
}

// ncclRuns turns the measurements into results.json runs, with each
// fallback's ratio to the direct all_reduce.
func ncclRuns(m *nccl.Measurements, nodeName string, b *baseline.Baseline) []results.Run {
	var out []results.Run
	d, haveDirect := m.Direct("all_reduce")
	for _, r := range m.Runs {
		suite := "collectives"
		if r.Mode.Name != nccl.ModeDirect.Name {
			suite = "negative"
		}
		run := r.Report(suite, m.Expectation)
		run.Nodes = []string{nodeName}
		if b != nil && suite == "collectives" && len(run.Points) > 0 {
			last := run.Points[len(run.Points)-1]
			if c, ok := b.Compare(results.BusBWMetric(run.Op), last.BusBW, last.Size); ok {
				run.Baseline = &results.Band{Profile: c.Profile, Metric: c.Metric, Expected: c.Expected, Low: c.Low, High: c.High, Direction: string(c.Direction)}
			}
		}
		if haveDirect && suite == "negative" {
			if ratio, ok := nccl.Ratio(r.Result, d.Result); ok {
				run.RatioToDirect = &ratio
			}
		}
		out = append(out, run)
	}
	return out
}

// keepLogs names in each run the log its output streamed to (the
// runner's LogDir, next to the reports), as evidence a person can read.
func keepLogs(opt Options, m *nccl.Measurements, runs []results.Run) {
	if opt.LogDir == "" {
		return
	}
	for i, r := range m.Runs {
		if r.Result.LogFile != "" {
			runs[i].Log = opt.logRef(r.Result.LogFile)
		}
	}
}

// logRef is how results.json names a log file LogDir holds.
func (opt Options) logRef(file string) string {
	ref := opt.LogRef
	if ref == "" {
		ref = filepath.Base(opt.LogDir)
	}
	return filepath.Join(ref, filepath.Base(file))
}
