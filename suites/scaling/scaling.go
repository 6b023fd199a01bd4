// Package scaling holds the specs on an allocation's collectives: all_reduce
// across 1, 2, 4 ... N nodes at the bandwidth and latency of the baseline,
// the efficiency from 2 to N nodes, and who to blame when the job is slow:
// a node whose own bandwidth is far below the job's, and, from two rounds
// of node pairs, a node slow with every partner (bad) apart from one slow
// with some partners only (topology-sensitive). The job's leader runs this
// area alone, across the allocation's nodes.
package scaling

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

// The running spec's measurements, set by BeforeEach. Ginkgo builds its
// tree once per process and runs one spec at a time, so the functions
// that register the specs share them, as one Describe closure's locals
// did.
var s *nccl.Scaling

var _ = suites.Describe(suites.ScalingArea, func() {
	// The specs follow what was measured: one per node count.
	c := suites.Planned()
	if c == nil || c.Scaling == nil {
		return
	}
	plan := c.Scaling.Plan

	BeforeEach(func() {
		s = suites.Current().Scaling
		suites.Remedy(results.ActionRerun, results.ScopeAllocation, hostlist.Compress(plan.Nodes))
		Expect(suites.Current()).To(suites.HaveScalingRuns())
	})

	nodeCountSpecs(plan)
	jobSpecs(c, plan)
})

// nodeCountSpecs registers the specs of each node count measured: its
// bandwidth against the baseline, and its efficiency over 2 nodes.
func nodeCountSpecs(plan nccl.ScalingPlan) {
	counts := nccl.NodeCounts(len(plan.Nodes))
	for _, k := range counts {
		It(fmt.Sprintf("runs all_reduce across %d node(s) at its baseline bandwidth", k), func() {
			suites.Remedy(results.ActionRerun, results.ScopeAllocation, hostlist.Compress(plan.Nodes)) // slow names no cause
			r, ok := scaleRun(s, k)
			if !ok {
				suites.CannotRun(fmt.Sprintf("all_reduce across %d node(s) did not run: the job was told to end first", k))
			}
			if r.Transport != "" {
				suites.Note("all_reduce across %d node(s): %s", k, r.Transport)
			}
			if len(r.Points) > 0 {
				suites.Record(results.Metric{Name: "latency_small", Value: r.Points[0].TimeUS, Unit: "us", Subject: fmt.Sprintf("%d B, %d nodes", r.Points[0].Size, k)})
			}
			metric := results.MultiNodeBusBWMetric(k)
			m := results.Metric{Name: metric, Value: r.BusBW, Unit: "GB/s", Subject: fmt.Sprintf("%d nodes", k)}
			defer func() { suites.Record(m) }()
			if r.Error != "" {
				Expect([]string{r.Error}).To(suites.HaveNoFindings())
			}
			if r.OneRank() {
				suites.NotApplicable("one rank: all_reduce moves no data between ranks, so there is no bus bandwidth to judge; run across nodes or GPUs")
			}
			b := suites.Current().Baseline
			if b == nil {
				suites.RequireBaseline()
				return
			}
			// The largest size measured; a table whose sizes do not
			// only grow made the run fail above (r.Error).
			last := largestPoint(r.Points)
			cmp, ok := b.Compare(metric, last.BusBW, last.Size)
			if !ok {
				suites.NotApplicable(fmt.Sprintf("baseline %s has no %s", b.Profile.Name, metric))
			}
			delta := (r.BusBW - cmp.Expected) / cmp.Expected * 100
			m.Baseline, m.DeltaPct, m.Verdict = &cmp.Expected, &delta, "pass"
			var bad []string
			if r.BusBW < cmp.Low {
				m.Verdict = "fail"
				bad = append(bad, fmt.Sprintf("all_reduce across %d nodes: busbw %.1f GB/s; baseline %s expects at least %.1f", k, r.BusBW, b.Profile.Name, cmp.Low))
			}
			Expect(bad).To(suites.HaveNoFindings())
		})
	}

	for _, k := range counts {
		if k <= 2 {
			continue
		}
		It(fmt.Sprintf("scales all_reduce from 2 to %d nodes", k), func() {
			suites.Remedy(results.ActionRerun, results.ScopeFabric, hostlist.Compress(plan.Nodes))
			two, ok2 := scaleRun(s, 2)
			r, ok := scaleRun(s, k)
			if !ok || !ok2 || two.Error != "" || r.Error != "" || two.BusBW <= 0 {
				suites.NotApplicable(fmt.Sprintf("no successful runs across 2 and %d nodes to compare", k))
			}
			eff := r.BusBW / two.BusBW
			m := results.Metric{Name: "scaling_efficiency", Value: eff, Subject: fmt.Sprintf("%d over 2 nodes", k)}
			defer func() { suites.Record(m) }()
			if b := suites.Current().Baseline; b != nil {
				if cmp, ok := b.Compare(results.ScalingEfficiencyMetric, eff, 0); ok {
					m.Baseline, m.Verdict = &cmp.Expected, cmp.Verdict()
					var bad []string
					if !cmp.Pass {
						bad = append(bad, fmt.Sprintf("scaling efficiency %.2f from 2 to %d nodes; baseline expects %s", eff, k, cmp.Band()))
					}
					Expect(bad).To(suites.HaveNoFindings())
				}
			}
		})
	}

}

// jobSpecs registers the specs of the job as a whole: the node that slows
// it, the path between nodes, and the nodes far below the job.
func jobSpecs(c *suites.Context, plan nccl.ScalingPlan) {
	if len(plan.Nodes) >= minSample && len(c.Scaling.Of(nccl.KindPairwise)) > 0 {
		It("isolates the node that slows multi-node all_reduce", func() {
			suites.Remedy(results.ActionInvestigate, results.ScopeAllocation, hostlist.Compress(plan.Nodes))
			suites.Note("pairwise rounds: %s", s.Pairwise)
			pairs, slow, how := pairwise(s)
			suites.Note("a pair is slow when %s", how)
			v := judgePairs(pairs, slow)
			for _, n := range v.Sensitive {
				suites.Warn("%s is slow with some partners and fine with others: topology-sensitive (a path between nodes, not the node itself)", n)
			}
			for _, n := range v.Bad {
				// The node named as data, so the job can drain it.
				suites.Record(results.Metric{Name: "slow_in_every_pair", Value: 1, Subject: n, Verdict: "fail"})
			}
			var bad []string
			if len(v.Bad) > 0 {
				bad = append(bad, fmt.Sprintf("slow in every pair it was in: %s", strings.Join(v.Bad, ", ")))
			} else {
				suites.Note("no node was slow in all of its pairs: the shortfall is not one node's")
			}
			Expect(bad).To(suites.HaveNoFindings())
		})
	}

	It("takes the direct path between nodes", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeAllocation, hostlist.Compress(plan.Nodes))
		if !s.Known {
			suites.CannotRun("no node evidence to tell which path NCCL should take between the nodes (--node-results)")
		}
		for _, w := range s.ExpectWhy {
			suites.Note("expected: %s", w)
		}
		if s.NICs == 0 {
			for _, r := range multiNode(s) {
				if r.Result.Log != nil {
					suites.Note("across %s: %s", hostlist.Compress(r.Nodes), nccl.TransportSummary(r.Result.Log.Transports))
				}
			}
			suites.NotApplicable("the nodes have no RDMA NICs: NET/Socket is the only path between them, so there is no GPUDirect RDMA path to prove; run on nodes with rail NICs")
		}
		var bad []string
		for _, r := range multiNode(s) {
			// A hostlist: at 16,384 nodes their names would be 147 KB.
			what := fmt.Sprintf("all_reduce across %s", hostlist.Compress(r.Nodes))
			if r.Result.Log == nil {
				bad = append(bad, what+" printed no NCCL log: cannot tell the path (NCCL_DEBUG=INFO unset?)")
				continue
			}
			exp := s.Expect
			exp.Nodes = len(r.Nodes)
			v := r.Result.Log.Verdict(exp)
			suites.Note("%s: %s (%s)", what, v.Verdict, nccl.TransportSummary(r.Result.Log.Transports))
			if v.Verdict != nccl.VerdictDirect {
				bad = append(bad, fmt.Sprintf("%s path is %s: %s", what, v.Verdict, v.Reason()))
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("has no node whose own bus bandwidth is far below the job's", func() {
		suites.Remedy(results.ActionInvestigate, results.ScopeAllocation, hostlist.Compress(plan.Nodes))
		bw := s.NodeBusBW
		out, sp, ok := lowOutliers(bw)
		if !ok {
			suites.NotApplicable(fmt.Sprintf("%d node(s) reported a single-node all_reduce bus bandwidth: it takes %d to tell an outlier", len(bw), minSample))
		}
		suites.Note("job median %.2f GB/s over %d nodes; suspect below %.2f, severe below %.2f", sp.median, len(bw), sp.median+suspectZ*sp.sigma, sp.median+severeZ*sp.sigma)
		var severe []string
		for _, o := range out {
			m := results.Metric{Name: "busbw_robust_z", Value: o.Z, Subject: o.Node, Verdict: "info"}
			if o.Severe {
				m.Verdict = "fail"
			}
			suites.Record(m)
			line := fmt.Sprintf("%s: single-node all_reduce busbw %.2f GB/s, %.0f%% below the job's median %.2f (z %.1f)", o.Node, o.Value, 100*(1-o.Value/o.Median), o.Median, o.Z)
			if o.Severe {
				severe = append(severe, "outlier "+line)
			} else {
				suites.Warn("suspect %s", line)
			}
		}
		Expect(severe).To(suites.HaveNoFindings())
	})
}

// scaleRun is the run across the first k nodes, as results.json has it.
func scaleRun(s *nccl.Scaling, k int) (results.Run, bool) {
	for _, r := range s.Of(nccl.KindScale) {
		if len(r.Nodes) == k {
			run := nccl.Measured{Op: "all_reduce", Mode: nccl.ModeDirect, Result: r.Result}.Report(nccl.KindScale, nccl.Expectation{Nodes: k})
			return run, true
		}
	}
	return results.Run{}, false
}

// pairwise turns the pairwise runs into pairs and says which are slow:
// below the baseline's two-node band where it states one, else far below
// the job's own level.
func pairwise(s *nccl.Scaling) ([]pairRun, func(pairRun) bool, string) {
	var pairs []pairRun
	for _, r := range s.Of(nccl.KindPairwise) {
		p := pairRun{Nodes: [2]string{r.Nodes[0], r.Nodes[1]}, BusBW: r.Result.BusBW(), Size: r.Result.LargestSize()}
		if r.Result.Err != nil {
			p.Err = r.Result.Err.Error()
		}
		pairs = append(pairs, p)
	}
	if b := suites.Current().Baseline; b != nil {
		metric := results.MultiNodeBusBWMetric(2)
		if _, ok := b.Metric(metric); ok {
			return pairs, func(p pairRun) bool {
				cmp, ok := b.Compare(metric, p.BusBW, p.Size)
				return p.Err != "" || ok && p.BusBW < cmp.Low
			}, fmt.Sprintf("it fails or its busbw is below the band of %s in baseline %s", metric, b.Profile.Name)
		}
	}
	slow, sp := slowByTheJob(pairs)
	return pairs, slow, fmt.Sprintf("it fails or its busbw is below %.2f GB/s (the job's pair level %.2f, %.0f robust z below)", sp.median+suspectZ*sp.sigma, sp.median, -suspectZ)
}

// multiNode are the runs across two nodes or more, scaling then pairs.
func multiNode(s *nccl.Scaling) []nccl.ScalingRun {
	var out []nccl.ScalingRun
	for _, r := range s.Runs {
		if len(r.Nodes) >= 2 {
			out = append(out, r)
		}
	}
	return out
}

// largestPoint is the point of the largest size (the first of it);
// points is not empty.
func largestPoint(points []results.Point) results.Point {
	best := points[0]
	for _, p := range points[1:] {
		if p.Size > best.Size {
			best = p
		}
	}
	return best
}
