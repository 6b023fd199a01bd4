package scaling

import (
	"math"
	"slices"
	"sort"
)

// Outliers answer "is this bandwidth normal?" (NVIDIA/nccl-tests#293)
// from the job itself, where no baseline says what to expect: each value
// against the job's median, in robust z-scores (the median absolute
// deviation scaled to a standard deviation).
const (
	suspectZ = -2.0
	severeZ  = -5.0
	// spreadFloor keeps a quiet fleet from flagging noise: identical
	// nodes differ by a percent or so, so the spread counts as at least
	// 2 % of the median (suspect 4 % below it, severe 10 %).
	spreadFloor = 0.02
	// minSample is the fewest values that can name an outlier: of two,
	// either may be the odd one.
	minSample = 3
)

// spread is a sample's robust location and scale.
type spread struct{ median, sigma float64 }

func robust(vals []float64) spread {
	m := median(vals)
	dev := make([]float64, len(vals))
	for i, v := range vals {
		dev[i] = math.Abs(v - m)
	}
	return spread{median: m, sigma: math.Max(1.4826*median(dev), spreadFloor*math.Abs(m))}
}

func (s spread) z(v float64) float64 {
	if s.sigma == 0 {
		return 0
	}
	return (v - s.median) / s.sigma
}

func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	s := slices.Clone(vals)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// outlier is one node whose value sits far below the job's.
type outlier struct {
	Node          string
	Value, Median float64
	Z             float64
	Severe        bool
}

// lowOutliers are the nodes whose value is suspect or severe, by name.
func lowOutliers(byNode map[string]float64) (out []outlier, sp spread, ok bool) {
	if len(byNode) < minSample {
		return nil, spread{}, false
	}
	vals := make([]float64, 0, len(byNode))
	for _, v := range byNode {
		vals = append(vals, v)
	}
	sp = robust(vals)
	for n, v := range byNode {
		if z := sp.z(v); z < suspectZ {
			out = append(out, outlier{Node: n, Value: v, Median: sp.median, Z: z, Severe: z < severeZ})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, sp, true
}

// pairRun is one pairwise run: two nodes and what they reached together.
type pairRun struct {
	Nodes [2]string
	BusBW float64 // GB/s at Size, the largest message
	Size  int64
	Err   string
}

// pairVerdict is what the pairwise rounds say of each node.
type pairVerdict struct {
	// Bad nodes were slow in every pair they were in.
	Bad []string
	// Sensitive nodes were slow with some partners and fine with
	// others, where the slow pairs are not explained by a bad partner:
	// a path between them, not the node itself.
	Sensitive []string
}

// judgePairs names the bad and the topology-sensitive nodes, slow telling
// which pairs fell short.
func judgePairs(pairs []pairRun, slow func(pairRun) bool) pairVerdict {
	inPairs, slowPairs := map[string][]pairRun{}, map[string][]pairRun{}
	for _, p := range pairs {
		for _, n := range p.Nodes {
			inPairs[n] = append(inPairs[n], p)
			if slow(p) {
				slowPairs[n] = append(slowPairs[n], p)
			}
		}
	}
	var v pairVerdict
	bad := map[string]bool{}
	for n, ps := range inPairs {
		if len(slowPairs[n]) == len(ps) {
			bad[n] = true
			v.Bad = append(v.Bad, n)
		}
	}
	for n, ps := range slowPairs {
		if bad[n] {
			continue
		}
		for _, p := range ps {
			other := p.Nodes[0]
			if other == n {
				other = p.Nodes[1]
			}
			if !bad[other] {
				v.Sensitive = append(v.Sensitive, n)
				break
			}
		}
	}
	sort.Strings(v.Bad)
	sort.Strings(v.Sensitive)
	return v
}

// slowByTheJob tells slow pairs from the job's own numbers: each node's
// best pair is what it can reach, the median of those is the job's level,
// and a pair far below that level (or failed) is slow.
func slowByTheJob(pairs []pairRun) (func(pairRun) bool, spread) {
	best := map[string]float64{}
	for _, p := range pairs {
		for _, n := range p.Nodes {
			if p.Err == "" {
				best[n] = math.Max(best[n], p.BusBW)
			}
		}
	}
	vals := make([]float64, 0, len(best))
	for _, v := range best {
		vals = append(vals, v)
	}
	sp := robust(vals)
	return func(p pairRun) bool { return p.Err != "" || sp.z(p.BusBW) < suspectZ }, sp
}
