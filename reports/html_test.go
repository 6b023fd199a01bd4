package reports

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

const h200Results = "../fixtures/results/h200x2-nv18-collectives-negative.results.json"

func renderHTML(t *testing.T, r *results.Results) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func readH200(t *testing.T) *results.Results {
	t.Helper()
	r, err := results.Read(h200Results)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var svgRe = regexp.MustCompile(`(?s)<svg\b.*?</svg>`)

// checkSVGs decodes every inline SVG as strict XML, so each plot is
// well formed whatever the results held, and returns them.
func checkSVGs(t *testing.T, page string) []string {
	t.Helper()
	svgs := svgRe.FindAllString(page, -1)
	for i, s := range svgs {
		d := xml.NewDecoder(strings.NewReader(s))
		d.Strict = true
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("svg %d is not well-formed XML: %v\n%s", i, err, s)
			}
		}
	}
	return svgs
}

func count(s, sub string) int { return strings.Count(s, sub) }

func TestHTMLOfTheRecordedH200RunDrawsEveryPlot(t *testing.T) {
	page := renderHTML(t, readH200(t))
	svgs := checkSVGs(t, page)
	// all_reduce, all_gather, reduce_scatter and sendrecv by size, and the
	// all_reduce fallback bars.
	if len(svgs) != 5 {
		t.Fatalf("%d svg elements, want 5", len(svgs))
	}
	// One line per run: four direct collectives and two forced modes,
	// drawn into the all_reduce plot.
	if n := count(page, `<polyline class="series"`); n != 6 {
		t.Errorf("%d series polylines, want one per run (6)", n)
	}
	allReduce := svgs[0]
	for _, mode := range []string{"direct", "p2p-disabled", "p2p-shm-disabled"} {
		if !strings.Contains(allReduce, `<polyline class="series" data-series="`+mode+`"`) {
			t.Errorf("all_reduce plot has no %s series", mode)
		}
	}
	// 29 message sizes of the direct all_reduce, each a point with its value.
	if !strings.Contains(allReduce, "<title>direct 2 GiB: 341.03 GB/s</title>") || !strings.Contains(allReduce, "<title>direct 8 B: 0.00 GB/s</title>") {
		t.Error("all_reduce plot lacks the points at 8 B and 2 GiB")
	}
	// The three runs compared with a baseline each draw their band and
	// the expected value; reduce_scatter has none.
	if n := count(page, `<rect class="band" `); n != 3 {
		t.Errorf("%d baseline bands, want 3", n)
	}
	if n := count(page, `<line class="expected" `); n != 6 { // 3 bands, 3 legend keys
		t.Errorf("%d expected-value lines, want 6", n)
	}
	if !strings.Contains(allReduce, "direct at 2 GiB: baseline h200x2-nv18 expected 341.61, band 307.45 to 375.77 GB/s") {
		t.Error("all_reduce band does not say its profile and bounds")
	}
	if strings.Contains(svgs[2], `class="band"`) {
		t.Error("reduce_scatter has no baseline but draws a band")
	}
	// Log2 size axis labelled in binary units.
	for _, l := range []string{">32 B<", ">1 KiB<", ">1 MiB<", ">1 GiB<", ">message size (log2)<"} {
		if !strings.Contains(allReduce, l) {
			t.Errorf("size axis lacks %s", l)
		}
	}
	bars := svgs[4]
	for _, want := range []string{
		`<g class="bar" data-mode="direct">`, `<g class="bar" data-mode="p2p-disabled">`, `<g class="bar" data-mode="p2p-shm-disabled">`,
		">341.03 GB/s  ·  reference<", ">27.58 GB/s  ·  0.092× direct<", ">3.17 GB/s  ·  0.011× direct<",
		">3.1 %<", ">2.8 %<", ">7.8 %<", ">host CPU %<",
		`<tspan class="good">fallback detected</tspan>`,
	} {
		if !strings.Contains(bars, want) {
			t.Errorf("fallback bars lack %s", want)
		}
	}
	for _, want := range []string{
		"<h1>gdrcheck report", ">PASS<", "exit 0</strong>: every spec passed", "gdrcheck b82ca16", "2026-11-30 15:50:38 UTC", "(23.9s)",
		"9 specs on 1 node(s): 6 passed, 0 failed, 3 skipped",
		"<th>gpu_model</th><td>2 x NVIDIA H200</td>", "baseline profile h200x2-nv18",
		"<caption>Summary</caption>", "<caption>Measured vs baseline</caption>", "<caption>Direct vs forced fallback (all_reduce)</caption>",
		"ib-disabled not run: needs RDMA NICs",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "Scaling") || strings.Contains(page, "Across nodes") {
		t.Error("single-node results draw a scaling plot")
	}
	if strings.Contains(page, "<caption>Failures</caption>") {
		t.Error("a passing run lists failures")
	}
}

var pointsRe = regexp.MustCompile(`points="([^"]*)"`)
var viewBoxRe = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)

func TestHTMLPlotsStayInsideTheirViewBox(t *testing.T) {
	for _, r := range []*results.Results{readH200(t), scalingResults()} {
		for _, s := range checkSVGs(t, renderHTML(t, r)) {
			vb := viewBoxRe.FindStringSubmatch(s)
			w, _ := strconv.ParseFloat(vb[1], 64)
			h, _ := strconv.ParseFloat(vb[2], 64)
			for _, m := range pointsRe.FindAllStringSubmatch(s, -1) {
				for _, p := range strings.Fields(m[1]) {
					x, y, _ := strings.Cut(p, ",")
					fx, _ := strconv.ParseFloat(x, 64)
					fy, _ := strconv.ParseFloat(y, 64)
					if fx < 0 || fx > w || fy < 0 || fy > h {
						t.Errorf("point %s outside the %gx%g plot", p, w, h)
					}
				}
			}
		}
	}
}

// hostile is results whose every string tries to break out of the page.
func hostile() *results.Results {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	x := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	ratio, cpu := 0.1, 5.0
	return &results.Results{
		Schema: results.Schema, Started: t0, Finished: t0.Add(time.Second),
		Tool: results.Tool{Version: "</title><script>alert(3)</script>", Args: []string{"run", "--node-name", x}, Suites: []string{x}},
		Nodes: []results.Node{{
			Name: "<script>alert(4)</script>", Status: results.NodeEvaluated, Profile: x,
			Facts: []results.Fact{{Name: x, Value: "http://evil.example/x.js"}, {Name: "driver", Value: "</td></tr></table><link rel=stylesheet href=https://evil.example/a.css>"}},
			Suites: []results.Suite{{Name: x, Specs: []results.Spec{
				{Name: x, State: results.StateFailed, Message: "</pre><script>alert(5)</script>\n<b>x</b>", Location: x, Output: "]]></svg><script>alert(6)</script>"},
				{Name: x, State: results.StatePassed, Notes: []string{"WARNING: <iframe src=https://evil.example>"}},
				{Name: x, State: results.StateSkipped, Message: x},
			}}},
			Runs: []results.Run{
				{Suite: "collectives", Tool: x, Op: x, Mode: "direct", Transport: x, BusBW: 100,
					Points:   []results.Point{{Size: 1 << 20, BusBW: 50}, {Size: 1 << 30, BusBW: 100}},
					Baseline: &results.Band{Profile: x, Metric: x, Expected: 100, Low: 90, High: 110}},
				{Suite: "negative", Tool: x, Op: x, Mode: x, Transport: x, BusBW: 10, RatioToDirect: &ratio, CPUPct: &cpu,
					Points: []results.Point{{Size: 1 << 20, BusBW: 10}}, Error: "</text><script>alert(7)</script>"},
			},
		}},
		Runs: []results.Run{
			{Op: x, Mode: x, Nodes: []string{x, "b"}, BusBW: 80, Points: []results.Point{{Size: 1 << 20, BusBW: 80}}},
			{Op: x, Mode: x, Nodes: []string{x, "b", "c", "d"}, BusBW: 60, Points: []results.Point{{Size: 1 << 20, BusBW: 60}}},
		},
	}
}

var (
	// tagRe is a tag the page really opens: escaped text never starts
	// with '<', and html/template escapes '>' in attribute values.
	tagRe  = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	attrRe = regexp.MustCompile(`^\s+([^\s=/>]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))?`)
)

type attr struct{ name, value string }

// tags lists the tags of a page with their attributes, parsed the way a
// browser does, so text inside a quoted value is never an attribute.
func tags(page string) map[string][]attr {
	out := map[string][]attr{}
	for _, tag := range tagRe.FindAllString(page, -1) {
		rest := strings.TrimSuffix(strings.TrimSuffix(tag[1:], ">"), "/")
		i := strings.IndexFunc(rest, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' })
		if i < 0 {
			out[tag] = nil
			continue
		}
		rest = rest[i:]
		var as []attr
		for {
			m := attrRe.FindStringSubmatch(rest)
			if m == nil {
				break
			}
			as = append(as, attr{strings.ToLower(m[1]), strings.Trim(m[2], `"'`)})
			rest = rest[len(m[0]):]
		}
		out[tag] = as
	}
	return out
}

func TestHTMLEscapesWhatComesFromTheResults(t *testing.T) {
	page := renderHTML(t, hostile())
	checkSVGs(t, page)
	for _, bad := range []string{"<script", "<img", "<iframe", "<link", "<b>", "</svg><script"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("page contains %s from the results", bad)
		}
	}
	for tag, as := range tags(page) {
		for _, a := range as {
			if strings.HasPrefix(a.name, "on") {
				t.Errorf("page has an event handler: %s", tag)
			}
		}
	}
	for _, want := range []string{
		"&lt;script&gt;alert(4)&lt;/script&gt;", // node name in the heading
		"&lt;/pre&gt;&lt;script&gt;alert(5)&lt;/script&gt;",
		"&lt;iframe src=https://evil.example&gt;",
		"error: &lt;/text&gt;&lt;script&gt;alert(7)&lt;/script&gt;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped %s", want)
		}
	}
	// Names from the results never become ids or link targets.
	if !strings.Contains(page, `<code>gdrcheck run --node-name &#39;&#34;&gt;&lt;script&gt;`) {
		t.Error("the command line is not shell-quoted")
	}
	if !strings.Contains(page, `id="node-0"`) {
		t.Error("node anchor is not node-0")
	}
}

// Attributes that load something.
var refAttrs = map[string]bool{"src": true, "href": true, "xlink:href": true, "action": true, "formaction": true, "poster": true, "srcset": true, "data": true, "background": true}

var external = []*regexp.Regexp{
	regexp.MustCompile(`(?i)<link\b`),
	regexp.MustCompile(`(?i)<script\b`),
	regexp.MustCompile(`(?i)<(iframe|object|embed|img|image|use|video|audio|source)\b`),
	regexp.MustCompile(`(?i)@import`),
	regexp.MustCompile(`(?i)url\(`),
	regexp.MustCompile(`(?i)@font-face`),
}

// leaving lists the tags that load or link to something outside the page.
func leaving(page string) []string {
	var out []string
	for tag, as := range tags(page) {
		for _, a := range as {
			if refAttrs[a.name] && !strings.HasPrefix(a.value, "#") {
				out = append(out, tag)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestHTMLOpensOfflineWithNoExternalReference(t *testing.T) {
	// The check itself: real references count, quoted text does not.
	if got := leaving(`<p title="x src=https://a"><a href="#n">n</a><img alt="" src='https://a/b.png'><a class=x href=//a/>`); len(got) != 2 {
		t.Fatalf("leaving found %q, want the img and the //a link", got)
	}
	for name, r := range map[string]*results.Results{"h200": readH200(t), "hostile": hostile(), "scaling": scalingResults()} {
		page := renderHTML(t, r)
		for _, tag := range leaving(page) {
			t.Errorf("%s: %s leaves the page", name, tag)
		}
		for _, re := range external {
			if m := re.FindString(page); m != "" {
				t.Errorf("%s: page has %s", name, m)
			}
		}
		if !strings.Contains(page, "<style>") {
			t.Errorf("%s: no inline CSS", name)
		}
	}
}

func TestHTMLIsAPureFunctionOfTheResults(t *testing.T) {
	for _, r := range []*results.Results{readH200(t), scalingResults(), hostile()} {
		first := renderHTML(t, r)
		for i := 0; i < 5; i++ {
			if again := renderHTML(t, r); again != first {
				t.Fatal("two renderings of the same results differ")
			}
		}
	}
}

func TestHTMLShowsFailuresAndNodesThatNeverReported(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := &results.Results{Schema: results.Schema, Started: t0, Finished: t0.Add(time.Minute), Nodes: []results.Node{
		{Name: "gpu01", Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "topology", Specs: []results.Spec{
			{Name: "has no ACS redirect", State: results.StateFailed, Message: "bridge 0000:37:00.0 has ACS ReqRedir+\nsecond line", Location: "suites/topology/topology.go:99", Output: "lspci says so"},
		}}}},
		{Name: "gpu02", Status: results.NodeMissing, Reason: "node never reported: step 3 killed by signal 9", Action: results.ActionRerun},
	}}
	page := renderHTML(t, r)
	for _, want := range []string{
		">UNEVALUABLE<", "exit 2</strong>: a node could not be evaluated or never reported",
		"<strong>has no ACS redirect</strong>", "bridge 0000:37:00.0 has ACS ReqRedir&#43;\nsecond line", "suites/topology/topology.go:99", "lspci says so",
		">missing<", "node never reported: step 3 killed by signal 9",
		"<caption>Failures</caption>",
		`<nav class="nodes"><a class="bad" href="#node-0">gpu01 <span class="mark">FAIL</span></a> <a class="bad" href="#node-1">gpu02 <span class="mark">MISSING</span></a>`, // the index marks each status
		"<caption>Failing, unevaluable and missing nodes, by cause</caption>", "missing: node never reported: step 3 killed by signal 9",
		`<td class="action">RERUN</td>`, `<td class="action">-</td>`, // the action by each cause, a dash where none was given
		"<code>-</code>", // no command line recorded (a collected job), not a bare "gdrcheck"
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// scalingResults is what the Slurm job records: all_reduce of the scale
// suite at 1, 2 and 4 nodes (twice at 4, one compared with a baseline) and
// a failed run at 8, all_gather at 2 and 4, sendrecv at 2 only, and two
// pairwise all_reduce runs.
func scalingResults() *results.Results {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	run := func(suite, op string, bw float64, nodes ...string) results.Run {
		var pts []results.Point
		for s := int64(1 << 10); s <= 1<<30; s <<= 2 {
			pts = append(pts, results.Point{Size: s, BusBW: bw * float64(s) / (1 << 30)})
		}
		return results.Run{Suite: suite, Tool: op + "_perf", Op: op, Mode: "direct", Nodes: nodes, Ranks: 8 * len(nodes), BusBW: bw, Points: pts}
	}
	n := func(k int) []string {
		var s []string
		for i := 0; i < k; i++ {
			s = append(s, "gpu"+strconv.Itoa(i))
		}
		return s
	}
	banded := run("scale", "all_reduce", 300, n(4)...)
	banded.Baseline = &results.Band{Profile: "h100x8-ndr", Metric: "nccl.all_reduce.busbw.nodes4", Expected: 330, Low: 297, High: 363}
	failed := run("scale", "all_reduce", 0, n(8)...)
	failed.Error = "srun: node gpu7 lost"
	return &results.Results{
		Schema: results.Schema, Started: t0, Finished: t0.Add(10 * time.Minute),
		Tool:  results.Tool{Version: "v1.2.3", Args: []string{"submit"}},
		Nodes: []results.Node{{Name: "allocation", Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "scaling", Specs: []results.Spec{{Name: "scales all_reduce from 2 to 4 nodes", State: results.StatePassed}}}}}},
		Runs: []results.Run{
			run("scale", "all_reduce", 400, n(1)...), run("scale", "all_reduce", 360, n(2)...), banded, run("scale", "all_reduce", 276, n(4)...), failed,
			run("scale", "all_gather", 350, n(2)...), run("scale", "all_gather", 315, n(4)...),
			run("scale", "sendrecv", 390, n(2)...),
			run("pairwise", "all_reduce", 350, "gpu0", "gpu1"), run("pairwise", "all_reduce", 200, "gpu2", "gpu3"),
		},
	}
}

func TestScalingGroupsTakeTheMedianAndCompareWithTwoNodes(t *testing.T) {
	g := scalingGroups(scalingResults().Runs)
	if len(g) != 2 || g[0].Op != "all_reduce" || g[1].Op != "all_gather" {
		t.Fatalf("groups %+v, want all_reduce and all_gather (sendrecv and the pairs ran at one count)", g)
	}
	band := scalingResults().Runs[2].Baseline
	want := []scalePoint{
		{Nodes: 1, Ranks: 8, BusBW: 400},
		{Nodes: 2, Ranks: 16, BusBW: 360, Efficiency: 100, HasEff: true},
		{Nodes: 4, Ranks: 32, BusBW: 288, Efficiency: 80, HasEff: true, Baseline: band},
	}
	if len(g[0].Points) != len(want) || g[0].Ref != 2 {
		t.Fatalf("all_reduce points %+v relative to %d, want %+v relative to 2 (the failed 8-node run left out)", g[0].Points, g[0].Ref, want)
	}
	for i, p := range g[0].Points {
		w := want[i]
		if p.Nodes != w.Nodes || p.Ranks != w.Ranks || p.BusBW != w.BusBW || p.HasEff != w.HasEff || math.Abs(p.Efficiency-w.Efficiency) > 1e-9 || (p.Baseline == nil) != (w.Baseline == nil) {
			t.Errorf("all_reduce point %d = %+v, want %+v", i, p, w)
		}
	}
	if e := g[1].Points[1].Efficiency; e != 90 {
		t.Errorf("all_gather efficiency at 4 nodes = %g, want 90", e)
	}
}

func TestHTMLDrawsScalingOnlyWhenRunsSpanSeveralNodeCounts(t *testing.T) {
	page := renderHTML(t, scalingResults())
	svgs := checkSVGs(t, page)
	var lines []string
	for _, s := range svgs {
		if strings.HasPrefix(s, `<svg class="plot line"`) {
			lines = append(lines, s)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d scaling plots, want busbw and efficiency", len(lines))
	}
	for _, want := range []string{
		`<polyline class="series" data-series="all_reduce"`, `<polyline class="series" data-series="all_gather"`,
		"<title>all_reduce on 1 node: 400.00 GB/s</title>", "<title>all_reduce on 4 nodes: 288.00 GB/s</title>",
		`<rect class="band" `, "all_reduce on 4 nodes: baseline h100x8-ndr expected 330.00, band 297.00 to 363.00 GB/s",
		">1<", ">2<", ">4<", ">nodes (log2)<",
	} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("busbw scaling plot lacks %s", want)
		}
	}
	for _, want := range []string{"<title>all_reduce on 4 nodes: 80.0 %</title>", "<title>all_gather on 4 nodes: 90.0 %</title>", ">100 %<", ">efficiency %<"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("efficiency plot lacks %s", want)
		}
	}
	if strings.Contains(lines[1], "on 1 node:") {
		t.Error("efficiency is drawn below the 2 nodes it is relative to")
	}
	if strings.Contains(lines[0], "sendrecv") || strings.Contains(lines[0], "pairwise") {
		t.Error("runs at one node count are drawn as scaling")
	}
	for _, want := range []string{
		"<h2>Across nodes</h2>", "<caption>Scaling (all_reduce across nodes)</caption>",
		// Every multi-node run by size: scale runs named by node count,
		// pairs by their nodes.
		"all_reduce_perf (scale): bus bandwidth by message size", `data-series="1 node"`, `data-series="4 nodes #1"`, `data-series="4 nodes #2"`,
		`data-series="4 nodes"`, // all_gather
		"all_reduce_perf (pairwise): bus bandwidth by message size", `data-series="gpu0&#43;gpu1"`, `data-series="gpu2&#43;gpu3"`,
		"sendrecv_perf (scale): bus bandwidth by message size",
		"<p>8 nodes: error: srun: node gpu7 lost</p>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	// One node count only: sizes, but no scaling.
	r := scalingResults()
	r.Runs = r.Runs[len(r.Runs)-3:]
	page = renderHTML(t, r)
	if strings.Contains(page, `class="plot line"`) || strings.Contains(page, "<h3>Scaling by node count</h3>") {
		t.Error("runs at one node count draw a scaling plot")
	}
	if !strings.Contains(page, "sendrecv_perf (scale): bus bandwidth by message size") {
		t.Error("the multi-node run is not drawn by size")
	}
}

func TestSizeAxisLabelsOctavesInBinaryUnits(t *testing.T) {
	var labels []string
	for _, tk := range octaveTicks(3-0.3, 31+0.6, func(o float64) float64 { return o }) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got, want := strings.Join(labels, ","), "32 B,1 KiB,32 KiB,1 MiB,32 MiB,1 GiB"; got != want {
		t.Errorf("8 B..2 GiB labels %s, want %s", got, want)
	}
	labels = nil
	for _, tk := range octaveTicks(20-0.3, 28+0.6, func(o float64) float64 { return o }) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got, want := strings.Join(labels, ","), "1 MiB,4 MiB,16 MiB,64 MiB,256 MiB"; got != want {
		t.Errorf("1 MiB..256 MiB labels %s, want %s", got, want)
	}
	if top, ticks := niceTicks(341.03); top != 400 || len(ticks) != 5 {
		t.Errorf("niceTicks(341.03) = %g %v, want 400 in steps of 100", top, ticks)
	}
}
