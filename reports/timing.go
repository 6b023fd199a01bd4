package reports

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/results"
)

// TimingTable is the node's k slowest steps and specs (`run -v`): where a
// run's time went, from the durations results.json keeps.
func TimingTable(n results.Node, k int) Table {
	t := Table{
		Title:  fmt.Sprintf("Where the time went on %s (the %d slowest steps and specs)", n.Name, k),
		Header: []string{"seconds", "of", "step or spec"},
	}
	for _, s := range n.Slowest(k) {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%.4f", s.Duration), s.Kind, s.Name})
	}
	return t
}
