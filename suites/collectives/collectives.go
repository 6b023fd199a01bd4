// Package collectives holds the specs on NCCL collectives run on the node:
// every collective completes without errors, takes the path the topology
// says NCCL should take, and reaches the bus bandwidth of the node's
// generation.
package collectives

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

var _ = suites.Describe("collectives", func() {
	var m *nccl.Measurements

	BeforeEach(func() {
		m = suites.Measurements()
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() && m != nil {
			for _, r := range direct(m) {
				if r.Result.Log != nil {
					GinkgoWriter.Printf("%s_perf: transports %s; NCCL %s, network %s\n", r.Op, nccl.TransportSummary(r.Result.Log.Transports), r.Result.Log.NCCLVersion, r.Result.Log.Network)
				}
			}
		}
	})

	It("runs the collectives without errors", func() {
		suites.Remedy(results.ActionInvestigate, results.ScopeNode)
		for _, b := range m.Missing {
			suites.Note("%s not found: not run", b)
		}
		var bad []string
		for _, r := range direct(m) {
			if r.Result.Err != nil {
				bad = append(bad, r.Result.Err.Error())
			}
			if why := impossible(r, suites.Current().Evidence); why != "" {
				bad = append(bad, why)
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("takes the direct path NCCL is expected to take", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		for _, w := range m.Why {
			suites.Note("expected: %s", w)
		}
		if m.Shape.GPUs == 1 {
			suites.NotApplicable("one GPU: NCCL connects nothing on a single GPU, so there is no intra-node path to prove; " + suites.AcrossNodes)
		}
		var bad []string
		for _, r := range direct(m) {
			if r.Result.Log == nil {
				bad = append(bad, fmt.Sprintf("%s_perf printed no NCCL log: cannot tell the path (NCCL_DEBUG=INFO unset?)", r.Op))
				continue
			}
			v := r.Result.Log.Verdict(m.Expectation)
			suites.Note("%s_perf: %s (%s)", r.Op, v.Verdict, nccl.TransportSummary(r.Result.Log.Transports))
			if v.Verdict != nccl.VerdictDirect {
				bad = append(bad, fmt.Sprintf("%s_perf path is %s: %s", r.Op, v.Verdict, v.Reason()))
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("reaches the baseline bus bandwidth at large messages", func() {
		suites.Remedy(results.ActionRerun, results.ScopeNode) // slow names no cause: measure again
		if m.Shape.GPUs == 1 {
			suites.NotApplicable("one GPU: a collective moves no data between GPUs, so there is no bus bandwidth to compare; " + suites.AcrossNodes)
		}
		var bad, measured []string
		for _, r := range direct(m) {
			t := r.Result.Tests
			if t == nil || len(t.Rows) == 0 {
				continue
			}
			measured = append(measured, results.BusBWMetric(r.Op))
			if t.Partial {
				// Which size is the largest measured is not known:
				// comparing a smaller one judges a size the run
				// did not stop at.
				bad = append(bad, fmt.Sprintf("%s_perf busbw not compared: its table is partial: %s", r.Op, t.PartialReason))
				continue
			}
			if impossible(r, suites.Current().Evidence) != "" {
				bad = append(bad, fmt.Sprintf("%s_perf busbw not compared: it is above what the node's links can carry (see \"runs the collectives without errors\")", r.Op))
				continue
			}
			// Compared at the largest size measured, where the
			// baseline's by_size (or its expected value) applies.
			last, _ := t.Largest()
			metric := results.BusBWMetric(r.Op)
			got := last.BusBW()
			c, ok := suites.Compare(metric, got, last.Size)
			mt := results.Metric{Name: metric, Value: got, Unit: "GB/s", Subject: fmt.Sprintf("%s_perf at %s", r.Op, results.SizeString(last.Size))}
			if ok {
				mt.Baseline, mt.DeltaPct, mt.Verdict = &c.Expected, &c.DeltaPct, c.Verdict()
				if !c.Pass {
					bad = append(bad, fmt.Sprintf("%s_perf busbw %.1f GB/s at %s; baseline %s expects %s", r.Op, got, results.SizeString(last.Size), suites.Profile(), c.Band()))
				}
			}
			suites.Record(mt)
		}
		suites.RequireBaseline(measured...)
		Expect(bad).To(suites.HaveNoFindings())
	})
})

// impossible says why a run's bus bandwidth cannot be right on this node
// (suites.Impossible against nccl.BusBWLimit), for its first row that
// cannot; "" when every row can.
func impossible(r nccl.Measured, ev *node.Evidence) string {
	if r.Result.Tests == nil || ev == nil {
		return ""
	}
	limit := nccl.BusBWLimit(r.Op, ev)
	n, first := 0, ""
	for _, row := range r.Result.Tests.Rows {
		if why := suites.Impossible(fmt.Sprintf("%s_perf busbw at %s", r.Op, results.SizeString(row.Size)), row.BusBW(), limit); why != "" {
			if n == 0 {
				first = why
			}
			n++
		}
	}
	if n > 1 {
		first += fmt.Sprintf(" (and %d more sizes)", n-1)
	}
	return first
}

func direct(m *nccl.Measurements) []nccl.Measured {
	var out []nccl.Measured
	for _, r := range m.Runs {
		if r.Mode.Name == nccl.ModeDirect.Name {
			out = append(out, r)
		}
	}
	return out
}
