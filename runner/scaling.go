package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

// AllocationNode names the report entry of the scaling area.
const AllocationNode = results.AllocationNode

// ScalingOptions are the allocation the scaling area measures.
type ScalingOptions struct {
	// Nodes are the allocation's nodes, in order; with Emulate, the
	// names of the emulated ones.
	Nodes       []string
	GPUsPerNode int // ranks per node; default: what the nodes reported, else 1
	// Launch is the launcher template (bench.ParseLaunch); empty means
	// srun with SrunArgs, or mpirun through emulated-rank with Emulate.
	Launch   string
	SrunArgs []string
	// Emulate plays the nodes on this machine (one UTS namespace and
	// NCCL_HOSTID per node; needs root and mpirun).
	Emulate bool
	// Self is this binary, which emulated ranks start through.
	Self string
	// NodeResults holds each node's results.json of the node suites
	// (DIR/<node>/results.json): its own all_reduce bandwidth and the
	// profile it matched.
	NodeResults string
	// Profile names the baseline to judge with; empty takes the one the
	// nodes matched.
	Profile string
	// Pairs is when the pairwise rounds run: "auto" (a run below its
	// baseline band, or no baseline to judge by), "always" or "never".
	Pairs string
	// Args are all_reduce_perf's arguments; empty sweeps 8 B to 2 GiB.
	Args []string
}

// Pairs values.
const (
	PairsAuto   = "auto"
	PairsAlways = "always"
	PairsNever  = "never"
)

// runScaling measures and judges an allocation: no node evidence is
// collected, the report's one entry is the allocation, and the runs are
// results.json's top-level runs.
func runScaling(opt Options, store *baseline.Store) (*results.Results, error) {
	so := opt.Scaling
	if len(so.Nodes) == 0 {
		return nil, fmt.Errorf("the scaling suite needs the allocation's nodes (--nodes, --nodes-file, or --emulate-nodes N)")
	}
	switch so.Pairs {
	case "":
		so.Pairs = PairsAuto
	case PairsAuto, PairsAlways, PairsNever:
	default:
		return nil, fmt.Errorf("--scaling-pairs %q: want auto, always or never", so.Pairs)
	}
	started := time.Now().UTC()
	reported, err := readNodeResults(so.NodeResults, so.Nodes)
	if err != nil {
		return nil, err
	}
	if so.GPUsPerNode == 0 {
		so.GPUsPerNode = reported.gpus
	}
	if so.GPUsPerNode == 0 {
		so.GPUsPerNode = 1
	}
	profile := so.Profile
	if profile == "" {
		profile = reported.profile
	}
	sc := &suites.Context{Config: opt.Config}
	switch b, ok := store.Get(profile); {
	case profile == "" && so.Emulate:
		// No hardware generation's baseline fits nodes played on one
		// machine: a rehearsal reports, unless told what to judge by.
		sc.BaselineErr = errors.New("emulated nodes share this machine: no baseline applies (--baseline-profile names one to judge by)")
		sc.Config.AllowMissingBaseline = true
	case profile == "":
		sc.BaselineErr = errors.New("the nodes matched no baseline profile (--baseline-profile names one)")
	case !ok:
		sc.BaselineErr = fmt.Errorf("baseline profile %q is not in the baseline store", profile)
	default:
		sc.Baseline = b
	}
	launch, err := scalingLaunch(so)
	if err != nil {
		return nil, err
	}
	plan := nccl.ScalingPlan{Nodes: so.Nodes, GPUsPerNode: so.GPUsPerNode, Args: so.Args, PairConcurrency: len(so.Nodes)}
	if so.Emulate {
		// Emulated nodes share this machine's GPUs and CPUs.
		plan.PairConcurrency = 1
	}
	r := bench.NCCLRunner{Dir: opt.NCCLTestsDir, Timeout: opt.NCCLTimeout, LogDir: opt.LogDir}
	ctx := opt.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if _, err := r.Lookup("all_reduce_perf"); err != nil {
		sc.Scaling, sc.ScalingErr = &nccl.Scaling{Plan: plan}, err
	} else {
		sc.Scaling = bench.MeasureScaling(ctx, r, launch, plan, wantPairs(so.Pairs, sc.Baseline), opt.Progress)
	}
	sc.Scaling.NodeBusBW, sc.Scaling.Profile = reported.busbw, profile
	if ev := reported.evidence; ev != nil || so.Emulate {
		if ev == nil {
			ev = localEvidence()
		}
		if ev != nil {
			sc.Scaling.Expect, sc.Scaling.ExpectWhy = nccl.ExpectationFor(ev, 0)
			sc.Scaling.Known, sc.Scaling.NICs = true, len(ev.NICs)
		}
	}

	n := results.Node{Name: opt.NodeName, Status: results.NodeEvaluated, Started: started}
	if n.Name == "" {
		n.Name = AllocationNode
	}
	if sc.Baseline != nil {
		n.Profile = sc.Baseline.Profile.Name
		n.Facts = append(n.Facts, results.Fact{Name: "profile", Value: n.Profile})
	}
	n.Facts = append(n.Facts, results.Fact{Name: "gpus_per_node", Value: strconv.Itoa(so.GPUsPerNode)},
		results.Fact{Name: "nodes", Value: hostlist.Compress(so.Nodes)})
	if so.Emulate {
		n.Facts = append(n.Facts, results.Fact{Name: "emulated", Value: "true"})
	}
	runs := scalingRuns(sc.Scaling, sc.Baseline, opt)
	n.Suites, err = suites.Run(sc, suites.RunOptions{Ctx: opt.Ctx, Areas: []string{suites.ScalingArea}, Timeout: opt.Timeout, Progress: opt.Progress, Verbose: opt.Verbose})
	if err != nil {
		return nil, err
	}
	finish(opt, &n)
	n.Finished = time.Now().UTC()
	return &results.Results{
		Schema:   results.Schema,
		Tool:     results.Tool{Version: opt.Version, Args: opt.Args, Suites: opt.Suites},
		Started:  started,
		Finished: n.Finished,
		Nodes:    []results.Node{n},
		Runs:     runs,
	}, nil
}

func scalingLaunch(so ScalingOptions) (bench.Launch, error) {
	switch {
	case so.Launch != "":
		l, err := bench.ParseLaunch(so.Launch)
		if err != nil {
			return nil, fmt.Errorf("--launcher: %w", err)
		}
		return l, nil
	case so.Emulate:
		gpus := 0
		if ev := localEvidence(); ev != nil {
			gpus = len(ev.GPUs)
		}
		return bench.EmulatedLaunch(so.Self, gpus), nil
	}
	return bench.SrunLaunch(so.SrunArgs), nil
}

// wantPairs decides after the scaling runs whether the pairwise rounds,
// which cost two more runs per node pair, are worth running.
func wantPairs(mode string, b *baseline.Baseline) func([]nccl.ScalingRun) (bool, string) {
	return func(runs []nccl.ScalingRun) (bool, string) {
		switch {
		case mode == PairsAlways:
			return true, "asked for (--scaling-pairs always)"
		case mode == PairsNever:
			return false, "not asked for (--scaling-pairs never)"
		case b == nil:
			return true, "no baseline to judge multi-node bandwidth by: the job judges its own pairs"
		}
		stated := false
		for _, r := range runs {
			if _, ok := b.Metric(results.MultiNodeBusBWMetric(len(r.Nodes))); ok && len(r.Nodes) >= 2 {
				stated = true
			}
		}
		if !stated {
			return true, fmt.Sprintf("baseline %s states no multi-node bandwidth: the job judges its own pairs", b.Profile.Name)
		}
		for _, r := range runs {
			if len(r.Nodes) < 2 {
				continue
			}
			if r.Result.Err != nil {
				return true, fmt.Sprintf("all_reduce across %d nodes failed", len(r.Nodes))
			}
			if c, ok := b.Compare(results.MultiNodeBusBWMetric(len(r.Nodes)), r.Result.BusBW(), r.Result.LargestSize()); ok && !c.Pass {
				return true, fmt.Sprintf("all_reduce across %d nodes fell below baseline %s", len(r.Nodes), b.Profile.Name)
			}
		}
		return false, "every multi-node run within its baseline band"
	}
}

// scalingRuns turns the runs into results.json's, with their baseline
// bands and the logs their output streamed to (logs/scale-n64.log): each
// run names its nodes beside its log. Each run's path verdict is judged
// against the path the nodes' evidence expects, as the scaling suite
// judges it, so that results.json (and the textfile's fallback series
// an alert reads) says what the spec said.
func scalingRuns(s *nccl.Scaling, b *baseline.Baseline, opt Options) []results.Run {
	var out []results.Run
	for _, r := range s.Runs {
		exp := nccl.Expectation{}
		if s.Known {
			exp = s.Expect
		}
		exp.Nodes = len(r.Nodes)
		run := nccl.Measured{Op: "all_reduce", Mode: nccl.ModeDirect, Result: r.Result}.Report(r.Kind, exp)
		run.Nodes = r.Nodes
		if b != nil && len(run.Points) > 0 {
			last := run.Points[len(run.Points)-1]
			if c, ok := b.Compare(results.MultiNodeBusBWMetric(len(r.Nodes)), last.BusBW, last.Size); ok {
				run.Baseline = &results.Band{Profile: c.Profile, Metric: c.Metric, Expected: c.Expected, Low: c.Low, High: c.High, Direction: string(c.Direction)}
			}
		}
		if opt.LogDir != "" && r.Result.LogFile != "" {
			run.Log = opt.logRef(r.Result.LogFile)
		}
		out = append(out, run)
	}
	return out
}

// localEvidence is this machine's, where emulated nodes run; nil when it
// cannot be read.
func localEvidence() *node.Evidence {
	h, err := node.Open("/")
	if err != nil {
		return nil
	}
	return node.Collect(h, node.DefaultSources(h))
}

// reported is what the node suites said of the nodes.
type reported struct {
	busbw    map[string]float64 // single-node direct all_reduce, GB/s
	gpus     int                // of the first node that reported
	profile  string             // the baseline the first node matched
	evidence *node.Evidence     // the first node's, for the path to expect
}

// readNodeResults reads DIR/<node>/results.json of each node, one at a
// time; a node that did not report is left out.
func readNodeResults(dir string, nodes []string) (reported, error) {
	rep := reported{busbw: map[string]float64{}}
	if dir == "" {
		return rep, nil
	}
	paths := make([]string, len(nodes))
	for i, name := range nodes {
		paths[i] = filepath.Join(dir, name, "results.json")
	}
	next, stop := results.ReadAhead(paths)
	defer stop()
	for i, name := range nodes {
		r, err := next(i)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return rep, err
		}
		for _, n := range r.Nodes {
			if n.Status != results.NodeEvaluated {
				continue
			}
			if rep.gpus == 0 {
				rep.gpus, _ = strconv.Atoi(n.Fact("gpus"))
				rep.profile = n.Profile
				var ev node.Evidence
				if len(n.Evidence) > 0 && json.Unmarshal(n.Evidence, &ev) == nil {
					rep.evidence = &ev
				}
			}
			for _, run := range n.Runs {
				if run.Suite == "collectives" && run.Op == "all_reduce" && run.Mode == nccl.ModeDirect.Name && run.Error == "" && run.BusBW > 0 {
					rep.busbw[name] = run.BusBW
				}
			}
		}
	}
	return rep, nil
}
