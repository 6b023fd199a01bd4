package reports

import "github.com/gdrcheck/gdrcheck/results"

// barChart is direct vs forced fallback for one op on one node.
type barChart struct {
	Title, Caption string
	W, H           float64
	BW, CPU        panel
	Rows           []barRow
}

type panel struct {
	X, W, Top, Bottom float64
	Title             string
	Ticks             []tick
}

type barRow struct {
	Mode, Sub       string // mode, and the transport NCCL took
	Y, LabelY, H    float64
	BW, CPU         bar
	Verdict, VClass string // the negative spec's verdict on the mode
	// GDR is the GPUDirect RDMA proof's verdict on the mode it forces,
	// shown apart from detection (gdrProof).
	GDR, GClass string
	Error       string
	Color       string
	RatioText   string
}

type bar struct {
	W, TextX     float64
	Text, Anchor string
	Fill         string
	Missing      string // why there is no bar
}

// fallbackCharts draws, per op that ran under a forced mode, a bar per
// mode: bus bandwidth with the ratio to direct, and host CPU use.
func fallbackCharts(n results.Node) []*barChart {
	var charts []*barChart
	for _, op := range opOrder(n.Runs) {
		var direct *results.Run
		var forced []results.Run
		for i, r := range n.Runs {
			switch {
			case r.Op != op:
			case r.Mode == "direct":
				if direct == nil {
					direct = &n.Runs[i]
				}
			default:
				forced = append(forced, r)
			}
		}
		if len(forced) == 0 {
			continue
		}
		rows := forced
		if direct != nil {
			rows = append([]results.Run{*direct}, forced...)
		}
		charts = append(charts, barChartOf(n, op, rows))
	}
	return charts
}

func barChartOf(n results.Node, op string, runs []results.Run) *barChart {
	const rowH, barH, top = 46.0, 22.0, 30.0
	c := &barChart{
		Title:   op + ": direct vs forced fallback",
		Caption: "Bus bandwidth at the largest message size each run reached, its ratio to the direct run, and the host CPU the run used (with its CPU seconds per GB of bus traffic where the benchmark's process tree was measured). A forced fallback far below direct shows that gdrcheck can tell the paths apart (\"fallback detected\"); that says nothing of GPUDirect RDMA. Whether NCCL, forced onto the network, reached GPU memory through the NICs is the GPUDirect RDMA proof, shown apart on the mode it reads.",
		W:       1000,
	}
	c.BW = panel{X: 250, W: 480, Top: top, Title: "busbw GB/s"}
	c.CPU = panel{X: 790, W: 190, Top: top, Title: "host CPU %"}
	bwMax, cpuMax := 0.0, 0.0
	for _, r := range runs {
		bwMax = max(bwMax, r.BusBW)
		if r.CPUPct != nil {
			cpuMax = max(cpuMax, *r.CPUPct)
		}
	}
	bwTop, bwTicks := niceTicks(bwMax)
	cpuTop, cpuTicks := niceTicks(max(cpuMax, 5))
	for _, v := range bwTicks {
		c.BW.Ticks = append(c.BW.Ticks, tick{Pos: c.BW.X + v/bwTop*c.BW.W, Label: tickLabel(v)})
	}
	for _, v := range cpuTicks {
		c.CPU.Ticks = append(c.CPU.Ticks, tick{Pos: c.CPU.X + v/cpuTop*c.CPU.W, Label: tickLabel(v)})
	}
	for i, r := range runs {
		y := top + 8 + float64(i)*rowH
		row := barRow{Mode: clip(dash(r.Mode), 22), Sub: clip(r.Transport, 18), Y: y, H: barH, LabelY: y + barH/2 + 4, Color: color(i)}
		if r.Mode == "direct" {
			row.RatioText = "reference"
		} else {
			row.Verdict = fallbackVerdict(n, r.Mode)
			if row.Verdict == "-" {
				row.Verdict = r.PathVerdict
			}
			row.VClass = cellClass(row.Verdict)
			switch row.Verdict {
			case "detected":
				row.Verdict = "fallback detected"
			case "NOT DETECTED":
				row.Verdict = "fallback NOT DETECTED"
			}
			row.GDR, row.GClass = gdrProof(n, r.Mode)
			if r.RatioToDirect != nil {
				row.RatioText = fixed(*r.RatioToDirect, 3) + "× direct"
			}
		}
		if r.Error != "" {
			row.Error = clip("error: "+firstLine(r.Error), 70)
		}
		label := fixed(r.BusBW, 2) + " GB/s"
		if row.RatioText != "" {
			label += "  ·  " + row.RatioText
		}
		row.BW = barOf(c.BW, r.BusBW/bwTop, label, row.Color)
		if row.Error != "" {
			row.BW.TextX, row.BW.Anchor = c.BW.X+row.BW.W+6, "start"
		}
		if r.CPUPct != nil {
			label := fixed(*r.CPUPct, 1) + " %"
			if v := cpuPerGB(r); v != "-" {
				label += " · " + v + " s/GB"
			}
			row.CPU = barOf(c.CPU, *r.CPUPct/cpuTop, label, "#8a8f98")
		} else {
			row.CPU = bar{Missing: "not measured", TextX: c.CPU.X + 4, Anchor: "start"}
		}
		c.Rows = append(c.Rows, row)
	}
	c.BW.Bottom = top + 8 + float64(len(runs))*rowH
	c.CPU.Bottom = c.BW.Bottom
	c.H = c.BW.Bottom + 22
	return c
}

// barOf places a bar of a fraction of the panel and its label: inside the
// bar's end when the bar is long, after it when short.
func barOf(p panel, frac float64, text, fill string) bar {
	frac = min(max(frac, 0), 1)
	b := bar{W: frac * p.W, Text: text, Fill: fill}
	if approxTextWidth(text)+12 < b.W {
		b.TextX, b.Anchor = p.X+b.W-6, "end"
	} else {
		b.TextX, b.Anchor = p.X+b.W+6, "start"
	}
	return b
}

// opOrder lists the ops of runs in the order they first appear.
func opOrder(runs []results.Run) []string {
	var ops []string
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.Op] {
			seen[r.Op] = true
			ops = append(ops, r.Op)
		}
	}
	return ops
}
