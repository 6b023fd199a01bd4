package nccl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
)

// Launch starts the ranks of one run across a set of nodes: a command
// prefix whose words may hold {nodes} (how many), {ranks} (nodes × GPUs),
// {gpus} (per node) and {nodelist} (the names in Slurm's hostlist form,
// gpu[00001-16384]). The Slurm job passes srun with its MPI plugin
// options; on one box the emulated-node launcher (EmulatedLaunch) plays
// the nodes.
//
// {nodelist} is the compressed hostlist rather than srun's file form
// (--nodelist=PATH) because it needs no file per run and every Slurm
// command takes it, and because it is the form Slurm itself hands a job
// (SLURM_JOB_NODELIST, one environment string under the same 128 KiB
// limit): names that do not compress into one argument would break Slurm
// first. Names without a shared pattern stay comma-separated, as before.
type Launch []string

// MaxArg is the longest argv or environment string Linux execs
// (MAX_ARG_STRLEN, 32 pages, its terminating NUL counted).
const MaxArg = 128 << 10

// ParseLaunch splits a launcher template (--launcher) into words: each
// placeholder is one of {nodes} {ranks} {gpus} {nodelist}.
func ParseLaunch(s string) (Launch, error) {
	return parseTemplate(s, "srun --nodes={nodes} --ntasks={ranks} --nodelist={nodelist}", "{nodes}", "{ranks}", "{gpus}", "{nodelist}")
}

// ParseNodeLaunch splits the template that starts one node's nccl-tests
// processes (--nccl-launcher), by the rules of ParseLaunch: one node has
// one placeholder, {gpus}, its GPUs (one process each).
func ParseNodeLaunch(s string) (Launch, error) {
	return parseTemplate(s, "mpirun --allow-run-as-root -np {gpus}", "{gpus}")
}

// ParseMPILaunch splits the template that starts the mpi suite's two
// benchmark ranks (--mpi-launcher, --mpi-internode-launcher) by the rules
// of ParseLaunch: its one placeholder is {ranks}, the two ranks.
func ParseMPILaunch(s string) (Launch, error) {
	return parseTemplate(s, "mpirun --mca pml ucx -np {ranks}", "{ranks}")
}

// ForGPUs fills a node launcher's {gpus}.
func (l Launch) ForGPUs(gpus int) []string {
	out := make([]string, len(l))
	for i, w := range l {
		out[i] = strings.ReplaceAll(w, "{gpus}", strconv.Itoa(gpus))
	}
	return out
}

// parseTemplate splits a launcher template into words and refuses one of
// no words (an empty or all-space value, as an unset CI variable leaves)
// and a placeholder other than the known ones, which would reach the
// command line as it is.
func parseTemplate(s, example string, known ...string) (Launch, error) {
	l := Launch(strings.Fields(s))
	if len(l) == 0 {
		return nil, fmt.Errorf("empty launcher: want a command such as %q", example)
	}
	for _, w := range l {
		for rest := w; ; {
			i := strings.Index(rest, "{")
			if i < 0 {
				break
			}
			j := strings.Index(rest[i:], "}")
			if j < 0 {
				return nil, fmt.Errorf("launcher word %q: unclosed {", w)
			}
			if p := rest[i : i+j+1]; !slices.Contains(known, p) {
				return nil, fmt.Errorf("launcher word %q: unknown placeholder %s (known: %s)", w, p, strings.Join(known, " "))
			}
			rest = rest[i+j+1:]
		}
	}
	return l, nil
}

// SrunLaunch is the Slurm job's launcher: explicit task counts (a step
// otherwise inherits the job's), the node list, and extra srun options
// such as --mpi=pmix for MPI-built nccl-tests.
func SrunLaunch(extra []string) Launch {
	l := Launch{"srun", "--nodes={nodes}", "--ntasks={ranks}", "--ntasks-per-node={gpus}", "--nodelist={nodelist}", "--kill-on-bad-exit=1"}
	return append(l, extra...)
}

// For fills the placeholders for one run. It refuses a node name that
// is not one (hostlist.Valid) and a word the kernel would not exec.
// {nodelist} keeps the nodes' order (hostlist.Encode): emulated ranks
// find their node by position in it.
func (l Launch) For(nodes []string, gpus int) ([]string, error) {
	list, err := hostlist.Encode(nodes)
	if err != nil {
		return nil, fmt.Errorf("launcher: %w", err)
	}
	r := strings.NewReplacer("{nodes}", strconv.Itoa(len(nodes)), "{ranks}", strconv.Itoa(len(nodes)*gpus),
		"{gpus}", strconv.Itoa(gpus), "{nodelist}", list)
	out := make([]string, len(l))
	for i, w := range l {
		out[i] = r.Replace(w)
		if err := fitsArg(out[i]); err != nil {
			return nil, fmt.Errorf("launcher word %q: %w", l[i], err)
		}
	}
	return out, nil
}

// fitsArg refuses a string over MaxArg, which exec would fail with E2BIG
// ("argument list too long").
func fitsArg(s string) error {
	if len(s)+1 > MaxArg {
		return fmt.Errorf("%d bytes, over Linux's %d-byte limit on one argument: the node names do not compress into a hostlist (give them a shared prefix and number)", len(s), MaxArg-1)
	}
	return nil
}

// Kinds of scaling run, as results.json names them.
const (
	KindScale    = "scale"    // all_reduce across 1, 2, 4 ... N nodes
	KindPairwise = "pairwise" // across two nodes, to name a slow one
)

// ScalingPlan is what the allocation-level runs cover.
type ScalingPlan struct {
	Nodes       []string
	GPUsPerNode int
	// Args are all_reduce_perf's; -g 1 is added (one process per GPU).
	Args []string
	// PairConcurrency is how many pairs of a round run at once: pairs of
	// real nodes are disjoint, emulated nodes share one machine (1).
	PairConcurrency int
}

// DefaultScalingArgs sweep to 2 GiB, where NCCL reaches its bandwidth.
var DefaultScalingArgs = []string{"-b", "8", "-e", "2G", "-f", "2"}

// ScalingRun is one all_reduce_perf run across a set of nodes.
type ScalingRun struct {
	Kind   string
	Nodes  []string
	Result Result
}

// Scaling is the allocation's runs, handed to the scaling suite.
type Scaling struct {
	Plan ScalingPlan
	Runs []ScalingRun
	// Pairwise says why the pairwise rounds ran or did not.
	Pairwise string
	// NodeBusBW is each node's own single-node all_reduce bus bandwidth
	// from its results (GB/s), where it reported one.
	NodeBusBW map[string]float64
	// Profile names the baseline the nodes matched; "" for none.
	Profile string
	// Expect is the path NCCL should take between the nodes, from the
	// first node's evidence (Nodes is set per run), with the reasons;
	// Known is false without evidence to tell.
	Expect    Expectation
	ExpectWhy []string
	Known     bool
	// NICs is the first node's RDMA NIC count.
	NICs int
}

// Of returns the runs of one kind.
func (s *Scaling) Of(kind string) []ScalingRun {
	var out []ScalingRun
	if s == nil {
		return nil
	}
	for _, r := range s.Runs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// NodeCounts are 1, 2, 4 ... up to n, and n itself.
func NodeCounts(n int) []int {
	var out []int
	for k := 1; k < n; k *= 2 {
		out = append(out, k)
	}
	return append(out, n)
}

// Pairings are two rounds of disjoint pairs: neighbours, then shifted by
// one, so each node meets two partners and a node slow with both is the
// one to blame.
func Pairings(nodes []string) [][][]string {
	var rounds [][][]string
	for shift := 0; shift < 2; shift++ {
		var pairs [][]string
		for i := shift; i+1 < len(nodes)+shift; i += 2 {
			a, b := nodes[i%len(nodes)], nodes[(i+1)%len(nodes)]
			if a != b {
				pairs = append(pairs, []string{a, b})
			}
		}
		rounds = append(rounds, pairs)
	}
	return rounds
}

// ScaleLog names the log of the scaling run across n nodes, and PairLog
// that of pair i of a pairwise round: names that do not grow with the
// nodes (which results.json's runs list beside each log).
func ScaleLog(n int) string { return fmt.Sprintf("scale-n%d.log", n) }

// PairLog: see ScaleLog; round and pair count from 0, names from 1.
func PairLog(round, pair int) string { return fmt.Sprintf("pairwise-r%d-p%04d.log", round+1, pair+1) }

// runnerFor is r set up for one run across nodes: the launcher's words,
// and GDRCHECK_RUN_NODES and GDRCHECK_RUN_NODELIST (the hostlist) for
// wrappers and test stand-ins.
func runnerFor(r Runner, launch Launch, nodes []string, gpus int) (Runner, error) {
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
func MeasureScaling(ctx context.Context, r Runner, launch Launch, plan ScalingPlan, pairwise func([]ScalingRun) (bool, string), progress io.Writer) *Scaling {
	if progress == nil {
		progress = io.Discard
	}
	gpus := max(plan.GPUsPerNode, 1)
	args := plan.Args
	if len(args) == 0 {
		args = DefaultScalingArgs
	}
	s := &Scaling{Plan: plan}
	run := func(kind string, nodes []string, log string) ScalingRun {
		fmt.Fprintf(progress, "scaling: all_reduce_perf (%s) across %s (%d node(s)), log %s ...\n", kind, hostlist.Compress(nodes), len(nodes), log)
		var res Result
		if rr, err := runnerFor(r, launch, nodes, gpus); err != nil {
			res = Result{Spec: Spec{Binary: "all_reduce_perf"}, Err: err}
		} else {
			res = rr.Run(ctx, Spec{Binary: "all_reduce_perf", Args: append(append([]string{}, args...), "-g", "1"), Log: log})
		}
		fmt.Fprintf(progress, "scaling: all_reduce_perf (%s) across %d node(s) took %s\n", kind, len(nodes), res.Duration.Round(1e8))
		return ScalingRun{Kind: kind, Nodes: nodes, Result: res}
	}
	for _, k := range NodeCounts(len(plan.Nodes)) {
		if ctx.Err() != nil {
			return s
		}
		s.Runs = append(s.Runs, run(KindScale, plan.Nodes[:k], ScaleLog(k)))
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
	for ri, round := range Pairings(plan.Nodes) {
		out := make([]ScalingRun, len(round))
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
				out[i], done[i] = run(KindPairwise, p, PairLog(ri, i)), true
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
