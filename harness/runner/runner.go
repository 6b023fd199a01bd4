// Package runner runs the selected spec areas in-process against one node's
// evidence and turns Ginkgo's report into results.json's node entry. One
// gdrcheck process runs Ginkgo once, as RunSpecs allows.
package runner

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/suites"

	// The spec areas register themselves.
	_ "github.com/gdrcheck/gdrcheck/suites/bar1"
	_ "github.com/gdrcheck/gdrcheck/suites/kernel"
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
	Version  string
	Args     []string
}

// Run collects the node's evidence and runs the specs. It returns results
// even when the node cannot be evaluated: the report says why, and the exit
// code is 2.
func Run(opt Options) (*reports.Results, *node.Evidence, error) {
	if err := suites.CheckLabels(opt.Suites); err != nil {
		return nil, nil, err
	}
	if len(opt.Suites) == 0 {
		opt.Suites = suites.Labels()
	}
	res := &reports.Results{
		Schema:  reports.Schema,
		Tool:    reports.Tool{Version: opt.Version, Args: opt.Args, Suites: opt.Suites},
		Started: time.Now().UTC(),
	}
	n := reports.Node{Started: res.Started}
	var ev *node.Evidence
	h, err := node.Open(opt.HostRoot)
	if err != nil {
		n.Name = nodeName(opt.NodeName, "")
		n.Status = reports.NodeUnevaluable
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
		ev.Relabel(opt.HostLabel)
		n.Name = nodeName(opt.NodeName, ev.Host.Hostname)
		n.Facts = facts(ev)
		if b, err := json.Marshal(ev); err == nil {
			n.Evidence = b
		}
		suites.SetContext(&suites.Context{Evidence: ev, Config: opt.Config})
		rep := runSpecs(opt)
		n.Suites, err = convert(rep, opt.Suites)
		if err != nil {
			return nil, nil, err
		}
		n.Status = reports.NodeEvaluated
		if fe := ev.Fatal(); fe != nil {
			n.Status = reports.NodeUnevaluable
			n.Reason = fe.Error()
		}
	}
	n.Finished = time.Now().UTC()
	res.Finished = n.Finished
	res.Nodes = []reports.Node{n}
	return res, ev, nil
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
func facts(ev *node.Evidence) []reports.Fact {
	f := []reports.Fact{{Name: "host_root", Value: ev.Host.Root}}
	add := func(k, v string) {
		if v != "" {
			f = append(f, reports.Fact{Name: k, Value: v})
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
func convert(r types.Report, areas []string) ([]reports.Suite, error) {
	selected := map[string]bool{}
	for _, a := range areas {
		selected[a] = true
	}
	bySuite := map[string]*reports.Suite{}
	var setup []reports.Spec
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
			s = &reports.Suite{Name: area}
			bySuite[area] = s
		}
		sp := spec(sr)
		if sp.State == reports.StateSkipped && sp.Message == "" && setupFailed != "" {
			sp.Message = "not run: " + setupFailed
		}
		s.Specs = append(s.Specs, sp)
	}
	var out []reports.Suite
	if len(setup) > 0 {
		out = append(out, reports.Suite{Name: "setup", Specs: setup})
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

func spec(sr types.SpecReport) reports.Spec {
	name := sr.LeafNodeText
	if len(sr.ContainerHierarchyTexts) > 1 {
		name = strings.Join(append(append([]string{}, sr.ContainerHierarchyTexts[1:]...), sr.LeafNodeText), " ")
	}
	sp := reports.Spec{
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
		if m, ok := e.Value.GetRawValue().(reports.Metric); ok {
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
		return reports.StatePassed
	case types.SpecStateSkipped:
		return reports.StateSkipped
	case types.SpecStatePending:
		return reports.StatePending
	case types.SpecStateFailed:
		return reports.StateFailed
	}
	return s.String() // panicked, interrupted, aborted, timedout
}
