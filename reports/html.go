package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

// WriteHTML writes the results as one self-contained HTML page for people:
// the run and its verdict, per node the facts, suites, failures and plots
// (bus bandwidth against message size with the baseline band, direct vs
// forced fallback, scaling by node count when there are multi-node runs),
// then the comparison tables. The page opens offline: CSS is inline and
// the plots are inline SVG drawn here, with no script, font or link to
// fetch. Everything that comes from the results is escaped by
// html/template, and the output depends on nothing but r.
func WriteHTML(w io.Writer, r *results.Results) error {
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, newHTMLPage(r)); err != nil {
		return fmt.Errorf("rendering HTML: %w", err)
	}
	// The definitions after </html> leave blank lines behind.
	page := append(bytes.TrimRight(buf.Bytes(), "\n"), '\n')
	_, err := w.Write(page)
	return err
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"px":  px,
	"sub": func(a, b float64) float64 { return a - b },
}).Parse(htmlSource))

// exitMeaning says what each exit code tells a CI gate.
var exitMeaning = map[int]string{
	results.ExitPassed:      "every spec passed",
	results.ExitFailed:      "a spec failed",
	results.ExitUnevaluable: "a node could not be evaluated or never reported",
}

type htmlPage struct {
	Version  string
	Command  string
	Suites   string
	Started  string
	Finished string
	Duration string
	Exit     int
	Verdict  string // PASS, FAIL, UNEVALUABLE
	Class    string // good, bad
	Meaning  string
	Totals   results.Counts
	Nodes    []htmlNode
	Across   []*sizeChart // busbw vs size of the multi-node runs
	Scaling  []*lineChart // busbw and efficiency vs node count
	Tables   []htmlTable
}

type htmlNode struct {
	ID       string // anchor; names from results never become ids
	Name     string
	Status   string
	Class    string
	Reason   string
	Profile  string
	Facts    []results.Fact
	Counts   results.Counts
	Suites   []htmlSuite
	Failures []htmlSpec
	Warnings []htmlSpec
	Skipped  []htmlSpec
	Charts   []*sizeChart
	Bars     []*barChart
}

type htmlSuite struct {
	Name                    string
	Passed, Failed, Skipped int
	Status, Class           string
}

type htmlSpec struct {
	Suite, Name, State, Message, Location, Output string
}

type htmlTable struct {
	Title  string
	Header []string
	Rows   [][]htmlCell
}

type htmlCell struct {
	Text, Class string
}

func newHTMLPage(r *results.Results) *htmlPage {
	p := &htmlPage{
		Version:  dash(r.Tool.Version),
		Command:  commandLine(r.Tool.Args),
		Suites:   dash(strings.Join(r.Tool.Suites, ", ")),
		Started:  stamp(r.Started),
		Finished: stamp(r.Finished),
		Duration: "-",
		Exit:     r.ExitCode(),
	}
	if !r.Started.IsZero() && !r.Finished.IsZero() {
		p.Duration = r.Finished.Sub(r.Started).Round(100 * time.Millisecond).String()
	}
	switch p.Exit {
	case results.ExitPassed:
		p.Verdict, p.Class = "PASS", "good"
	case results.ExitFailed:
		p.Verdict, p.Class = "FAIL", "bad"
	default:
		p.Verdict, p.Class = "UNEVALUABLE", "bad"
	}
	p.Meaning = exitMeaning[p.Exit]
	for i, n := range r.Nodes {
		hn := newHTMLNode(n)
		hn.ID = "node-" + strconv.Itoa(i)
		c := hn.Counts
		p.Totals.Tests += c.Tests
		p.Totals.Passed += c.Passed
		p.Totals.Failed += c.Failed
		p.Totals.Skipped += c.Skipped
		p.Nodes = append(p.Nodes, hn)
	}
	p.Across = sizeCharts(r.Runs, true)
	groups := scalingGroups(r.Runs)
	if len(groups) > 0 {
		p.Scaling = scalingCharts(groups)
	}
	// The tables gdrcheck run prints, in its order.
	for _, t := range []Table{SummaryTable(r), ScalingTable(r), FallbackTable(r), ComparisonTable(r), RDMATable(r), ContainerTable(r), FailuresTable(r)} {
		if len(t.Rows) == 0 {
			continue
		}
		p.Tables = append(p.Tables, htmlTableOf(t))
	}
	return p
}

func newHTMLNode(n results.Node) htmlNode {
	hn := htmlNode{
		Name: n.Name, Status: n.Status, Reason: n.Reason, Counts: n.Counts(),
		Profile: n.Profile, Class: "good",
	}
	if n.Status != results.NodeEvaluated {
		hn.Class = "bad"
		hn.Counts.Tests++
		hn.Counts.Failed++
	} else if hn.Counts.Failed > 0 {
		hn.Class = "bad"
	}
	for _, f := range n.Facts {
		if f.Name == "profile" && f.Value == n.Profile {
			continue // shown apart
		}
		hn.Facts = append(hn.Facts, f)
	}
	for _, s := range n.Suites {
		hs := htmlSuite{Name: s.Name, Status: "PASS", Class: "good"}
		for _, sp := range s.Specs {
			one := htmlSpec{Suite: s.Name, Name: sp.Name, State: sp.State, Message: sp.Message, Location: sp.Location, Output: truncate(sp.Output, 16<<10)}
			switch sp.State {
			case results.StatePassed:
				hs.Passed++
				for _, w := range sp.Warnings() {
					one.Message = w
					hn.Warnings = append(hn.Warnings, one)
				}
			case results.StateSkipped, results.StatePending:
				hs.Skipped++
				hn.Skipped = append(hn.Skipped, one)
			default:
				hs.Failed++
				hn.Failures = append(hn.Failures, one)
			}
		}
		if hs.Failed > 0 {
			hs.Status, hs.Class = "FAIL", "bad"
		}
		hn.Suites = append(hn.Suites, hs)
	}
	hn.Charts = sizeCharts(n.Runs, false)
	hn.Bars = fallbackCharts(n)
	return hn
}

// commandLine is the gdrcheck call as a shell would take it back.
func commandLine(args []string) string {
	words := []string{"gdrcheck"}
	for _, a := range args {
		if a == "" || strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./,:=@%+", r))
		}) {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// htmlTableOf marks verdict cells so the page can colour them.
func htmlTableOf(t Table) htmlTable {
	h := htmlTable{Title: t.Title, Header: t.Header}
	for _, row := range t.Rows {
		var cells []htmlCell
		for _, c := range row {
			cells = append(cells, htmlCell{Text: c, Class: cellClass(c)})
		}
		h.Rows = append(h.Rows, cells)
	}
	return h
}

func cellClass(s string) string {
	switch strings.ToLower(s) {
	case "pass", "passed", "detected", "direct":
		return "good"
	case "fail", "failed", "not detected", "fallback", results.NodeUnevaluable, results.NodeMissing:
		return "bad"
	}
	if strings.HasPrefix(s, "error: ") {
		return "bad"
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return "num"
	}
	return ""
}

// Plot geometry. Every coordinate is in the SVG's own units; the page
// scales the SVG to the column it sits in.

// palette holds series colours that stay apart in print and for the
// common kinds of colour blindness; the first is the direct path.
// The baseline band is green, so no series is.
var palette = []string{"#1f5fa8", "#d1492e", "#7b4fa6", "#e08a00", "#11838f", "#7f5539", "#c2418d", "#4d4d4d"}

func color(i int) string { return palette[i%len(palette)] }

// px formats a coordinate: one decimal, no trailing zero.
func px(v float64) string {
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	if s == "-0" {
		return "0"
	}
	return s
}

type frame struct{ L, T, R, B float64 }

func (f frame) W() float64 { return f.R - f.L }
func (f frame) H() float64 { return f.B - f.T }

// CX and CY are the middle of the frame, where axis titles go.
func (f frame) CX() float64 { return (f.L + f.R) / 2 }
func (f frame) CY() float64 { return (f.T + f.B) / 2 }

type tick struct {
	Pos   float64
	Label string // empty: a minor gridline
}

type series struct {
	Name    string
	Color   string
	Dash    string // stroke-dasharray, empty for solid
	Points  string // polyline points
	Markers []marker
}

type marker struct {
	X, Y  float64
	Title string
}

type legendItem struct {
	Name, Color string
	Dash        string
	Band        bool
	// Placed by axes.legend: a swatch from X1 to X2 at LineY (a band's
	// from BoxY), the name at TextX, Y.
	X1, X2, TextX, Y, LineY, BoxY float64
}

type band struct {
	X, Y, W, H float64 // Low..High across the compared size
	X2, ExpY   float64 // expected, from X to X2
	Title      string
}

type axes struct {
	W, H           float64
	F              frame
	XTicks, YTicks []tick
	XLabel, YLabel string
	Legend         []legendItem
	LegendX        float64
	LegendY        float64
	LegendW        float64
	LegendH        float64
}

// legend places the legend in the corner of the plot that hides the
// fewest of the points drawn (top left first), and lays out its items.
func (a *axes) legend(items []legendItem, drawn []marker) {
	longest := 0
	for i := range items {
		items[i].Name = clip(items[i].Name, 48)
		longest = max(longest, len([]rune(items[i].Name)))
	}
	a.LegendW = 44 + 6.6*float64(longest)
	a.LegendH = 10 + 17*float64(len(items))
	const pad = 8
	corners := [][2]float64{
		{a.F.L + pad, a.F.T + pad},
		{a.F.R - pad - a.LegendW, a.F.T + pad},
		{a.F.L + pad, a.F.B - pad - a.LegendH},
		{a.F.R - pad - a.LegendW, a.F.B - pad - a.LegendH},
	}
	best := -1
	for _, c := range corners {
		hidden := 0
		for _, m := range drawn {
			if m.X >= c[0]-pad && m.X <= c[0]+a.LegendW+pad && m.Y >= c[1]-pad && m.Y <= c[1]+a.LegendH+pad {
				hidden++
			}
		}
		if best < 0 || hidden < best {
			best = hidden
			a.LegendX, a.LegendY = c[0], c[1]
		}
	}
	for i := range items {
		it := &items[i]
		it.Y = a.LegendY + 15 + float64(i)*17
		it.X1, it.X2, it.TextX = a.LegendX+8, a.LegendX+32, a.LegendX+40
		it.LineY, it.BoxY = it.Y-4, it.Y-10
	}
	a.Legend = items
}

// drawn lists the points of series, with the segments between them
// sampled, and the corners and middle of bands: what a legend must not hide.
func drawn(ss []series, bands []band) []marker {
	var pts []marker
	for _, s := range ss {
		for i, m := range s.Markers {
			pts = append(pts, m)
			if i > 0 {
				p := s.Markers[i-1]
				for _, f := range []float64{0.25, 0.5, 0.75} {
					pts = append(pts, marker{X: p.X + f*(m.X-p.X), Y: p.Y + f*(m.Y-p.Y)})
				}
			}
		}
	}
	for _, b := range bands {
		for _, x := range []float64{b.X, b.X + b.W/2, b.X + b.W} {
			for _, y := range []float64{b.Y, b.Y + b.H/2, b.Y + b.H} {
				pts = append(pts, marker{X: x, Y: y})
			}
		}
	}
	return pts
}

// sizeChart is bus bandwidth against message size for the runs of one op.
type sizeChart struct {
	axes
	Title   string
	Caption []string
	Bands   []band
	Series  []series
}

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
	Error           string
	Color           string
	RatioText       string
}

type bar struct {
	W, TextX     float64
	Text, Anchor string
	Fill         string
	Missing      string // why there is no bar
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
		c.Bands = append(c.Bands, band{
			X: x0, W: x1 - x0, X2: x1, Y: y(b.High), H: y(b.Low) - y(b.High), ExpY: y(b.Expected),
			Title: fmt.Sprintf("%s baseline %s at %s: expected %s, band %s to %s GB/s", name, b.Profile, results.SizeString(int64(at)), fixed(b.Expected, 2), fixed(b.Low, 2), fixed(b.High, 2)),
		})
		c.Caption = append(c.Caption, fmt.Sprintf("baseline %s for %s at %s: expected %s GB/s (shaded %s to %s, dashed: expected)", b.Profile, name, results.SizeString(int64(at)), fixed(b.Expected, 2), fixed(b.Low, 2), fixed(b.High, 2)))
	}
	if len(c.Series) == 0 {
		return nil
	}
	if len(legend) > maxLegend {
		more := len(legend) - (maxLegend - 1)
		legend = append(legend[:maxLegend-1], legendItem{Name: fmt.Sprintf("and %d more", more)})
	}
	if len(c.Bands) > 0 {
		legend = append(legend, legendItem{Name: "baseline band, expected", Color: "#2b8a3e", Band: true})
	}
	c.legend(legend, drawn(c.Series, c.Bands))
	return c
}

// octaveTicks labels powers of two between lo and hi (log2 units): every
// octave when there are few, else every 2nd, 5th or 10th, with a minor
// gridline at each octave between.
func octaveTicks(lo, hi float64, pos func(float64) float64) []tick {
	first, last := int(math.Ceil(lo)), int(math.Floor(hi))
	step := 10
	for _, s := range []int{1, 2, 5, 10} {
		if (last-first)/s+1 <= 7 {
			step = s
			break
		}
	}
	var t []tick
	for o := first; o <= last; o++ {
		if o < 0 || o > 62 {
			continue
		}
		tk := tick{Pos: pos(float64(o))}
		if o%step == 0 {
			tk.Label = results.SizeString(int64(1) << o)
		}
		t = append(t, tk)
	}
	return t
}

// niceTicks returns the axis top and ticks from 0 for values up to v.
func niceTicks(v float64) (float64, []float64) {
	if v <= 0 {
		v = 1
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top := math.Ceil(v*1.04/step) * step
	var t []float64
	for i := 0; float64(i)*step <= top+step/1e6; i++ {
		t = append(t, float64(i)*step)
	}
	return top, t
}

func tickLabel(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
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
	const rowH, barH, top = 40.0, 22.0, 30.0
	c := &barChart{
		Title:   op + ": direct vs forced fallback",
		Caption: "Bus bandwidth at the largest message size each run reached, its ratio to the direct run, and the host CPU the run used. A forced fallback far below direct shows that gdrcheck can tell the paths apart.",
		W:       1000,
	}
	c.BW = panel{X: 190, W: 540, Top: top, Title: "busbw GB/s"}
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
			row.CPU = barOf(c.CPU, *r.CPUPct/cpuTop, fixed(*r.CPUPct, 1)+" %", "#8a8f98")
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

// clip shortens a label drawn in a plot, where text does not wrap; the
// full string stays in the page's captions and tables.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func approxTextWidth(s string) float64 { return 7 * float64(len([]rune(s))) }

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

func nodesWord(n int) string {
	if n == 1 {
		return "1 node"
	}
	return strconv.Itoa(n) + " nodes"
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
				bw.Bands = append(bw.Bands, band{X: x0, W: x1 - x0, X2: x1, Y: bwY(b.High), H: bwY(b.Low) - bwY(b.High), ExpY: bwY(b.Expected),
					Title: fmt.Sprintf("%s on %s: baseline %s expected %s, band %s to %s GB/s", g.name(), nodesWord(p.Nodes), b.Profile, fixed(b.Expected, 2), fixed(b.Low, 2), fixed(b.High, 2))})
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
	if len(bw.Bands) > 0 {
		bw.Caption = append(bw.Caption, "Shaded: the baseline band at each node count that has one; dashed: expected.")
	}
	eff.Caption = append(eff.Caption, "Efficiency is busbw over busbw at 2 nodes, the first count whose traffic crosses the network (or the fewest nodes run).")
	bwLegend := append([]legendItem(nil), legend...)
	if len(bw.Bands) > 0 {
		bwLegend = append(bwLegend, legendItem{Name: "baseline band, expected", Color: "#2b8a3e", Band: true})
	}
	bw.legend(bwLegend, drawn(bw.Series, bw.Bands))
	eff.legend(legend, drawn(eff.Series, []band{{X: eff.F.L, W: eff.F.W(), Y: eff.Refs[0].Y}}))
	return []*lineChart{bw, eff}
}

// htmlSource is the page. It draws what newHTMLPage computed and nothing
// else; every value it prints goes through html/template's escaping.
const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="gdrcheck {{.Version}}">
<title>gdrcheck {{.Verdict}}: {{len .Nodes}} node(s), {{.Started}}</title>
<style>
:root { color-scheme: light; --good: #2b8a3e; --bad: #c92a2a; --line: #d9dde3; --muted: #5c6370; }
* { box-sizing: border-box; }
body { margin: 0; background: #f3f4f6; color: #1d2330; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1340px; margin: 0 auto; padding: 18px 24px 32px; }
h1 { font-size: 22px; margin: 0 0 2px; }
h2 { font-size: 18px; margin: 0 0 8px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
h4 { font-size: 13.5px; margin: 0 0 2px; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 14px 20px; margin-top: 16px; }
header.card { margin-top: 0; border-left: 8px solid var(--good); }
header.card.verdict-bad { border-left-color: var(--bad); }
.badge { display: inline-block; padding: 1px 10px; border-radius: 10px; font-size: 13px; font-weight: 600; color: #fff; vertical-align: 3px; }
.badge.good { background: var(--good); color: #fff; }
.badge.bad { background: var(--bad); color: #fff; }
.exit { font-size: 15px; margin: 2px 0 10px; }
dl.meta { display: grid; grid-template-columns: max-content max-content max-content 1fr; gap: 2px 14px; margin: 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0 28px 0 0; }
nav { margin-top: 8px; }
nav a { margin-right: 14px; color: inherit; }
.cols { display: flex; flex-wrap: wrap; gap: 10px 28px; align-items: flex-start; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 2px 10px 2px 0; vertical-align: top; }
table.kv th { color: var(--muted); font-weight: normal; }
table.data { margin: 6px 0 16px; }
table.data caption { text-align: left; font-weight: 600; padding: 4px 0; }
table.data th { border-bottom: 2px solid var(--line); padding: 3px 14px 3px 0; }
table.data td { border-bottom: 1px solid #eceef1; padding: 3px 14px 3px 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.good { color: var(--good); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
.muted { color: var(--muted); }
.failure { border-left: 4px solid var(--bad); background: #fff5f5; padding: 6px 12px; margin: 6px 0; }
.warning { border-left: 4px solid #e08a00; background: #fff8eb; padding: 4px 12px; margin: 4px 0; }
.failure .where, .warning .where { color: var(--muted); font-size: 12.5px; }
.charts { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 14px; }
figure { margin: 0; border: 1px solid #e3e6ea; border-radius: 4px; padding: 8px 10px; break-inside: avoid; page-break-inside: avoid; }
figure.wide { margin-top: 14px; }
figcaption { font-size: 12px; color: var(--muted); }
figcaption p { margin: 2px 0 0; }
svg { display: block; width: 100%; height: auto; }
svg text { font-family: inherit; font-size: 11.5px; fill: #2e3440; }
svg .plot { fill: #fff; stroke: #8f96a1; }
svg .gl { stroke: #e4e7eb; }
svg .gl.minor { stroke: #f2f3f5; }
svg .axis { font-size: 12px; fill: var(--muted); }
svg .series { fill: none; stroke-width: 2.2; stroke-linejoin: round; }
svg .band { fill: #2b8a3e; fill-opacity: 0.16; stroke: #2b8a3e; stroke-opacity: 0.55; }
svg .expected { stroke: #2b8a3e; stroke-width: 2; stroke-dasharray: 5 3; }
svg .ref { stroke: #8f96a1; stroke-dasharray: 4 3; }
svg .axisline { stroke: #8f96a1; }
svg .legend { fill: #fff; fill-opacity: 0.9; stroke: #d0d4da; }
svg .mode { font-size: 13px; font-weight: 600; }
svg .sub { font-size: 11px; fill: var(--muted); }
svg .in { fill: #fff; font-weight: 600; }
svg .out { font-weight: 600; }
svg .err { fill: var(--bad); font-weight: 600; }
svg tspan.good { fill: var(--good); }
svg tspan.bad { fill: var(--bad); }
footer { margin-top: 18px; color: var(--muted); font-size: 12px; }
@media (max-width: 900px) { .charts { grid-template-columns: 1fr; } dl.meta { grid-template-columns: max-content 1fr; } }
@media print {
  body { background: #fff; font-size: 11pt; }
  main { max-width: none; padding: 0; }
  .card { border: none; border-radius: 0; padding: 0; margin-top: 14pt; }
  header.card { border-left: none; }
  nav { display: none; }
  section.node + section.node { break-before: page; }
  .failure, .warning, table.data tr { break-inside: avoid; }
}
</style>
</head>
<body>
<main>
<header class="card verdict-{{.Class}}">
<h1>gdrcheck report <span class="badge {{.Class}}">{{.Verdict}}</span></h1>
<p class="exit"><strong class="{{.Class}}">exit {{.Exit}}</strong>: {{.Meaning}}. {{.Totals.Tests}} specs on {{len .Nodes}} node(s): {{.Totals.Passed}} passed, {{.Totals.Failed}} failed, {{.Totals.Skipped}} skipped.</p>
<dl class="meta">
<dt>tool</dt><dd>gdrcheck {{.Version}}</dd>
<dt>suites</dt><dd>{{.Suites}}</dd>
<dt>started</dt><dd>{{.Started}}</dd>
<dt>finished</dt><dd>{{.Finished}} ({{.Duration}})</dd>
<dt>command</dt><dd style="grid-column: span 3"><code>{{.Command}}</code></dd>
</dl>
{{- if gt (len .Nodes) 1}}
<nav>{{range .Nodes}}<a href="#{{.ID}}">{{.Name}}</a> {{end}}</nav>
{{- end}}
</header>
{{range .Nodes}}
<section class="card node" id="{{.ID}}">
<h2>{{.Name}} <span class="badge {{.Class}}">{{.Status}}</span>{{if .Profile}} <span class="muted">baseline profile {{.Profile}}</span>{{end}}</h2>
{{- if .Reason}}
<div class="failure"><pre>{{.Reason}}</pre></div>
{{- end}}
<div class="cols">
{{- if .Facts}}
<table class="kv facts">
{{- range .Facts}}
<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- if .Suites}}
<table class="data suites">
<thead><tr><th>suite</th><th>passed</th><th>failed</th><th>skipped</th><th>status</th></tr></thead>
<tbody>
{{- range .Suites}}
<tr><td>{{.Name}}</td><td class="num">{{.Passed}}</td><td class="num">{{.Failed}}</td><td class="num">{{.Skipped}}</td><td class="{{.Class}}">{{.Status}}</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
</div>
{{- if .Failures}}
<h3>Failures</h3>
{{- range .Failures}}
<div class="failure">
<div><strong>{{.Name}}</strong> <span class="where">{{.Suite}} · {{.State}}{{if .Location}} · {{.Location}}{{end}}</span></div>
<pre>{{.Message}}</pre>
{{- if .Output}}
<details><summary>output</summary><pre>{{.Output}}</pre></details>
{{- end}}
</div>
{{- end}}
{{- end}}
{{- if .Warnings}}
<h3>Warnings</h3>
{{- range .Warnings}}
<div class="warning">{{.Message}} <span class="where">{{.Suite}} · {{.Name}}</span></div>
{{- end}}
{{- end}}
{{- if .Charts}}
<h3>Bus bandwidth by message size</h3>
<div class="charts">
{{- range .Charts}}{{template "size" .}}{{end}}
</div>
{{- end}}
{{- range .Bars}}{{template "bars" .}}{{end}}
{{- if .Skipped}}
<h3>Skipped</h3>
<table class="data skipped">
<thead><tr><th>suite</th><th>spec</th><th>reason</th></tr></thead>
<tbody>
{{- range .Skipped}}
<tr><td>{{.Suite}}</td><td>{{.Name}}</td><td>{{.Message}}</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
</section>
{{- end}}
{{- if or .Across .Scaling}}
<section class="card across">
<h2>Across nodes</h2>
{{- if .Scaling}}
<h3>Scaling by node count</h3>
<div class="charts scaling">
{{- range .Scaling}}{{template "line" .}}{{end}}
</div>
{{- end}}
{{- if .Across}}
<h3>Bus bandwidth by message size</h3>
<div class="charts">
{{- range .Across}}{{template "size" .}}{{end}}
</div>
{{- end}}
</section>
{{- end}}
<section class="card tables">
<h2>Tables</h2>
{{- range .Tables}}
<table class="data">
<caption>{{.Title}}</caption>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- end}}
</section>
<footer>gdrcheck {{.Version}}. Made from results.json alone; <code>gdrcheck report DIR --format html</code> rebuilds it.</footer>
</main>
</body>
</html>
{{define "axes"}}
<rect class="plot" x="{{px .F.L}}" y="{{px .F.T}}" width="{{px .F.W}}" height="{{px .F.H}}"/>
{{- range .XTicks}}
<line class="gl{{if not .Label}} minor{{end}}" x1="{{px .Pos}}" x2="{{px .Pos}}" y1="{{px $.F.T}}" y2="{{px $.F.B}}"/>
{{- if .Label}}<text x="{{px .Pos}}" y="{{px $.F.B}}" dy="16" text-anchor="middle">{{.Label}}</text>{{end}}
{{- end}}
{{- range .YTicks}}
<line class="gl" x1="{{px $.F.L}}" x2="{{px $.F.R}}" y1="{{px .Pos}}" y2="{{px .Pos}}"/>
<text x="{{px $.F.L}}" dx="-6" y="{{px .Pos}}" dy="4" text-anchor="end">{{.Label}}</text>
{{- end}}
<rect class="plot" x="{{px .F.L}}" y="{{px .F.T}}" width="{{px .F.W}}" height="{{px .F.H}}" fill-opacity="0"/>
<text class="axis" x="{{px .F.CX}}" y="{{px .H}}" dy="-6" text-anchor="middle">{{.XLabel}}</text>
<text class="axis" transform="translate(14 {{px .F.CY}}) rotate(-90)" text-anchor="middle">{{.YLabel}}</text>
{{- end}}
{{define "legend"}}
{{- if .Legend}}
<g class="legend-box">
<rect class="legend" x="{{px .LegendX}}" y="{{px .LegendY}}" width="{{px .LegendW}}" height="{{px .LegendH}}" rx="3"/>
{{- range .Legend}}
{{- if .Band}}
<rect class="band key" x="{{px .X1}}" y="{{px .BoxY}}" width="{{px (sub .X2 .X1)}}" height="12"/>
<line class="expected" x1="{{px .X1}}" x2="{{px .X2}}" y1="{{px .LineY}}" y2="{{px .LineY}}"/>
{{- else if .Color}}
<line x1="{{px .X1}}" x2="{{px .X2}}" y1="{{px .LineY}}" y2="{{px .LineY}}" stroke="{{.Color}}" stroke-width="2.6"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}/>
{{- end}}
<text x="{{px .TextX}}" y="{{px .Y}}">{{.Name}}</text>
{{- end}}
</g>
{{- end}}
{{- end}}
{{define "size"}}
<figure class="size">
<h4>{{.Title}}</h4>
<svg class="plot size" viewBox="0 0 {{px .W}} {{px .H}}" role="img" aria-label="{{.Title}}">
{{- template "axes" .}}
{{- range .Bands}}
<rect class="band" x="{{px .X}}" y="{{px .Y}}" width="{{px .W}}" height="{{px .H}}"><title>{{.Title}}</title></rect>
<line class="expected" x1="{{px .X}}" x2="{{px .X2}}" y1="{{px .ExpY}}" y2="{{px .ExpY}}"/>
{{- end}}
{{- range .Series}}
<polyline class="series" data-series="{{.Name}}" points="{{.Points}}" stroke="{{.Color}}"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}/>
{{- $c := .Color}}
{{- range .Markers}}
<circle cx="{{px .X}}" cy="{{px .Y}}" r="2.4" fill="{{$c}}"><title>{{.Title}}</title></circle>
{{- end}}
{{- end}}
{{- template "legend" .}}
</svg>
<figcaption>{{range .Caption}}<p>{{.}}</p>{{end}}</figcaption>
</figure>
{{- end}}
{{define "line"}}
<figure class="line">
<h4>{{.Title}}</h4>
<svg class="plot line" viewBox="0 0 {{px .W}} {{px .H}}" role="img" aria-label="{{.Title}}">
{{- template "axes" .}}
{{- range .Refs}}
<line class="ref" x1="{{px $.F.L}}" x2="{{px $.F.R}}" y1="{{px .Y}}" y2="{{px .Y}}"/>
<text x="{{px $.F.R}}" dx="-4" y="{{px .Y}}" dy="-4" text-anchor="end" class="axis">{{.Label}}</text>
{{- end}}
{{- range .Bands}}
<rect class="band" x="{{px .X}}" y="{{px .Y}}" width="{{px .W}}" height="{{px .H}}"><title>{{.Title}}</title></rect>
<line class="expected" x1="{{px .X}}" x2="{{px .X2}}" y1="{{px .ExpY}}" y2="{{px .ExpY}}"/>
{{- end}}
{{- range .Series}}
<polyline class="series" data-series="{{.Name}}" points="{{.Points}}" stroke="{{.Color}}"/>
{{- $c := .Color}}
{{- range .Markers}}
<circle cx="{{px .X}}" cy="{{px .Y}}" r="3.5" fill="{{$c}}"><title>{{.Title}}</title></circle>
{{- end}}
{{- end}}
{{- template "legend" .}}
</svg>
<figcaption>{{range .Caption}}<p>{{.}}</p>{{end}}</figcaption>
</figure>
{{- end}}
{{define "bars"}}
<figure class="wide bars">
<h4>{{.Title}}</h4>
<svg class="plot bars" viewBox="0 0 {{px .W}} {{px .H}}" role="img" aria-label="{{.Title}}">
{{- template "panel" .BW}}
{{- template "panel" .CPU}}
{{- range .Rows}}
<g class="bar" data-mode="{{.Mode}}">
<text class="mode" x="{{px $.BW.X}}" dx="-12" y="{{px .Y}}" dy="10" text-anchor="end">{{.Mode}}</text>
<text class="sub" x="{{px $.BW.X}}" dx="-12" y="{{px .Y}}" dy="23" text-anchor="end">{{.Sub}}{{if and .Sub .Verdict}} · {{end}}{{if .Verdict}}<tspan class="{{.VClass}}">{{.Verdict}}</tspan>{{end}}</text>
<rect x="{{px $.BW.X}}" y="{{px .Y}}" width="{{px .BW.W}}" height="{{px .H}}" fill="{{.BW.Fill}}"><title>{{.Mode}}: {{.BW.Text}}</title></rect>
{{- if .Error}}
<text class="err" x="{{px .BW.TextX}}" y="{{px .LabelY}}">{{.Error}}</text>
{{- else}}
<text class="{{if eq .BW.Anchor "end"}}in{{else}}out{{end}}" x="{{px .BW.TextX}}" y="{{px .LabelY}}" text-anchor="{{.BW.Anchor}}">{{.BW.Text}}</text>
{{- end}}
{{- if .CPU.Missing}}
<text class="sub" x="{{px .CPU.TextX}}" y="{{px .LabelY}}">{{.CPU.Missing}}</text>
{{- else}}
<rect x="{{px $.CPU.X}}" y="{{px .Y}}" width="{{px .CPU.W}}" height="{{px .H}}" fill="{{.CPU.Fill}}"><title>{{.Mode}}: host CPU {{.CPU.Text}}</title></rect>
<text class="{{if eq .CPU.Anchor "end"}}in{{else}}out{{end}}" x="{{px .CPU.TextX}}" y="{{px .LabelY}}" text-anchor="{{.CPU.Anchor}}">{{.CPU.Text}}</text>
{{- end}}
</g>
{{- end}}
</svg>
<figcaption><p>{{.Caption}}</p></figcaption>
</figure>
{{- end}}
{{define "panel"}}
<text class="axis" x="{{px .X}}" y="{{px .Top}}" dy="-10">{{.Title}}</text>
{{- range .Ticks}}
<line class="gl" x1="{{px .Pos}}" x2="{{px .Pos}}" y1="{{px $.Top}}" y2="{{px $.Bottom}}"/>
<text x="{{px .Pos}}" y="{{px $.Bottom}}" dy="15" text-anchor="middle">{{.Label}}</text>
{{- end}}
<line class="axisline" x1="{{px .X}}" x2="{{px .X}}" y1="{{px .Top}}" y2="{{px .Bottom}}"/>
{{- end}}
`
