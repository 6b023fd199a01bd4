package suites

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// RunOptions configure the one Ginkgo run of a process.
type RunOptions struct {
	// Ctx interrupts the run (SIGINT, SIGTERM): the specs not yet run
	// skip, saying so. Nil never interrupts.
	Ctx      context.Context
	Areas    []string      // labels to run; never empty
	Timeout  time.Duration // the whole run; zero keeps Ginkgo's default
	Progress io.Writer     // where Verbose writes Ginkgo's report; nil discards it
	// Verbose writes Ginkgo's own report to Progress: each failure with
	// its source location, relative to the module. Its skipped count
	// includes the specs of areas not selected, so without it Ginkgo
	// says nothing and the summary table's count is the only one.
	Verbose bool
}

// Run runs the areas' specs against c and returns them as results suites:
// one per area, names without labels or node types, skipped kept apart,
// and a failed setup node as a failed case of its own. Ginkgo runs once
// per process, so Run is called once. The areas register themselves when
// their packages are imported (suites/areas imports them all).
func Run(c *Context, opt RunOptions) ([]results.Suite, error) {
	c.interrupt = opt.Ctx
	SetContext(c)
	sc := types.NewDefaultSuiteConfig()
	sc.LabelFilter = strings.Join(opt.Areas, " || ")
	sc.RandomSeed = 1 // the order specs are written in
	if opt.Timeout > 0 {
		sc.Timeout = opt.Timeout
	}
	rc := types.NewDefaultReporterConfig()
	rc.NoColor = true
	rc.Succinct = true
	var w io.Writer = io.Discard
	if opt.Verbose && opt.Progress != nil {
		w = relativeWriter{opt.Progress}
	}
	formatter.ColorableStdOut = w
	ginkgo.RunSpecs(&fakeT{}, "gdrcheck", sc, rc)
	// Succinct output ends without a newline.
	fmt.Fprintln(w)
	return convert(lastReport, opt.Areas)
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
			sp.Message, sp.SkipKind = "not run: "+setupFailed, results.SkipCannotRun
			sp.SetRemedy(cannotRunRemedy)
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
			sp.Location = relative(sr.Failure.Location.String())
		}
	}
	if sr.State.Is(types.SpecStateFailureStates) {
		sp.Output = sr.CapturedGinkgoWriterOutput + sr.CapturedStdOutErr
	}
	for _, e := range sr.ReportEntries {
		if e.Name != MetricEntry {
			continue
		}
		if m, ok := e.Value.GetRawValue().(results.Metric); ok {
			sp.Metrics = append(sp.Metrics, m)
		}
	}
	if sp.State == results.StateSkipped {
		// A skip the suite did not classify (Ginkgo's own) changes no
		// verdict.
		sp.SkipKind = results.SkipNotApplicable
		for _, e := range sr.ReportEntries {
			if k, ok := e.Value.GetRawValue().(string); ok && e.Name == SkipKindEntry {
				sp.SkipKind = k
			}
		}
	}
	if sp.NeedsRemedy() {
		sp.SetRemedy(remedyOf(sp, sr.ReportEntries, runEvidence()))
	}
	for _, e := range sr.ReportEntries {
		if e.Name == NoteEntry {
			if s, ok := e.Value.GetRawValue().(string); ok {
				sp.Notes = append(sp.Notes, s)
			}
		}
	}
	return sp
}

// runEvidence is the run's node evidence, nil outside a run or where it
// was not collected.
func runEvidence() *node.Evidence {
	if current == nil {
		return nil
	}
	return current.Evidence
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

// modulePrefix is what a -trimpath build writes before a source file of
// this module: "github.com/gdrcheck/gdrcheck/".
var modulePrefix = strings.TrimSuffix(reflect.TypeOf(Context{}).PkgPath(), "suites")

// relative makes a source location relative to the module:
// "suites/kernel/kernel.go:41".
func relative(loc string) string {
	return strings.ReplaceAll(loc, modulePrefix, "")
}

// relativeWriter writes Ginkgo's report with its locations relative.
type relativeWriter struct{ w io.Writer }

func (r relativeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, relative(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
