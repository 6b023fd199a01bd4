package reports

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
)

// The digest of a folded job (results/fold.go): what a person reads first
// at 16,384 nodes, in the console and at the top of the page. The verdict,
// every node that failed, could not be evaluated or never reported,
// grouped by its cause, and one line per group of alike healthy nodes.

// nodeLabel names a node in a table: itself, or the nodes it stands for.
func nodeLabel(n results.Node) string {
	if n.Size() == 1 {
		return n.Name
	}
	return fmt.Sprintf("%s (%d nodes)", hostlist.Compress(n.Names()), n.Size())
}

// Cause is one cause of failure and the nodes that show it.
type Cause struct {
	Cause string
	Nodes []string
	// Rep is the index in Results.Nodes of the first node's group.
	Rep int
}

// Text is the cause as a person reads it: results.Node.Cause writes each
// node's own name as {node}, so alike causes group; one node's name goes
// back in, and for several the table's "which" column names them.
func (c Cause) Text() string {
	who := "(each)"
	if len(c.Nodes) == 1 {
		who = c.Nodes[0]
	}
	return strings.ReplaceAll(c.Cause, "{node}", who)
}

// Causes groups every failed, unevaluable and missing node by its cause
// (results.Node.Cause), the causes with the most nodes first.
func Causes(r *results.Results) []Cause {
	by := map[string]*Cause{}
	var order []string
	for i, rep := range r.Nodes {
		visit := func(n results.Node) {
			c := n.Cause()
			if c == "" {
				return
			}
			if rep.Name == results.AllocationNode {
				c = "allocation " + c
			}
			k, ok := by[c]
			if !ok {
				k = &Cause{Cause: c, Rep: i}
				by[c] = k
				order = append(order, c)
			}
			k.Nodes = append(k.Nodes, n.Name)
		}
		visit(rep)
		if rep.Group != nil {
			for _, m := range rep.Group.Members {
				visit(m)
			}
		}
	}
	out := make([]Cause, 0, len(order))
	for _, c := range order {
		out = append(out, *by[c])
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Nodes) > len(out[j].Nodes) })
	return out
}

// StatusCounts counts the nodes of each status, the allocation entry left
// out.
func StatusCounts(r *results.Results) map[string]int {
	out := map[string]int{}
	r.Each(func(n results.Node) {
		if n.Name != results.AllocationNode {
			out[n.Status]++
		}
	})
	return out
}

// CausesTable is the failing nodes by cause.
func CausesTable(r *results.Results) Table {
	t := Table{Title: "Failing nodes by cause", Header: []string{"nodes", "cause", "action", "which"}}
	for _, c := range Causes(r) {
		t.Rows = append(t.Rows, []string{strconv.Itoa(len(c.Nodes)), c.Text(), orDash(string(r.Nodes[c.Rep].Action)), hostlist.Compress(c.Nodes)})
	}
	return t
}

// GroupsTable is one line per group of alike nodes.
func GroupsTable(r *results.Results) Table {
	t := Table{Title: "Nodes, alike ones together", Header: []string{"nodes", "which", "status", "profile", "driver", "mechanism", "passed", "failed", "skipped", "verdict"}}
	for _, n := range r.Nodes {
		if n.Name == results.AllocationNode {
			continue
		}
		c := n.Counts()
		verdict := "PASS"
		if n.Failed() {
			verdict = "FAIL"
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(n.Size()), hostlist.Compress(n.Names()), n.Status, dash(n.Profile), dash(n.Fact("driver")), dash(n.Fact("mechanism")),
			strconv.Itoa(c.Passed), strconv.Itoa(c.Failed), strconv.Itoa(c.Skipped), verdict})
	}
	return t
}

// VerdictLine is the job's verdict in one line: the exit code and what
// the nodes came to.
func VerdictLine(r *results.Results) string {
	code := r.ExitCode()
	word := map[int]string{results.ExitPassed: "PASS", results.ExitFailed: "FAIL", results.ExitUnevaluable: "UNEVALUABLE"}[code]
	sc := StatusCounts(r)
	nodes := 0
	for _, k := range sc {
		nodes += k
	}
	failed := 0
	for _, c := range Causes(r) {
		if !strings.HasPrefix(c.Cause, "allocation ") {
			failed += len(c.Nodes)
		}
	}
	var parts []string
	for _, s := range []string{results.NodeEvaluated, results.NodeUnevaluable, results.NodeMissing, results.NodeInterrupted} {
		if sc[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", sc[s], s))
		}
	}
	line := fmt.Sprintf("%s (exit %d): %d nodes, %d failing; %s", word, code, nodes, failed, strings.Join(parts, ", "))
	for _, n := range r.Nodes {
		if n.Name == results.AllocationNode {
			if n.Failed() {
				line += "; the allocation FAILED"
			} else {
				line += "; the allocation passed"
			}
		}
	}
	return line
}

// ConsoleTables are the tables a run, collect or report prints, in order.
// A folded job prints its digest (causes, groups) and the allocation's
// tables; every table is made from the groups' representatives, so none
// grows with the node count.
func ConsoleTables(r *results.Results) []Table {
	if r.Folded() {
		return []Table{CausesTable(r), GroupsTable(r), ScalingTable(r), GDRTable(r), CompareTable(r)}
	}
	// Failures follow as a list (WriteFailures): their messages would
	// make a table hundreds of columns wide.
	return []Table{SummaryTable(r), GDRTable(r), ScalingTable(r), FallbackTable(r), MPITable(r), ComparisonTable(r), RDMATable(r), ContainerTable(r), CompareTable(r)}
}
