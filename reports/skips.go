package reports

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
)

// skipGroup is one distinct skip reason across the nodes.
type skipGroup struct {
	kind, message string
	suites        []string
	nodes         []string
	count         int
}

// skipGroups groups every skipped spec by kind and message, across
// nodes: a reason shared by eight nodes is one line.
func skipGroups(r *results.Results) []skipGroup {
	var out []skipGroup
	at := map[[2]string]int{}
	for _, n := range r.Nodes {
		if n.Status != results.NodeEvaluated {
			continue
		}
		for _, sr := range n.SkipReasons() {
			if sr.Kind == "" {
				// A results.json from before skips had kinds.
				sr.Kind = results.SkipNotApplicable
			}
			k := [2]string{sr.Kind, sr.Message}
			i, ok := at[k]
			if !ok {
				i = len(out)
				at[k] = i
				out = append(out, skipGroup{kind: sr.Kind, message: sr.Message})
			}
			g := &out[i]
			g.count += sr.Count
			g.nodes = append(g.nodes, n.Names()...)
			for _, s := range sr.Suites {
				if !slices.Contains(g.suites, s) {
					g.suites = append(g.suites, s)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].kind == results.SkipCannotRun && out[j].kind != results.SkipCannotRun
	})
	return out
}

// WriteSkips writes why specs skipped, one line per distinct reason with
// its count: first those that could not run here (a tool missing: what
// to install or which flag to set), then those that do not apply to the
// node. Then, where a selected suite could not run at all, the line that
// says the run exits 2 for it. Nothing when no spec skipped.
func WriteSkips(w io.Writer, r *results.Results, format string) {
	groups := skipGroups(r)
	if len(groups) == 0 {
		return
	}
	multi := len(r.Nodes) > 1
	bullet := "  "
	if format == FormatMarkdown {
		bullet = "- "
	}
	kind := ""
	for i, g := range groups {
		if i == 0 || g.kind != kind {
			kind = g.kind
			title := "Skipped: does not apply here"
			if kind == results.SkipCannotRun {
				title = "Skipped: could not run here"
			}
			if format == FormatMarkdown {
				fmt.Fprintf(w, "### %s\n\n", title)
			} else {
				fmt.Fprintf(w, "%s\n", title)
			}
		}
		where := strings.Join(g.suites, ", ")
		if multi {
			where += " on " + hostlist.Compress(g.nodes)
		}
		line := fmt.Sprintf("%s (%d %s): %s", where, g.count, plural(g.count, "spec"), firstLine(g.message))
		line = cleanText(line)
		if format == FormatMarkdown {
			line = markdownCell(line)
		}
		if format == FormatMarkdown {
			fmt.Fprintf(w, "%s%s\n", bullet, line)
			continue
		}
		for i, part := range wrap(line, listWidth()-4) {
			if i > 0 {
				bullet = "    "
			}
			fmt.Fprintf(w, "%s%s\n", bullet, part)
		}
		bullet = "  "
	}
	fmt.Fprintln(w)
	un := r.CannotRun()
	if len(un) == 0 || r.ExitCode() != results.ExitUnevaluable {
		return
	}
	var names []string
	reasons := map[string]bool{}
	var why []string
	for _, u := range un {
		name := u.Suite
		if multi {
			name += " on " + u.Node
		}
		names = append(names, name)
		for _, m := range u.Reasons {
			if !reasons[m] {
				reasons[m] = true
				why = append(why, firstLine(m))
			}
		}
	}
	line := cleanText(fmt.Sprintf("exit 2: %s could not run here: %s", strings.Join(names, ", "), strings.Join(why, "; ")))
	if format == FormatMarkdown {
		line = markdownCell(line)
	}
	if format == FormatMarkdown {
		fmt.Fprintf(w, "%s\n\n", line)
		return
	}
	fmt.Fprintf(w, "%s\n\n", strings.Join(wrap(line, listWidth()), "\n  "))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// SkipsTable is WriteSkips for the HTML report: one row per distinct
// reason, those that could not run first, so a page never shows a skipped
// suite without saying why.
func SkipsTable(r *results.Results) Table {
	t := Table{Title: "Skipped, and why", Header: []string{"kind", "suites", "nodes", "specs", "reason"}}
	for _, g := range skipGroups(r) {
		kind := "does not apply here"
		if g.kind == results.SkipCannotRun {
			kind = "could not run here"
		}
		t.Rows = append(t.Rows, []string{kind, strings.Join(g.suites, ", "), hostlist.Compress(g.nodes), fmt.Sprint(g.count), firstLine(g.message)})
	}
	return t
}
