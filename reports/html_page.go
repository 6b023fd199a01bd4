package reports

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/internal/shellquote"
	"github.com/gdrcheck/gdrcheck/results"
)

// The page model: what the HTML page shows, computed from the results
// before the template draws it.

// exitMeaning says what each exit code tells a CI gate.
var exitMeaning = map[int]string{
	results.ExitPassed:      "every spec passed",
	results.ExitFailed:      "a spec failed",
	results.ExitUnevaluable: "a node could not be evaluated or never reported, or a selected suite could not run on it",
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
	// NodeCount is every node, folded or not; Line the verdict in
	// words (VerdictLine).
	NodeCount int
	Line      string
	// Allocation says the multi-node runs have their own entry.
	Allocation bool
	// Attention is every failing, unevaluable and missing node by
	// cause: the first thing on the page.
	Attention []htmlCause
	// Index marks every node's status, linking to its group.
	Index   []htmlIndex
	Folded  bool
	Nodes   []htmlNode
	Across  []*sizeChart // busbw vs size of the multi-node runs
	Scaling []*lineChart // busbw and efficiency vs node count
	Tables  []htmlTable
}

type htmlCause struct {
	Count  int
	Cause  string
	Action string // the representative's, as the console's causes table
	Nodes  string // hostlist
	Href   string
}

type htmlIndex struct {
	Name, Class, Href string
	Mark              string // the badge of a node that did not pass; empty when it passed
}

type htmlNode struct {
	ID   string // anchor; names from results never become ids
	Name string
	// Size is how many nodes it stands for; Members names them.
	Size    int
	Members string
	Status  string
	Class   string
	// Badge is the status in one word (nodeBadge), BadgeClass its colour.
	Badge, BadgeClass string
	// GDR is the node's GPUDirect RDMA row; nil with no RDMA NICs.
	GDR      *htmlGDR
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
	p.Folded, p.Line = r.Folded(), VerdictLine(r)
	for _, k := range StatusCounts(r) {
		p.NodeCount += k
	}
	p.Allocation = p.NodeCount < r.NodeCount()
	gdr := gdrRows(r)
	for i, n := range r.Nodes {
		hn := newHTMLNode(n)
		hn.GDR = gdrOf(n, gdr)
		hn.ID = "node-" + strconv.Itoa(i)
		c := hn.Counts
		// Members share the representative's spec states.
		k := n.Size()
		p.Totals.Tests += k * c.Tests
		p.Totals.Passed += k * c.Passed
		p.Totals.Failed += k * c.Failed
		p.Totals.Skipped += k * c.Skipped
		p.Nodes = append(p.Nodes, hn)
		if p.Folded {
			class := hn.Class
			mark := ""
			if hn.BadgeClass != "good" {
				mark = hn.Badge
			}
			for _, m := range n.Names() {
				p.Index = append(p.Index, htmlIndex{Name: m, Class: class, Href: "#" + hn.ID, Mark: mark})
			}
		}
	}
	for _, c := range Causes(r) {
		// A few nodes are named one by one, many as a hostlist.
		which := strings.Join(c.Nodes, ", ")
		if len(c.Nodes) > 12 {
			which = hostlist.Compress(c.Nodes)
		}
		p.Attention = append(p.Attention, htmlCause{Count: len(c.Nodes), Cause: c.Text(), Action: orDash(string(r.Nodes[c.Rep].Action)), Nodes: which, Href: "#node-" + strconv.Itoa(c.Rep)})
	}
	p.Across = sizeCharts(r.Runs, true)
	groups := scalingGroups(r.Runs)
	if len(groups) > 0 {
		p.Scaling = scalingCharts(groups)
	}
	// The tables gdrcheck run prints, in its order, GPUDirect RDMA among
	// them. The console lists the failures (WriteFailures) for its 100
	// columns; a page wraps cells, so they are a table after the summary.
	tables := ConsoleTables(r)
	if !r.Folded() {
		tables = slices.Insert(tables, 1, FailuresTable(r))
	}
	// Each node's section lists its own skips; across nodes, the reasons
	// grouped say which skipped where.
	if len(r.Nodes) > 1 {
		tables = append(tables, SkipsTable(r))
	}
	for _, t := range tables {
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
		Profile: n.Profile, Class: "good", Size: n.Size(),
	}
	hn.Badge, hn.BadgeClass = nodeBadge(n)
	if n.Size() > 1 {
		hn.Name = nodeLabel(n)
		hn.Members = hostlist.Compress(n.Names())
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
		switch s.Status() {
		case results.SuiteFail:
			hs.Status, hs.Class = results.SuiteFail, "bad"
		case results.SuiteSkip:
			hs.Status, hs.Class = results.SuiteSkip, "muted"
		}
		hn.Suites = append(hn.Suites, hs)
	}
	hn.Charts = sizeCharts(n.Runs, false)
	hn.Bars = fallbackCharts(n)
	return hn
}

// commandLine is the gdrcheck call as a shell would take it back.
func commandLine(args []string) string {
	if len(args) == 0 {
		return "-" // a collected job records no command line
	}
	words := []string{"gdrcheck"}
	for _, a := range args {
		q, err := shellquote.Word(a)
		if err != nil {
			q = strconv.Quote(a) // what sh cannot hold is still shown, escaped
		}
		words = append(words, q)
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
