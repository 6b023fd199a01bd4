package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// WriteFailures writes every failed spec, and every node that could not
// be evaluated, as a list readable at 100 columns: the node, suite and
// spec, then the message, a finding a line where there are several (the
// message's first line, which sums them up for JUnit, is not repeated).
// FailuresTable is the same for the HTML report.
func WriteFailures(w io.Writer, r *results.Results, format string) {
	var items [][2]string
	for _, n := range r.Nodes {
		if n.Status != results.NodeEvaluated {
			items = append(items, [2]string{nodeLabel(n) + ": " + n.Status, n.Reason})
		}
		for _, s := range n.Suites {
			for _, sp := range s.Specs {
				if sp.Failed() {
					head := nodeLabel(n) + " " + s.Name + ": " + sp.Name
					if sp.Action != "" {
						head += " (action " + remedyText(sp) + ")"
					}
					items = append(items, [2]string{head, sp.Message})
				}
			}
		}
	}
	if len(items) == 0 {
		return
	}
	md := format == FormatMarkdown
	if md {
		fmt.Fprint(w, "### Failures\n\n")
	} else {
		fmt.Fprintln(w, "Failures")
	}
	clean := func(s string) string {
		s = cleanText(s)
		if md {
			s = markdownCell(s)
		}
		return s
	}
	for _, it := range items {
		if md {
			fmt.Fprintf(w, "- %s\n", clean(it[0]))
		} else {
			fmt.Fprintf(w, "  %s\n", strings.Join(wrap(clean(it[0]), listWidth()-2), "\n    "))
		}
		lines := strings.Split(strings.TrimRight(it[1], "\n"), "\n")
		if len(lines) > 1 {
			lines = lines[1:]
		}
		for _, l := range lines {
			if md {
				fmt.Fprintf(w, "  - %s\n", clean(l))
				continue
			}
			prefix := "    "
			if len(lines) > 1 {
				prefix = "    - "
			}
			for i, part := range wrap(clean(l), listWidth()-len(prefix)) {
				if i > 0 {
					prefix = strings.Repeat(" ", len(prefix))
				}
				fmt.Fprintf(w, "%s%s\n", prefix, part)
			}
		}
	}
	fmt.Fprintln(w)
}
