// Package runner runs the selected spec areas in-process against one node's
// evidence and turns Ginkgo's report into results.json's node entry. One
// gdrcheck process runs Ginkgo once, as RunSpecs allows.
package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/perftest"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"

	// The spec areas register themselves.
	_ "github.com/gdrcheck/gdrcheck/suites/bar1"
	_ "github.com/gdrcheck/gdrcheck/suites/collectives"
	_ "github.com/gdrcheck/gdrcheck/suites/container"
	_ "github.com/gdrcheck/gdrcheck/suites/fabric"
	_ "github.com/gdrcheck/gdrcheck/suites/kernel"
	_ "github.com/gdrcheck/gdrcheck/suites/negative"
	_ "github.com/gdrcheck/gdrcheck/suites/topology"
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
	Progress io.Writer // Ginkgo's running commentary; nil discards it
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
	// PerftestDir holds ib_write_bw & co.; empty searches PATH.
	PerftestDir string
	// Ctx cancels the benchmarks (SIGINT, SIGTERM); nil never cancels.
	Ctx context.Context
	// BaselineDir holds the baseline YAML files; empty uses the ones
	// shipped with gdrcheck.
	BaselineDir string
	Version     string
	Args        []string
}

// Run collects the node's evidence and runs the specs. It returns results
// even when the node cannot be evaluated: the report says why, and the exit
// code is 2.
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
	res := &results.Results{
		Schema:  results.Schema,
		Tool:    results.Tool{Version: opt.Version, Args: opt.Args, Suites: opt.Suites},
		Started: time.Now().UTC(),
	}
	n := results.Node{Started: res.Started}
	var ev *node.Evidence
	// /dev before NVML runs: it creates device nodes it misses.
	var devs node.DeviceView
	if slices.Contains(opt.Suites, "container") {
		devs = node.ObserveDevices()
	}
	h, err := node.Open(opt.HostRoot)
	if err != nil {
		n.Name = nodeName(opt.NodeName, "")
		n.Status = results.NodeUnevaluable
		n.Reason = err.Error()
	} else {
		src := node.DefaultSources(h)
		if opt.Sources != nil {
			src = *opt.Sources
		}
		ev = node.Collect(h, src)
		if suites.NeedProbe(opt.Suites) {
			ev.ProbeGPUDirect(src.GPUDirect, src.GPUDirectErr)
		}
		if slices.Contains(opt.Suites, "container") && ev.Fatal() == nil {
			c, err := h.CollectContainer(ev, devs)
			if err != nil {
				return nil, nil, err
			}
			ev.Container = &c
		}
		ev.Relabel(opt.HostLabel)
		n.Name = nodeName(opt.NodeName, ev.Host.Hostname)
		n.Facts = facts(ev)
		if b, err := json.Marshal(ev); err == nil {
			n.Evidence = b
		}
		sc := &suites.Context{Evidence: ev, Config: opt.Config}
		// Matched before the runs to size them, and again after, once
		// the NCCL version is known.
		sc.Baseline, sc.BaselineErr = store.Match(BaselineFacts(ev, ""))
		if suites.NeedNCCL(opt.Suites) && ev.Fatal() == nil {
			sc.NCCL, sc.NCCLErr = measureNCCL(opt, h, ev, sc.Baseline)
			if sc.NCCL != nil {
				sc.Baseline, sc.BaselineErr = store.Match(BaselineFacts(ev, ncclVersion(sc.NCCL)))
				n.Runs = ncclRuns(sc.NCCL, n.Name, sc.Baseline)
				if err := keepLogs(opt.LogDir, sc.NCCL, n.Runs); err != nil {
					return nil, nil, err
				}
			}
		}
		if slices.Contains(opt.Suites, "fabric") && len(ev.NICs) > 0 && ev.Fatal() == nil {
			sc.Perftest, sc.PerftestErr = measureRails(opt, h, ev)
			n.Runs = append(n.Runs, railRuns(sc.Perftest, n.Name)...)
		}
		if sc.Baseline != nil {
			n.Profile = sc.Baseline.Profile.Name
			n.Facts = append(n.Facts, results.Fact{Name: "profile", Value: n.Profile})
		}
		suites.SetContext(sc)
		rep := runSpecs(opt)
		n.Suites, err = convert(rep, opt.Suites)
		if err != nil {
			return nil, nil, err
		}
		n.Status = results.NodeEvaluated
		if fe := ev.Fatal(); fe != nil {
			n.Status = results.NodeUnevaluable
			n.Reason = fe.Error()
		}
	}
	n.Finished = time.Now().UTC()
	res.Finished = n.Finished
	res.Nodes = []results.Node{n}
	return res, ev, nil
}

// measureNCCL runs nccl-tests before the specs, which only compare: the
// direct sweep of every collective present, then the forced fallbacks the
// node's topology allows.
func measureNCCL(opt Options, h node.Host, ev *node.Evidence, b *baseline.Baseline) (*nccl.Measurements, error) {
	r := nccl.Runner{Dir: opt.NCCLTestsDir, CPU: h.CPUTimes, Fabric: h.FabricCounters, Timeout: opt.NCCLTimeout}
	gpusPerProcess := len(ev.GPUs)
	if opt.NCCLLauncher != "" {
		l := strings.ReplaceAll(opt.NCCLLauncher, "{gpus}", strconv.Itoa(len(ev.GPUs)))
		r.Launcher, gpusPerProcess = strings.Fields(l), 1
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
	// Sweep up to the largest size the baseline states, so the
	// comparison is made where its numbers were measured.
	if b != nil {
		if m, ok := b.Metric(results.BusBWMetric("all_reduce")); ok {
			if s := m.Sizes(); len(s) > 0 && s[len(s)-1] > 2<<30 {
				plan.DirectArgs = []string{"-b", "8", "-e", strconv.FormatInt(s[len(s)-1], 10), "-f", "2"}
			}
		}
	}
	return nccl.Measure(ctx, r, plan, exp, why, opt.Progress), nil
}

// measureRails runs ib_write_bw in loopback through every rail NIC, with
// host memory and with the memory of the first GPU that uses the rail.
func measureRails(opt Options, h node.Host, ev *node.Evidence) ([]perftest.RailRun, error) {
	r := perftest.Runner{Dir: opt.PerftestDir, Timeout: 2 * time.Minute}
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
	return perftest.MeasureRails(ctx, r, rails, h.FabricCounters, opt.Progress), nil
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
				run.Baseline = &results.Band{Profile: c.Profile, Metric: c.Metric, Expected: c.Expected, Low: c.Low, High: c.High}
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

// keepLogs writes each run's raw output next to the reports, as evidence a
// person can read, and names the file in the run.
func keepLogs(dir string, m *nccl.Measurements, runs []results.Run) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	for i, r := range m.Runs {
		name := r.Op + "_perf-" + r.Mode.Name + ".log"
		if err := results.WriteFile(filepath.Join(dir, name), r.Result.Output); err != nil {
			return err
		}
		runs[i].Log = filepath.Join(filepath.Base(dir), name)
	}
	return nil
}

func loadBaselines(dir string) (*baseline.Store, error) {
	if dir == "" {
		return baseline.Shipped()
	}
	return baseline.Load(dir)
}

// BaselineFacts describe the node the way baseline profiles do; ncclVer
// is known only once a collective ran.
func BaselineFacts(ev *node.Evidence, ncclVer string) baseline.Facts {
	f := baseline.Facts{GPUsPerNode: len(ev.GPUs), Driver: ev.Host.DriverVersion, NCCL: ncclVer}
	if ev.Host.CUDADriverVersion > 0 {
		f.CUDA = baseline.CUDAVersion(ev.Host.CUDADriverVersion)
	}
	links := -1
	for i, g := range ev.GPUs {
		if i == 0 {
			f.GPUModel, f.PCIDeviceID, f.PCIeGen = g.Name, g.PCIDeviceID, g.PCIe.MaxGen
			links = g.NVLinks.Up
		} else if g.NVLinks.Up != links {
			links = -1
		}
	}
	switch {
	case links > 0:
		f.Interconnect = fmt.Sprintf("NV%d", links)
	case links == 0:
		f.Interconnect = "PCIe"
	}
	// The rail NICs, not a front-end NIC no GPU prefers.
	if len(ev.NICs) == 0 {
		f.NICModel = baseline.NoNIC
	}
	for _, g := range ev.GPUs {
		if p, ok := ev.PreferredPath(g.BusID); ok {
			if n, ok := ev.NIC(p.NIC); ok {
				f.NICModel = baseline.NICModel(n.HCAType)
				for _, port := range n.Ports {
					f.NICRateGbps = max(f.NICRateGbps, port.RateGbps)
				}
			}
		}
	}
	return f
}

func ncclVersion(m *nccl.Measurements) string {
	for _, r := range m.Runs {
		if r.Result.Log != nil && r.Result.Log.NCCLVersion != "" {
			return r.Result.Log.NCCLVersion
		}
		if r.Result.Tests != nil && r.Result.Tests.NCCLVersion != "" {
			return r.Result.Tests.NCCLVersion
		}
	}
	return ""
}

func nodeName(flag, hostname string) string {
	for _, n := range []string{flag, os.Getenv("SLURMD_NODENAME"), hostname} {
		if n != "" {
			return n
		}
	}
	h, _ := os.Hostname()
	return h
}

// facts are the node properties Jenkins shows beside the suite.
func facts(ev *node.Evidence) []results.Fact {
	f := []results.Fact{{Name: "host_root", Value: ev.Host.Root}}
	add := func(k, v string) {
		if v != "" {
			f = append(f, results.Fact{Name: k, Value: v})
		}
	}
	models := map[string]int{}
	var order []string
	for _, g := range ev.GPUs {
		name := g.Name
		if name == "" {
			name = "NVIDIA " + g.PCIDeviceID
		}
		if models[name] == 0 {
			order = append(order, name)
		}
		models[name]++
	}
	var gm []string
	for _, m := range order {
		gm = append(gm, fmt.Sprintf("%d x %s", models[m], m))
	}
	add("gpu_model", strings.Join(gm, ", "))
	add("gpus", fmt.Sprint(len(ev.GPUs)))
	add("rdma_nics", fmt.Sprint(len(ev.NICs)))
	add("driver", ev.Host.DriverVersion)
	if ev.Host.CUDADriverVersion > 0 {
		add("cuda_driver", fmt.Sprintf("%d.%d", ev.Host.CUDADriverVersion/1000, ev.Host.CUDADriverVersion%1000/10))
	}
	add("kernel", ev.Host.Kernel)
	add("iommu", ev.IOMMU.Mode)
	add("driver_flavour", ev.Kernel.DriverFlavour)
	if ev.Probed {
		add("mechanism", ev.Mechanism().Mechanism)
	}
	return f
}

// fakeT is the GinkgoTestingT of a run outside `go test`.
type fakeT struct{ failed bool }

func (t *fakeT) Fail() { t.failed = true }

var lastReport types.Report

// The report is taken from inside the suite, the way Kubernetes' e2e
// framework writes its JUnit.
var _ = ginkgo.ReportAfterSuite("gdrcheck results", func(r ginkgo.Report) {
	lastReport = r
})

func runSpecs(opt Options) types.Report {
	sc := types.NewDefaultSuiteConfig()
	sc.LabelFilter = strings.Join(opt.Suites, " || ")
	sc.RandomSeed = 1 // the order specs are written in
	if opt.Timeout > 0 {
		sc.Timeout = opt.Timeout
	}
	rc := types.NewDefaultReporterConfig()
	rc.NoColor = true
	rc.Succinct = true
	w := opt.Progress
	if w == nil {
		w = io.Discard
	}
	formatter.ColorableStdOut = w
	ginkgo.RunSpecs(&fakeT{}, "gdrcheck", sc, rc)
	// Succinct output ends without a newline.
	fmt.Fprintln(w)
	return lastReport
}

// convert turns Ginkgo's report into suites of specs: one suite per area
// selected, names without labels or node types, skipped kept apart, and a
// failed setup node as a failed case of its own.
func convert(r types.Report, areas []string) ([]results.Suite, error) {
	selected := map[string]bool{}
	for _, a := range areas {
		selected[a] = true
	}
	bySuite := map[string]*results.Suite{}
	var setup []results.Spec
	var setupFailed string
	for _, sr := range r.SpecReports {
		switch sr.LeafNodeType {
		case types.NodeTypeBeforeSuite, types.NodeTypeSynchronizedBeforeSuite, types.NodeTypeAfterSuite, types.NodeTypeSynchronizedAfterSuite:
			if sr.State.Is(types.SpecStateFailureStates) {
				sp := spec(sr)
				sp.Name = sr.LeafNodeType.String() + ": node evidence"
				sp.Setup = true
				setup = append(setup, sp)
				setupFailed = sp.Message
			}
			continue
		case types.NodeTypeIt:
		default:
			continue
		}
		if len(sr.ContainerHierarchyTexts) == 0 {
			continue
		}
		area := sr.ContainerHierarchyTexts[0]
		if !selected[area] {
			continue
		}
		s, ok := bySuite[area]
		if !ok {
			s = &results.Suite{Name: area}
			bySuite[area] = s
		}
		sp := spec(sr)
		if sp.State == results.StateSkipped && sp.Message == "" && setupFailed != "" {
			sp.Message = "not run: " + setupFailed
		}
		s.Specs = append(s.Specs, sp)
	}
	var out []results.Suite
	if len(setup) > 0 {
		out = append(out, results.Suite{Name: "setup", Specs: setup})
	}
	for _, a := range areas {
		s, ok := bySuite[a]
		if !ok {
			continue
		}
		seen := map[string]bool{}
		for _, sp := range s.Specs {
			if seen[sp.Name] {
				return nil, fmt.Errorf("two specs in %s are named %q: names must be unique for JUnit history", a, sp.Name)
			}
			seen[sp.Name] = true
		}
		sort.SliceStable(s.Specs, func(i, j int) bool { return s.Specs[i].Name < s.Specs[j].Name })
		out = append(out, *s)
	}
	return out, nil
}

func spec(sr types.SpecReport) results.Spec {
	name := sr.LeafNodeText
	if len(sr.ContainerHierarchyTexts) > 1 {
		name = strings.Join(append(append([]string{}, sr.ContainerHierarchyTexts[1:]...), sr.LeafNodeText), " ")
	}
	sp := results.Spec{
		Name:     name,
		Duration: sr.RunTime.Seconds(),
		State:    state(sr.State),
	}
	if sr.State != types.SpecStatePassed {
		sp.Message = sr.Failure.Message
		if sr.State.Is(types.SpecStateFailureStates) {
			sp.Location = sr.Failure.Location.String()
		}
	}
	if sr.State.Is(types.SpecStateFailureStates) {
		sp.Output = sr.CapturedGinkgoWriterOutput + sr.CapturedStdOutErr
	}
	for _, e := range sr.ReportEntries {
		if e.Name != suites.MetricEntry {
			continue
		}
		if m, ok := e.Value.GetRawValue().(results.Metric); ok {
			sp.Metrics = append(sp.Metrics, m)
		}
	}
	for _, e := range sr.ReportEntries {
		if e.Name == suites.NoteEntry {
			if s, ok := e.Value.GetRawValue().(string); ok {
				sp.Notes = append(sp.Notes, s)
			}
		}
	}
	return sp
}

func state(s types.SpecState) string {
	switch s {
	case types.SpecStatePassed:
		return results.StatePassed
	case types.SpecStateSkipped:
		return results.StateSkipped
	case types.SpecStatePending:
		return results.StatePending
	case types.SpecStateFailed:
		return results.StateFailed
	}
	return s.String() // panicked, interrupted, aborted, timedout
}
