package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// lineChart is a value against node count (scaling).
type lineChart struct {
	axes
	Title   string
	Caption []string
	Refs    []refLine
	Bands   []band
	Series  []series
}

type refLine struct {
	Y     float64
	Label string
}

// scaling is one suite, op and mode measured across several node counts.
type scaling struct {
	Suite, Op, Mode string
	Ref             int // the node count efficiency is relative to
	Points          []scalePoint
}

type scalePoint struct {
	Nodes, Ranks int
	BusBW        float64
	Baseline     *results.Band // of a run at this count, if it was compared
	// Efficiency is busbw over the busbw at Ref nodes, %; HasEff is false
	// below Ref.
	Efficiency float64
	HasEff     bool
}

// scalingGroups collects the multi-node runs of one suite, op and mode
// measured at more than one node count. Bus bandwidth is normalised for
// the rank count, so perfect scaling keeps it flat: efficiency is busbw
// over the busbw at 2 nodes, the first count whose traffic crosses the
// network (as the Slurm scaling specs judge it), or at the fewest nodes
// when none ran on 2. Repeated runs at one count contribute their median;
// failed runs none.
func scalingGroups(runs []results.Run) []scaling {
	type key struct{ suite, op, mode string }
	var order []key
	by := map[key]map[int][]results.Run{}
	for _, r := range runs {
		if r.Error != "" || len(r.Nodes) == 0 {
			continue
		}
		k := key{r.Suite, r.Op, r.Mode}
		if by[k] == nil {
			by[k] = map[int][]results.Run{}
			order = append(order, k)
		}
		by[k][len(r.Nodes)] = append(by[k][len(r.Nodes)], r)
	}
	var out []scaling
	for _, k := range order {
		if len(by[k]) < 2 {
			continue
		}
		g := scaling{Suite: k.suite, Op: k.op, Mode: k.mode}
		var counts []int
		for n := range by[k] {
			counts = append(counts, n)
		}
		sort.Ints(counts)
		g.Ref = counts[0]
		if _, ok := by[k][2]; ok {
			g.Ref = 2
		}
		var ref float64
		for _, n := range counts {
			rs := by[k][n]
			bws := make([]float64, len(rs))
			ranks := 0
			var band *results.Band
			for i, r := range rs {
				bws[i] = r.BusBW
				ranks = max(ranks, r.Ranks)
				if band == nil {
					band = r.Baseline
				}
			}
			sort.Float64s(bws)
			med := bws[len(bws)/2]
			if len(bws)%2 == 0 {
				med = (bws[len(bws)/2-1] + bws[len(bws)/2]) / 2
			}
			if n == g.Ref {
				ref = med
			}
			g.Points = append(g.Points, scalePoint{Nodes: n, Ranks: ranks, BusBW: med, Baseline: band})
		}
		for i, p := range g.Points {
			if p.Nodes >= g.Ref && ref > 0 {
				g.Points[i].Efficiency, g.Points[i].HasEff = p.BusBW/ref*100, true
			}
		}
		out = append(out, g)
	}
	return out
}

func (g scaling) name() string {
	name := g.Op
	if g.Mode != "direct" && g.Mode != "" {
		name += ", " + g.Mode
	}
	if g.Suite != "" && g.Suite != "scale" {
		name += " (" + g.Suite + ")"
	}
	return name
}

// scalingCharts draws bus bandwidth (with the baseline band at each node
// count that has one) and efficiency against node count, one line per
// group.
func scalingCharts(groups []scaling) []*lineChart {
	lo, hi := math.Inf(1), math.Inf(-1)
	counts := map[int]bool{}
	bwMax, effMax := 0.0, 100.0
	for _, g := range groups {
		for _, p := range g.Points {
			l := math.Log2(float64(p.Nodes))
			lo, hi = min(lo, l), max(hi, l)
			counts[p.Nodes] = true
			bwMax = max(bwMax, p.BusBW)
			if p.Baseline != nil {
				bwMax = max(bwMax, p.Baseline.High)
			}
			effMax = max(effMax, p.Efficiency)
		}
	}
	xlo, xhi := lo-0.4, hi+0.4
	var ns []int
	for n := range counts {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	xAt := func(c *lineChart, l float64) float64 { return c.F.L + (l-xlo)/(xhi-xlo)*c.F.W() }
	x := func(c *lineChart, n int) float64 { return xAt(c, math.Log2(float64(n))) }
	newChart := func(title, ylabel string, top float64, ticks []float64) *lineChart {
		c := &lineChart{Title: title}
		c.W, c.H = 640, 300
		c.F = frame{L: 58, T: 12, R: 624, B: 252}
		c.XLabel, c.YLabel = "nodes (log2)", ylabel
		for _, n := range ns {
			c.XTicks = append(c.XTicks, tick{Pos: x(c, n), Label: strconv.Itoa(n)})
		}
		for _, v := range ticks {
			c.YTicks = append(c.YTicks, tick{Pos: c.F.B - v/top*c.F.H(), Label: tickLabel(v)})
		}
		return c
	}
	bwTop, bwT := niceTicks(bwMax)
	effTop, effT := niceTicks(effMax)
	bw := newChart("Bus bandwidth by node count", "busbw GB/s", bwTop, bwT)
	eff := newChart("Scaling efficiency by node count", "efficiency %", effTop, effT)
	bwY := func(v float64) float64 { return bw.F.B - v/bwTop*bw.F.H() }
	effY := func(v float64) float64 { return eff.F.B - v/effTop*eff.F.H() }
	eff.Refs = []refLine{{Y: effY(100), Label: "100 %"}}
	var legend []legendItem
	for i, g := range groups {
		sb := series{Name: g.name(), Color: color(i)}
		se := sb
		var pb, pe []string
		for _, p := range g.Points {
			xb, yb := x(bw, p.Nodes), bwY(p.BusBW)
			pb = append(pb, px(xb)+","+px(yb))
			sb.Markers = append(sb.Markers, marker{X: xb, Y: yb, Title: fmt.Sprintf("%s on %s: %s GB/s", g.name(), nodesWord(p.Nodes), fixed(p.BusBW, 2))})
			if b := p.Baseline; b != nil {
				l := math.Log2(float64(p.Nodes))
				x0, x1 := xAt(bw, l-0.12), xAt(bw, l+0.12)
				bd, _ := bandOf(b, x0, x1, bwY, g.name()+" on "+nodesWord(p.Nodes))
				bw.Bands = append(bw.Bands, bd)
			}
			if !p.HasEff {
				continue
			}
			xe, ye := x(eff, p.Nodes), effY(p.Efficiency)
			pe = append(pe, px(xe)+","+px(ye))
			se.Markers = append(se.Markers, marker{X: xe, Y: ye, Title: fmt.Sprintf("%s on %s: %s %%", g.name(), nodesWord(p.Nodes), fixed(p.Efficiency, 1))})
		}
		sb.Points, se.Points = strings.Join(pb, " "), strings.Join(pe, " ")
		bw.Series = append(bw.Series, sb)
		eff.Series = append(eff.Series, se)
		legend = append(legend, legendItem{Name: g.name(), Color: sb.Color})
		last := g.Points[len(g.Points)-1]
		eff.Caption = append(eff.Caption, fmt.Sprintf("%s: %s %% at %s, relative to %s", g.name(), fixed(last.Efficiency, 1), nodesWord(last.Nodes), nodesWord(g.Ref)))
	}
	bw.Caption = []string{"Bus bandwidth is normalised for the rank count, so perfect scaling keeps it flat."}
	for _, l := range bandLegend(bw.Bands) {
		if l.Band {
			bw.Caption = append(bw.Caption, "Shaded: the baseline band at each node count that has one; dashed: expected.")
		} else {
			bw.Caption = append(bw.Caption, "Dashed line: a one-sided baseline, the bound busbw must not fall below.")
		}
	}
	eff.Caption = append(eff.Caption, "Efficiency is busbw over busbw at 2 nodes, the first count whose traffic crosses the network (or the fewest nodes run).")
	bwLegend := append([]legendItem(nil), legend...)
	bwLegend = append(bwLegend, bandLegend(bw.Bands)...)
	bw.legend(bwLegend, drawn(bw.Series, bw.Bands))
	eff.legend(legend, drawn(eff.Series, []band{{X: eff.F.L, W: eff.F.W(), Y: eff.Refs[0].Y}}))
	return []*lineChart{bw, eff}
}
