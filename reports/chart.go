package reports

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gdrcheck/gdrcheck/results"
)

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
	// Bound labels a one-sided baseline ("≥ 460"), drawn as a line at
	// the limit, not as a band of zero width.
	Bound string
}

// bandOf places a baseline across x0..x1; what names the run and where
// ("all_reduce_perf at 16 GiB"). It returns the band and the words a
// caption gives it.
func bandOf(b *results.Band, x0, x1 float64, y func(float64) float64, what string) (band, string) {
	if b.OneSided() {
		bound := b.Bound() + " GB/s"
		return band{X: x0, W: x1 - x0, X2: x1, Y: y(b.Expected), ExpY: y(b.Expected), Bound: b.Bound(),
				Title: fmt.Sprintf("%s: baseline %s, %s", what, b.Profile, bound)},
			fmt.Sprintf("baseline %s for %s: %s, a bound (dashed line)", b.Profile, what, bound)
	}
	return band{X: x0, W: x1 - x0, X2: x1, Y: y(b.High), H: y(b.Low) - y(b.High), ExpY: y(b.Expected),
			Title: fmt.Sprintf("%s: baseline %s expected %s, band %s to %s GB/s", what, b.Profile, fixed(b.Expected, 2), fixed(b.Low, 2), fixed(b.High, 2))},
		fmt.Sprintf("baseline %s for %s: expected %s GB/s (shaded %s to %s, dashed: expected)", b.Profile, what, fixed(b.Expected, 2), fixed(b.Low, 2), fixed(b.High, 2))
}

// bandLegend names what the bands of a chart are: bands, bounds or both.
func bandLegend(bands []band) []legendItem {
	var shaded, bound bool
	for _, b := range bands {
		shaded = shaded || b.Bound == ""
		bound = bound || b.Bound != ""
	}
	var out []legendItem
	if shaded {
		out = append(out, legendItem{Name: "baseline band, expected", Color: "#2b8a3e", Band: true})
	}
	if bound {
		out = append(out, legendItem{Name: "baseline bound", Color: "#2b8a3e", Dash: "5 3"})
	}
	return out
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

// tickLabel writes an axis value to three decimals; one of a million or
// more (a broken measurement) in scientific notation, where v*1000 would
// overflow to +Inf.
func tickLabel(v float64) string {
	if math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
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

func nodesWord(n int) string {
	if n == 1 {
		return "1 node"
	}
	return strconv.Itoa(n) + " nodes"
}
