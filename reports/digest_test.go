package reports

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// 40 nodes in 20 pairs, one slow: the alike pairs are one row, the slow
// one keeps its name, so the table does not grow with the job.
func TestScalingTableFoldsAlikePairs(t *testing.T) {
	r := &results.Results{}
	for i := 1; i < 40; i += 2 {
		bw := 361.03
		if i == 7 {
			bw = 91.94
		}
		r.Runs = append(r.Runs, results.Run{Suite: "pairwise", Op: "all_reduce", Nodes: []string{fmt.Sprintf("n%02d", i), fmt.Sprintf("n%02d", i+1)}, BusBW: bw,
			Transports: map[string]int{"NET/IB/GDRDMA": 8}, Points: []results.Point{{Size: 8, TimeUS: 30}, {Size: 1 << 31, BusBW: bw}}})
	}
	tb := ScalingTable(r)
	var rows []string
	for _, row := range tb.Rows {
		rows = append(rows, row[0]+" "+row[2])
	}
	got := strings.Join(rows, "; ")
	if want := "19 pairs of n[01-06,09-40] 361.03; pair n07+n08 91.94"; got != want {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// A cause reads with the node's own name where one node has it: the
// {node} that lets alike causes group is not for people.
func TestACauseNamesItsOneNodeAndNoPlaceholder(t *testing.T) {
	missing := func(name string) results.Node {
		return results.Node{Name: name, Status: results.NodeMissing, Reason: "node " + name + " never reported (no results.json)"}
	}
	one := &results.Results{Nodes: []results.Node{missing("node4")}}
	many := &results.Results{Nodes: []results.Node{missing("node4"), missing("node7")}}
	for _, tc := range []struct {
		r    *results.Results
		want string
	}{
		{one, "missing: node node4 never reported"},
		{many, "missing: node (each) never reported"},
	} {
		cs := Causes(tc.r)
		if len(cs) != 1 {
			t.Fatalf("causes %+v, want one", cs)
		}
		got := CausesTable(tc.r).Rows[0][1]
		if !strings.HasPrefix(got, tc.want) || strings.Contains(got, "{node}") {
			t.Errorf("cause %q, want it to start %q with no {node}", got, tc.want)
		}
	}
}
