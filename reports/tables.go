package reports

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Table is data for one table; renderers turn it into text or markdown.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
}

// Formats a Table renders to.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
)

// Render writes the table in a format: plain ASCII for terminals and CI
// logs, or markdown for pull requests and wikis.
func (t Table) Render(w io.Writer, format string) error {
	var r tw.Renderer
	switch format {
	case FormatText, "":
		r = renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
	case FormatMarkdown:
		r = renderer.NewMarkdown()
	default:
		return fmt.Errorf("unknown table format %q (want text or markdown)", format)
	}
	if t.Title != "" {
		// A title can name a node ("GPU rails on <host>").
		title := cleanText(t.Title)
		if format == FormatMarkdown {
			fmt.Fprintf(w, "### %s\n\n", markdownCell(title))
		} else {
			fmt.Fprintf(w, "%s\n", Terminal(title))
		}
	}
	// Cells quote what nodes and tools printed: an ESC there would drive
	// the terminal or the CI log viewer. The rule JUnit and HTML use.
	rows := make([][]string, len(t.Rows))
	for i, row := range t.Rows {
		rows[i] = make([]string, len(row))
		for j, c := range row {
			rows[i][j] = cleanText(c)
			if format == FormatMarkdown {
				rows[i][j] = markdownCell(rows[i][j])
			}
		}
	}
	header := t.Header
	if format != FormatMarkdown {
		// A terminal's width, where markdown keeps every cell whole:
		// long cells wrap in their column, a row at a time.
		var wrapped bool
		header, rows, wrapped = fitRows(t.Header, rows, ConsoleWidth())
		if wrapped {
			r = renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII),
				Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}}})
		}
	}
	tbl := tablewriter.NewTable(w,
		tablewriter.WithRenderer(r),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	tbl.Header(header)
	if err := tbl.Bulk(rows); err != nil {
		return err
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// SummaryTable counts specs per node and suite.
func SummaryTable(r *results.Results) Table {
	t := Table{Title: "Summary", Header: []string{"node", "suite", "passed", "failed", "skipped", "status"}}
	for _, n := range r.Nodes {
		if n.Status != results.NodeEvaluated {
			t.Rows = append(t.Rows, []string{nodeLabel(n), "-", "0", "1", "0", n.Status})
		}
		for _, s := range n.Suites {
			c := s.Counts()
			t.Rows = append(t.Rows, []string{nodeLabel(n), s.Name, strconv.Itoa(c.Passed), strconv.Itoa(c.Failed), strconv.Itoa(c.Skipped), s.Status()})
		}
	}
	return t
}

// FailuresTable lists every failed spec, and every node that could not be
// evaluated, with its message.
func FailuresTable(r *results.Results) Table {
	t := Table{Title: "Failures", Header: []string{"node", "suite", "spec", "message", "action"}}
	for _, n := range r.Nodes {
		if n.Status != results.NodeEvaluated {
			t.Rows = append(t.Rows, []string{nodeLabel(n), "-", n.Status, firstLine(n.Reason), orDash(string(n.Action))})
		}
		for _, s := range n.Suites {
			for _, sp := range s.Specs {
				if !sp.Failed() {
					continue
				}
				t.Rows = append(t.Rows, []string{nodeLabel(n), s.Name, sp.Name, firstLine(sp.Message), remedyText(sp)})
			}
		}
	}
	return t
}

// remedyText is a spec's action as the tables show it: "RESET_GPU gpu
// 0000:39:00.0", "-" where it has none.
func remedyText(sp results.Spec) string {
	if sp.Action == "" {
		return "-"
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", sp.Action, sp.Scope, sp.Entity))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// FallbackTable compares the direct all_reduce with every forced fallback
// of each node: the transport NCCL took, the bus bandwidth, its ratio to
// the direct run and the host CPU the run cost.
func FallbackTable(r *results.Results) Table {
	t := Table{Title: "Direct vs forced fallback (all_reduce)", Header: []string{"node", "mode", "transport", "busbw GB/s", "at size", "ratio", "CPU %", "CPU s/GB", "verdict"}}
	for _, n := range r.Nodes {
		for _, run := range n.Runs {
			if run.Op != "all_reduce" || (run.Suite != "negative" && run.Mode != "direct") {
				continue
			}
			ratio, verdict := "1.00", run.PathVerdict
			if run.RatioToDirect != nil {
				ratio = strconv.FormatFloat(*run.RatioToDirect, 'f', 3, 64)
			}
			if run.Mode != "direct" {
				verdict = fallbackVerdict(n, run.Mode)
			}
			if run.Error != "" {
				verdict = "error: " + firstLine(run.Error)
			}
			at := "-"
			if len(run.Points) > 0 {
				at = results.SizeString(run.Points[len(run.Points)-1].Size)
			}
			t.Rows = append(t.Rows, []string{nodeLabel(n), run.Mode, dash(run.Transport), fixed(run.BusBW, 2), at, ratio, pct(run.CPUPct), cpuPerGB(run), verdict})
		}
	}
	return t
}

// fallbackVerdict reads the negative spec that judged a mode.
func fallbackVerdict(n results.Node, mode string) string {
	for _, s := range n.Suites {
		if s.Name != "negative" {
			continue
		}
		for _, sp := range s.Specs {
			for _, m := range sp.Metrics {
				if m.Subject == mode && m.Name == "ratio_to_direct" {
					if sp.State == results.StatePassed {
						return "detected"
					}
					return "NOT DETECTED"
				}
			}
		}
	}
	return "-"
}

// ComparisonTable lists every metric that has a baseline: measured,
// baseline, delta and verdict.
func ComparisonTable(r *results.Results) Table {
	t := Table{Title: "Measured vs baseline", Header: []string{"node", "suite", "metric", "subject", "measured", "baseline", "delta %", "verdict"}}
	for _, n := range r.Nodes {
		for _, s := range n.Suites {
			for _, sp := range s.Specs {
				for _, m := range sp.Metrics {
					if m.Baseline == nil {
						continue
					}
					delta := "-"
					if m.DeltaPct != nil {
						delta = strconv.FormatFloat(*m.DeltaPct, 'f', 1, 64)
					}
					t.Rows = append(t.Rows, []string{nodeLabel(n), s.Name, m.Name, dash(m.Subject), results.FormatValue(m.Value) + unit(m.Unit), results.FormatValue(*m.Baseline) + unit(m.Unit), delta, dash(m.Verdict)})
				}
			}
		}
	}
	return t
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fixed writes v with prec decimals; a value of a million or more (no
// bandwidth, ratio or time a node measures, so a broken one) in
// scientific notation, so that 1e308 stays one short cell.
func fixed(v float64, prec int) string {
	if math.Abs(v) >= 1e6 || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}

// cpuPerGB is the run's CPU seconds per GB of bus traffic, to four
// significant digits: direct runs cost thousandths, fallbacks tenths.
func cpuPerGB(run results.Run) string {
	c, ok := run.CPUPerGB()
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(c, 'g', 4, 64)
}

func unit(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

// ScalingTable shows all_reduce across node counts: bus bandwidth,
// efficiency against two nodes, small-message latency and the baseline.
func ScalingTable(r *results.Results) Table {
	t := Table{Title: "Scaling (all_reduce across nodes)", Header: []string{"nodes", "path", "busbw GB/s", "at size", "efficiency vs 2", "latency us (8 B)", "baseline", "verdict"}}
	var two float64
	for _, run := range r.Runs {
		if run.Suite == "scale" && len(run.Nodes) == 2 {
			two = run.BusBW
		}
	}
	pairs := 0
	for _, run := range r.Runs {
		if run.Suite == "pairwise" {
			pairs++
		}
	}
	// Pair rows alike (same path, bandwidth, latency, verdict) are one
	// row once there are more than a screen's worth: a job of 16,384
	// nodes runs 16,384 pairs.
	fold := pairs > maxPairRows
	folded := map[string]int{}    // the row's cells -> its index
	members := map[int][]string{} // a folded row's nodes
	for _, run := range r.Runs {
		if run.Suite != "scale" && run.Suite != "pairwise" {
			continue
		}
		nodes := strconv.Itoa(len(run.Nodes))
		if run.Suite == "pairwise" {
			nodes = "pair " + strings.Join(run.Nodes, "+")
		}
		at, lat, eff, base, verdict := "-", "-", "-", "-", "-"
		if len(run.Points) > 0 {
			at = results.SizeString(run.Points[len(run.Points)-1].Size)
			lat = fixed(run.Points[0].TimeUS, 1)
		}
		if two > 0 && len(run.Nodes) >= 2 && run.Suite == "scale" {
			eff = fixed(run.BusBW/two, 2)
		}
		if run.Baseline != nil {
			base = fixed(run.Baseline.Expected, 1)
			verdict = "pass"
			if run.BusBW < run.Baseline.Low {
				verdict = "FAIL"
			}
		}
		if run.Error != "" {
			verdict = "error: " + firstLine(run.Error)
		}
		row := []string{nodes, pathOf(run), fixed(run.BusBW, 2), at, eff, lat, base, verdict}
		if fold && run.Suite == "pairwise" {
			k := strings.Join(row[1:], "\x00")
			i, ok := folded[k]
			if !ok {
				i = len(t.Rows)
				folded[k] = i
				t.Rows = append(t.Rows, row)
			}
			members[i] = append(members[i], run.Nodes...)
			continue
		}
		t.Rows = append(t.Rows, row)
	}
	for i, nodes := range members {
		k := len(nodes) / 2
		if k == 1 {
			continue // a pair alone keeps its name
		}
		if k <= 4 {
			var ps []string
			for j := 0; j+1 < len(nodes); j += 2 {
				ps = append(ps, nodes[j]+"+"+nodes[j+1])
			}
			t.Rows[i][0] = "pairs " + strings.Join(ps, ", ")
			continue
		}
		t.Rows[i][0] = fmt.Sprintf("%d pairs of %s", k, hostlist.Compress(nodes))
	}
	return t
}

// maxPairRows is how many pair rows the scaling table shows one by one.
const maxPairRows = 16

// pathOf names how a run's data moved (results.Run.PathTransport).
func pathOf(run results.Run) string { return dash(run.PathTransport()) }

// The spec names GDRTable reads its verdicts from.
const (
	gdrProofSpec    = "proves GPUDirect RDMA through the NICs when forced onto the network"
	registerSpec    = "registers GPU memory with every rail NIC"
	acrossNodesSpec = "takes the direct path between nodes"
)

// GDRTable says, node by node, whether GPUDirect RDMA was proven rather
// than assumed: the peer-memory mechanism the kernel offers, a GPU buffer
// registered with the rail NICs, the path NCCL took when forced onto the
// network, and the verdict; the allocation's row is the path between the
// nodes. Nodes without RDMA NICs have nothing to prove and no row.
func GDRTable(r *results.Results) Table {
	t := Table{Title: "GPUDirect RDMA", Header: []string{"node", "mechanism", "GPU memory registered", "NCCL through the NICs", "verdict"}}
	for _, n := range r.Nodes {
		if n.Status != results.NodeEvaluated {
			continue
		}
		proof, ok := specNamed(n, gdrProofSpec)
		if n.Name == "allocation" {
			proof, ok = specNamed(n, acrossNodesSpec)
		}
		if !ok || proof.State == results.StateSkipped {
			continue
		}
		reg := "-"
		if sp, ok := specNamed(n, registerSpec); ok {
			reg = map[string]string{results.StatePassed: "yes", results.StateSkipped: "-"}[sp.State]
			if reg == "" {
				reg = "NO"
			}
		}
		through := "-"
		for _, run := range n.Runs {
			if run.Mode == "p2p-shm-disabled" {
				through = dash(run.Transport)
			}
		}
		if n.Name == "allocation" {
			var paths []string
			for _, run := range r.Runs {
				if p := pathOf(run); len(run.Nodes) >= 2 && !slices.Contains(paths, p) {
					paths = append(paths, p)
				}
			}
			through = dash(strings.Join(paths, ", "))
		}
		verdict := "proven"
		if proof.State != results.StatePassed {
			verdict = "NOT PROVEN: " + firstLine(proof.Message)
		}
		t.Rows = append(t.Rows, []string{nodeLabel(n), dash(n.Fact("mechanism")), reg, through, verdict})
	}
	return t
}

func specNamed(n results.Node, name string) (results.Spec, bool) {
	for _, s := range n.Suites {
		for _, sp := range s.Specs {
			if sp.Name == name {
				return sp, true
			}
		}
	}
	return results.Spec{}, false
}

// ContainerTable compares each node's container-suite checks on the host
// with the same checks inside its container: what works on the host but
// not in the container, and the likely cause the container run noted.
func ContainerTable(r *results.Results) Table {
	t := Table{Title: "Host vs container", Header: []string{"node", "check", "host", "container", "likely cause"}}
	byName := map[string]results.Node{}
	for _, n := range r.Nodes {
		byName[n.Name] = n
	}
	for _, n := range r.Nodes {
		host, ok := byName[strings.TrimSuffix(n.Name, results.ContainerSuffix)]
		if !strings.HasSuffix(n.Name, results.ContainerSuffix) || !ok {
			continue
		}
		hostState := map[string]string{}
		for _, s := range host.Suites {
			if s.Name == "container" {
				for _, sp := range s.Specs {
					hostState[sp.Name] = sp.State
				}
			}
		}
		for _, s := range n.Suites {
			if s.Name != "container" {
				continue
			}
			for _, sp := range s.Specs {
				hs := dash(hostState[sp.Name])
				cause := "-"
				if sp.State != results.StatePassed && sp.State != results.StateSkipped {
					cause = causeOf(sp)
				}
				t.Rows = append(t.Rows, []string{host.Name, sp.Name, hs, sp.State, cause})
			}
		}
	}
	return t
}

// causeOf reads the "cause: ..." notes a container spec leaves.
func causeOf(sp results.Spec) string {
	var causes []string
	seen := map[string]bool{}
	for _, n := range sp.Notes {
		if c, ok := strings.CutPrefix(n, "cause: "); ok && !seen[c] {
			seen[c] = true
			causes = append(causes, c)
		}
	}
	if len(causes) == 0 {
		return firstLine(sp.Message)
	}
	return strings.Join(causes, ", ")
}

// RDMATable lists the loopback RDMA runs through each rail NIC: bandwidth
// with host memory against GPU memory, and the failures with their cause.
func RDMATable(r *results.Results) Table {
	t := Table{Title: "RDMA through each rail (ib_write_bw loopback)", Header: []string{"node", "nic", "memory", "bw Gb/s", "at size", "verdict"}}
	for _, n := range r.Nodes {
		for _, run := range n.Runs {
			if run.Suite != "fabric" || run.Unit != "Gb/s" {
				continue
			}
			at, verdict := "-", "ok"
			if len(run.Points) > 0 {
				at = results.SizeString(run.Points[len(run.Points)-1].Size)
			}
			if run.Error != "" {
				verdict = "error: " + firstLine(run.Error)
			}
			t.Rows = append(t.Rows, []string{nodeLabel(n), strings.TrimPrefix(run.Mode, "loopback "), dash(run.Mem), fixed(run.BusBW, 2), at, verdict})
		}
	}
	return t
}

// markdownCell keeps a cell one cell of one row in GitHub's and GitLab's
// renderers, whatever a node printed: no | ends it, no newline starts a
// row or a heading, and no [, ], ! or < makes a link, an image or HTML
// (a > alone opens nothing inside a cell: "open -> proprietary" stays),
// nor a URL, www. or address an autolink (GFM's extension).
var markdownCell = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "[", `\[`, "]", `\]`, "!", `\!`,
	"://", `\:\/\/`, "www.", `www\.`, "@", `\@`,
	"<", "&lt;", "\r\n", `\n`, "\n", `\n`, "\r", `\r`,
).Replace

// Terminal makes text from a node safe to print on one line: the tables'
// rule, so an ESC a recorded hostname holds reaches no terminal, and a
// newline or carriage return is shown, not obeyed (neither can start a
// line of its own, nor end a shell comment).
func Terminal(s string) string { return terminalBreaks.Replace(cleanText(s)) }

var terminalBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)
