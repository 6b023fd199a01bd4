package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
)

// DefaultScalingArgs sweep to 2 GiB, where NCCL reaches its bandwidth.
var DefaultScalingArgs = []string{"-b", "8", "-e", "2G", "-f", "2"}

// runnerFor is r set up for one run across nodes: the launcher's words,
// and GDRCHECK_RUN_NODES and GDRCHECK_RUN_NODELIST (the hostlist) for
// wrappers and test stand-ins.
func runnerFor(r NCCLRunner, launch Launch, nodes []string, gpus int) (NCCLRunner, error) {
	words, err := launch.For(nodes, gpus)
	if err != nil {
		return r, err
	}
	enc, err := hostlist.Encode(nodes)
	if err != nil {
		return r, err
	}
	list := "GDRCHECK_RUN_NODELIST=" + enc
	if err := fitsArg(list); err != nil {
		return r, fmt.Errorf("GDRCHECK_RUN_NODELIST: %w", err)
	}
	r.Launcher = words
	r.Env = append(append([]string{}, r.Env...), "GDRCHECK_RUN_NODES="+strconv.Itoa(len(nodes)), list)
	return r, nil
}

// MeasureScaling runs all_reduce across 1, 2, 4 ... N nodes through the
// launcher, then, when pairwise says so after seeing those runs, two
// rounds of node pairs, each run's output streaming to its log in
// r.LogDir (ScaleLog, PairLog).
func MeasureScaling(ctx context.Context, r NCCLRunner, launch Launch, plan nccl.ScalingPlan, pairwise func([]nccl.ScalingRun) (bool, string), progress io.Writer) *nccl.Scaling {
	if progress == nil {
		progress = io.Discard
	}
	gpus := max(plan.GPUsPerNode, 1)
	args := plan.Args
	if len(args) == 0 {
		args = DefaultScalingArgs
	}
	s := &nccl.Scaling{Plan: plan}
	run := func(kind string, nodes []string, log string) nccl.ScalingRun {
		fmt.Fprintf(progress, "scaling: all_reduce_perf (%s) across %s (%d node(s)), log %s ...\n", kind, hostlist.Compress(nodes), len(nodes), log)
		var res nccl.Result
		if rr, err := runnerFor(r, launch, nodes, gpus); err != nil {
			res = nccl.Result{Spec: nccl.Spec{Binary: "all_reduce_perf"}, Err: err}
		} else {
			res = rr.Run(ctx, nccl.Spec{Binary: "all_reduce_perf", Args: append(append([]string{}, args...), "-g", "1"), Log: log})
		}
		fmt.Fprintf(progress, "scaling: all_reduce_perf (%s) across %d node(s) took %s\n", kind, len(nodes), res.Duration.Round(1e8))
		return nccl.ScalingRun{Kind: kind, Nodes: nodes, Result: res}
	}
	for _, k := range nccl.NodeCounts(len(plan.Nodes)) {
		if ctx.Err() != nil {
			return s
		}
		s.Runs = append(s.Runs, run(nccl.KindScale, plan.Nodes[:k], nccl.ScaleLog(k)))
	}
	want, why := false, "fewer than 3 nodes: every pair is a scaling run"
	if len(plan.Nodes) >= 3 && pairwise != nil {
		want, why = pairwise(s.Runs)
	}
	s.Pairwise = why
	if !want {
		return s
	}
	// The pairs of a round are disjoint, so they may run at once; the
	// runs are kept in the order of the round.
	limit := max(plan.PairConcurrency, 1)
	for ri, round := range nccl.Pairings(plan.Nodes) {
		out := make([]nccl.ScalingRun, len(round))
		done := make([]bool, len(round))
		sem := make(chan struct{}, limit)
		var wg sync.WaitGroup
		for i, p := range round {
			sem <- struct{}{}
			if ctx.Err() != nil {
				<-sem
				break
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				out[i], done[i] = run(nccl.KindPairwise, p, nccl.PairLog(ri, i)), true
			}()
		}
		wg.Wait()
		for i := range out {
			if done[i] {
				s.Runs = append(s.Runs, out[i])
			}
		}
	}
	return s
}
