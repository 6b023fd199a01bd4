package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// sizeChart is bus bandwidth against message size for the runs of one op.
type sizeChart struct {
	axes
	Title   string
	Caption []string
	Bands   []band
	Series  []series
}

// sizeCharts draws one chart per op (across nodes, per suite and op): every
// run with points is a series (on a node the direct run first, across
// nodes the fewest nodes first), and every run compared with a baseline
// adds its band at the size it was compared at, the largest it ran.
func sizeCharts(runs []results.Run, multiNode bool) []*sizeChart {
	type key struct{ suite, op string }
	var order []key
	by := map[key][]results.Run{}
	for _, r := range runs {
		if r.Unit != "" {
			continue // perftest runs are in Gb/s: their table says it
		}
		if r.Suite == "mpi" && r.BusBW == 0 {
			continue // an osu_latency run: no bandwidth to draw, its table has the latency
		}
		k := key{op: r.Op}
		if multiNode {
			k.suite = r.Suite
		}
		if by[k] == nil {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	var charts []*sizeChart
	for _, k := range order {
		of := by[k]
		sort.SliceStable(of, func(i, j int) bool {
			if multiNode {
				return len(of[i].Nodes) < len(of[j].Nodes)
			}
			return of[i].Mode == "direct" && of[j].Mode != "direct"
		})
		if c := sizeChartOf(k.suite, k.op, of, multiNode); c != nil {
			charts = append(charts, c)
		}
	}
	return charts
}

// runNames names the series of a chart: the forced mode on a node; across
// nodes the node count, numbered when a count ran more than once on the
// same nodes, or the nodes themselves when runs at one count used
// different nodes (pairwise).
func runNames(runs []results.Run, multiNode bool) []string {
	names := make([]string, len(runs))
	byCount := map[int][]int{}
	for i, r := range runs {
		byCount[len(r.Nodes)] = append(byCount[len(r.Nodes)], i)
	}
	for i, r := range runs {
		if !multiNode {
			names[i] = dash(r.Mode)
			continue
		}
		same := byCount[len(r.Nodes)]
		names[i] = nodesWord(len(r.Nodes))
		if len(same) > 1 {
			differ := false
			for _, j := range same {
				differ = differ || strings.Join(runs[j].Nodes, ",") != strings.Join(r.Nodes, ",")
			}
			if differ {
				names[i] = strings.Join(r.Nodes, "+")
			} else {
				for k, j := range same {
					if j == i {
						names[i] += " #" + strconv.Itoa(k+1)
					}
				}
			}
		}
		if r.Mode != "direct" && r.Mode != "" {
			names[i] += ", " + r.Mode
		}
	}
	return names
}

// maxLegend caps a legend; the series past it are summed up in one line.
const maxLegend = 8

func sizeChartOf(suite, op string, runs []results.Run, multiNode bool) *sizeChart {
	lo, hi := math.Inf(1), math.Inf(-1)
	ymax := 0.0
	for _, r := range runs {
		for _, p := range r.Points {
			if p.Size <= 0 {
				continue
			}
			l := math.Log2(float64(p.Size))
			lo, hi = min(lo, l), max(hi, l)
			ymax = max(ymax, p.BusBW)
		}
		if r.Baseline != nil {
			ymax = max(ymax, r.Baseline.High, r.Baseline.Expected)
		}
	}
	if math.IsInf(lo, 1) {
		return nil // no run has a size to plot
	}
	tool := op
	if len(runs) > 0 && runs[0].Tool != "" {
		tool = runs[0].Tool
	}
	if suite != "" {
		tool += " (" + suite + ")"
	}
	c := &sizeChart{Title: tool + ": bus bandwidth by message size"}
	c.W, c.H = 640, 330
	c.F = frame{L: 58, T: 12, R: 624, B: 282}
	c.XLabel, c.YLabel = "message size (log2)", "busbw GB/s"
	if len(runs) > 0 && runs[0].Suite == "mpi" {
		// osu_bw measures one pair's bandwidth, not NCCL's bus bandwidth.
		c.Title, c.YLabel = tool+": GPU-to-GPU bandwidth by message size", "GB/s"
	}
	xlo, xhi := lo-0.3, hi+0.6
	if hi-lo < 1 {
		xlo, xhi = lo-1, hi+1
	}
	x := func(size float64) float64 { return c.F.L + (math.Log2(size)-xlo)/(xhi-xlo)*c.F.W() }
	c.XTicks = octaveTicks(xlo, xhi, func(o float64) float64 { return c.F.L + (o-xlo)/(xhi-xlo)*c.F.W() })
	yTop, yt := niceTicks(ymax)
	y := func(v float64) float64 { return c.F.B - v/yTop*c.F.H() }
	for _, v := range yt {
		c.YTicks = append(c.YTicks, tick{Pos: y(v), Label: tickLabel(v)})
	}
	var legend []legendItem
	names := runNames(runs, multiNode)
	for i, r := range runs {
		name := names[i]
		s := series{Name: name, Color: color(i)}
		if !multiNode && r.Mode != "direct" {
			s.Dash = "6 3"
		}
		var pts []string
		for _, p := range r.Points {
			if p.Size <= 0 {
				continue
			}
			cx, cy := x(float64(p.Size)), y(p.BusBW)
			pts = append(pts, px(cx)+","+px(cy))
			s.Markers = append(s.Markers, marker{X: cx, Y: cy, Title: fmt.Sprintf("%s %s: %s GB/s", name, results.SizeString(p.Size), fixed(p.BusBW, 2))})
		}
		what := name
		if r.Transport != "" {
			what += " (" + r.Transport + ")"
		}
		switch {
		case r.Error != "":
			c.Caption = append(c.Caption, what+": error: "+firstLine(r.Error))
		case len(r.Points) > 0:
			last := r.Points[len(r.Points)-1]
			c.Caption = append(c.Caption, fmt.Sprintf("%s: %s GB/s at %s", what, fixed(r.BusBW, 2), results.SizeString(last.Size)))
		}
		if len(pts) == 0 {
			continue
		}
		s.Points = strings.Join(pts, " ")
		c.Series = append(c.Series, s)
		legend = append(legend, legendItem{Name: name, Color: s.Color, Dash: s.Dash})
		if r.Baseline == nil || len(r.Points) == 0 || r.Points[len(r.Points)-1].Size <= 0 {
			continue
		}
		b := r.Baseline
		at := float64(r.Points[len(r.Points)-1].Size)
		x0, x1 := x(at/math.Sqrt2), min(x(at*math.Sqrt2), c.F.R)
		bd, words := bandOf(b, x0, x1, y, name+" at "+results.SizeString(int64(at)))
		c.Bands = append(c.Bands, bd)
		c.Caption = append(c.Caption, words)
	}
	if len(c.Series) == 0 {
		return nil
	}
	if len(legend) > maxLegend {
		more := len(legend) - (maxLegend - 1)
		legend = append(legend[:maxLegend-1], legendItem{Name: fmt.Sprintf("and %d more", more)})
	}
	legend = append(legend, bandLegend(c.Bands)...)
	c.legend(legend, drawn(c.Series, c.Bands))
	return c
}
