package nccl

import (
	"fmt"
)

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
