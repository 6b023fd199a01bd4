package slurm

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/results"
)

// scaling collects the multi-node runs and judges them.
type scaling struct {
	l           *Leader
	gpus        int
	baseline    *baseline.Baseline
	baselineErr error
	runs        []results.Run
	specs       []results.Spec
}

// run runs all_reduce_perf across nodes as one srun step of gpus tasks per
// node.
func (s *scaling) run(ctx context.Context, suite string, nodes []string) {
	l := s.l
	// Explicit task counts: a step otherwise inherits the job's.
	launcher := []string{"srun", "--nodes=" + strconv.Itoa(len(nodes)), "--ntasks=" + strconv.Itoa(len(nodes)*s.gpus), "--ntasks-per-node=" + strconv.Itoa(s.gpus),
		"--nodelist=" + strings.Join(nodes, ","), "--kill-on-bad-exit=1"}
	launcher = append(launcher, l.Config.NCCLSrunArgs...)
	// GDRCHECK_RUN_NODES tells wrappers (and the test stand-ins) how many
	// nodes the run spans.
	env := append(append([]string{}, l.Client.Env...), "GDRCHECK_RUN_NODES="+strconv.Itoa(len(nodes)))
	r := nccl.Runner{Dir: l.Config.NCCLTestsDir, Launcher: launcher, Env: env, Timeout: 10 * time.Minute}
	l.logf("%s: all_reduce_perf across %s", suite, strings.Join(nodes, ","))
	step := Step{Name: suite, Nodes: nodes, Command: launcher, Started: time.Now().UTC()}
	res := r.Run(ctx, nccl.Spec{Binary: "all_reduce_perf", Args: []string{"-b", "8", "-e", "2G", "-f", "2", "-g", "1"}})
	step.Finished = time.Now().UTC()
	if res.Err != nil {
		step.Error = res.Err.Error()
	}
	l.steps = append(l.steps, step)
	_ = writeJSON(filepath.Join(l.Out, stepsFile), l.steps)

	run := nccl.Measured{Op: "all_reduce", Mode: nccl.ModeDirect, Result: res}.Report(suite, nccl.Expectation{Nodes: len(nodes)})
	run.Nodes = nodes
	name := fmt.Sprintf("%s-n%d-%s.log", suite, len(nodes), strings.Join(nodes, "_"))
	if err := results.WriteFile(filepath.Join(l.Out, filepath.Dir(scaleFile), name), res.Output); err == nil {
		run.Log = filepath.Join(filepath.Dir(scaleFile), name)
	}
	if s.baseline != nil && len(run.Points) > 0 {
		last := run.Points[len(run.Points)-1]
		if c, ok := s.baseline.Compare(results.MultiNodeBusBWMetric(len(nodes)), last.BusBW, last.Size); ok {
			run.Baseline = &results.Band{Profile: c.Profile, Metric: c.Metric, Expected: c.Expected, Low: c.Low, High: c.High}
		}
	}
	s.runs = append(s.runs, run)
}

// belowBaseline says whether a multi-node scaling run missed its band.
func (s *scaling) belowBaseline() bool {
	for _, r := range s.runs {
		if r.Suite == "scale" && len(r.Nodes) >= 2 && r.Baseline != nil && r.BusBW < r.Baseline.Low {
			return true
		}
	}
	return false
}

// write judges the runs as specs of the allocation and stores them.
func (s *scaling) write() error {
	node := results.Node{Name: AllocationNode, Status: results.NodeEvaluated, Started: time.Now().UTC()}
	if s.baseline != nil {
		node.Profile = s.baseline.Profile.Name
		node.Facts = append(node.Facts, results.Fact{Name: "profile", Value: node.Profile})
	}
	node.Facts = append(node.Facts, results.Fact{Name: "gpus_per_node", Value: strconv.Itoa(s.gpus)})
	suite := results.Suite{Name: "scaling"}
	var two float64
	for _, r := range s.runs {
		if r.Suite != "scale" {
			continue
		}
		k := len(r.Nodes)
		sp := results.Spec{Name: fmt.Sprintf("runs all_reduce across %d node(s) at its baseline bandwidth", k), State: results.StatePassed, Duration: r.Duration}
		if len(r.Points) > 0 {
			lat := r.Points[0].TimeUS
			sp.Metrics = append(sp.Metrics, results.Metric{Name: "latency_small", Value: lat, Unit: "us", Subject: fmt.Sprintf("%d B, %d nodes", r.Points[0].Size, k)})
		}
		m := results.Metric{Name: results.MultiNodeBusBWMetric(k), Value: r.BusBW, Unit: "GB/s", Subject: fmt.Sprintf("%d nodes", k)}
		switch {
		case r.Error != "":
			sp.State, sp.Message = results.StateFailed, r.Error
		case r.Baseline != nil:
			delta := (r.BusBW - r.Baseline.Expected) / r.Baseline.Expected * 100
			m.Baseline, m.DeltaPct, m.Verdict = &r.Baseline.Expected, &delta, "pass"
			if r.BusBW < r.Baseline.Low {
				m.Verdict = "fail"
				sp.State = results.StateFailed
				sp.Message = fmt.Sprintf("all_reduce across %d nodes: busbw %.1f GB/s; baseline %s expects at least %.1f", k, r.BusBW, r.Baseline.Profile, r.Baseline.Low)
			}
		case s.baseline == nil:
			sp.State, sp.Message = results.StateFailed, fmt.Sprintf("no baseline to compare with: %v", s.baselineErr)
		default:
			sp.State, sp.Message = results.StateSkipped, fmt.Sprintf("baseline %s has no %s", s.baseline.Profile.Name, results.MultiNodeBusBWMetric(k))
		}
		sp.Metrics = append(sp.Metrics, m)
		if k == 2 {
			two = r.BusBW
		}
		suite.Specs = append(suite.Specs, sp)
	}
	// Scaling efficiency: busbw at N nodes over busbw at 2 nodes.
	for _, r := range s.runs {
		if r.Suite != "scale" || len(r.Nodes) <= 2 || two <= 0 || r.Error != "" {
			continue
		}
		eff := r.BusBW / two
		sp := results.Spec{Name: fmt.Sprintf("scales all_reduce from 2 to %d nodes", len(r.Nodes)), State: results.StatePassed,
			Metrics: []results.Metric{{Name: "scaling_efficiency", Value: eff, Subject: fmt.Sprintf("%d over 2 nodes", len(r.Nodes))}}}
		if s.baseline != nil {
			if c, ok := s.baseline.Compare(results.ScalingEfficiencyMetric, eff, 0); ok {
				sp.Metrics[0].Baseline, sp.Metrics[0].Verdict = &c.Expected, c.Verdict()
				if !c.Pass {
					sp.State, sp.Message = results.StateFailed, fmt.Sprintf("scaling efficiency %.2f from 2 to %d nodes; baseline expects %s", eff, len(r.Nodes), c.Band())
				}
			}
		}
		suite.Specs = append(suite.Specs, sp)
	}
	if sp, ok := s.isolate(); ok {
		suite.Specs = append(suite.Specs, sp)
	}
	node.Suites = []results.Suite{suite}
	node.Finished = time.Now().UTC()
	out := &results.Results{Schema: results.Schema, Tool: results.Tool{Version: s.l.Version}, Started: node.Started, Finished: node.Finished, Nodes: []results.Node{node}, Runs: s.runs}
	return out.Write(filepath.Join(s.l.Out, scaleFile))
}

// isolate names the node slow in every pair it was in.
func (s *scaling) isolate() (results.Spec, bool) {
	bad, seen := map[string]int{}, map[string]int{}
	for _, r := range s.runs {
		if r.Suite != "pairwise" {
			continue
		}
		for _, n := range r.Nodes {
			seen[n]++
			if r.Error != "" || r.Baseline != nil && r.BusBW < r.Baseline.Low {
				bad[n]++
			}
		}
	}
	if len(seen) == 0 {
		return results.Spec{}, false
	}
	var suspects []string
	for n, k := range bad {
		if k == seen[n] {
			suspects = append(suspects, n)
		}
	}
	sort.Strings(suspects)
	sp := results.Spec{Name: "isolates the node that slows multi-node all_reduce", State: results.StatePassed}
	if len(suspects) > 0 {
		sp.State = results.StateFailed
		sp.Message = fmt.Sprintf("slow in every pair it was in: %s", strings.Join(suspects, ", "))
	} else {
		sp.Notes = []string{"no node was slow in all of its pairs: the shortfall is not one node's"}
	}
	return sp, true
}
