package reports

import (
	"fmt"
	"io"
	"strconv"

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
		if format == FormatMarkdown {
			fmt.Fprintf(w, "### %s\n\n", t.Title)
		} else {
			fmt.Fprintf(w, "%s\n", t.Title)
		}
	}
	tbl := tablewriter.NewTable(w,
		tablewriter.WithRenderer(r),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	tbl.Header(t.Header)
	if err := tbl.Bulk(t.Rows); err != nil {
		return err
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// SummaryTable counts specs per node and suite.
func SummaryTable(r *Results) Table {
	t := Table{Title: "Summary", Header: []string{"node", "suite", "passed", "failed", "skipped", "status"}}
	for _, n := range r.Nodes {
		if n.Status != NodeEvaluated {
			t.Rows = append(t.Rows, []string{n.Name, "-", "0", "1", "0", n.Status})
		}
		for _, s := range n.Suites {
			var c Counts
			for _, sp := range s.Specs {
				switch sp.State {
				case StatePassed:
					c.Passed++
				case StateSkipped, StatePending:
					c.Skipped++
				default:
					c.Failed++
				}
			}
			status := "PASS"
			if c.Failed > 0 {
				status = "FAIL"
			}
			t.Rows = append(t.Rows, []string{n.Name, s.Name, strconv.Itoa(c.Passed), strconv.Itoa(c.Failed), strconv.Itoa(c.Skipped), status})
		}
	}
	return t
}

// FailuresTable lists every failed spec, and every node that could not be
// evaluated, with its message.
func FailuresTable(r *Results) Table {
	t := Table{Title: "Failures", Header: []string{"node", "suite", "spec", "message"}}
	for _, n := range r.Nodes {
		if n.Status != NodeEvaluated {
			t.Rows = append(t.Rows, []string{n.Name, "-", n.Status, firstLine(n.Reason)})
		}
		for _, s := range n.Suites {
			for _, sp := range s.Specs {
				if sp.State == StatePassed || sp.State == StateSkipped || sp.State == StatePending {
					continue
				}
				t.Rows = append(t.Rows, []string{n.Name, s.Name, sp.Name, firstLine(sp.Message)})
			}
		}
	}
	return t
}
