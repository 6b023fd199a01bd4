package reports

import (
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// CompareTable lists what changed between two runs (gdrcheck compare,
// --compare-to): one row per change, regressions first within a node;
// a node with nothing changed gets one row saying so.
func CompareTable(r *results.Results) Table {
	t := Table{Title: "Compared with the run before", Header: []string{"node", "aspect", "verdict", "change"}}
	for _, n := range r.Nodes {
		var rows [][]string
		var skipped []string
		for _, s := range n.Suites {
			if s.Name != results.SuiteCompare {
				continue
			}
			for _, sp := range s.Specs {
				switch sp.State {
				case results.StateSkipped:
					skipped = append(skipped, sp.Message)
					continue
				case results.StatePassed:
				default:
					for _, line := range changeLines(sp.Message) {
						rows = append(rows, []string{nodeLabel(n), sp.Name, "REGRESSED", line})
					}
				}
				for _, note := range sp.Notes {
					if note != "unchanged" {
						rows = append(rows, []string{nodeLabel(n), sp.Name, "changed", note})
					}
				}
			}
			switch {
			case len(rows) > 0:
			case len(skipped) > 0:
				rows = append(rows, []string{nodeLabel(n), "-", "not compared", skipped[0]})
			default:
				rows = append(rows, []string{nodeLabel(n), "-", "unchanged", "-"})
			}
		}
		// Regressions before notes, each kind in aspect order.
		var worse, other [][]string
		for _, row := range rows {
			if row[2] == "REGRESSED" {
				worse = append(worse, row)
			} else {
				other = append(other, row)
			}
		}
		t.Rows = append(append(t.Rows, worse...), other...)
	}
	return t
}

// changeLines splits a compare spec's failure message: one change, or a
// summary line followed by every change.
func changeLines(msg string) []string {
	lines := strings.Split(msg, "\n")
	if len(lines) > 1 {
		return lines[1:]
	}
	return lines
}
