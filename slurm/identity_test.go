package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// A job whose nodes/n2/results.json is a copy of n1's, and one whose n3
// files a foreign node's, and one whose n4 carries two nodes: each of
// them is unevaluable saying why, n1 is merged once, and the job exits 2.
func TestCollectRefusesResultsThatAreNotTheNodesOwn(t *testing.T) {
	dir := t.TempDir()
	if err := writeJSON(filepath.Join(dir, jobFile), JobInfo{ID: "9", Nodes: []string{"n1", "n2", "n3", "n4"}}); err != nil {
		t.Fatal(err)
	}
	node := func(name string) results.Node {
		return results.Node{Name: name, Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "topology", Specs: []results.Spec{{Name: "x", State: results.StatePassed}}}}}
	}
	files := map[string][]results.Node{
		"n1": {node("n1")},
		"n2": {node("n1")},            // a copy of n1's
		"n3": {node("gpu-elsewhere")}, // a foreign node's
		"n4": {node("n4"), node("n1")},
	}
	for dirName, nodes := range files {
		os.MkdirAll(filepath.Join(dir, nodesDir, dirName), 0o755)
		r := &results.Results{Schema: results.Schema, Nodes: nodes}
		if err := r.Write(filepath.Join(dir, nodesDir, dirName, resultsFile)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Discard()
	var names []string
	reasons := map[string]string{}
	for _, n := range m.Results.Nodes {
		names = append(names, n.Name+"="+n.Status)
		reasons[n.Name] = n.Reason
	}
	if got := strings.Join(names, " "); got != "n1=evaluated n2=unevaluable n3=unevaluable n4=unevaluable" {
		t.Fatalf("nodes %s; want n1 once and the others unevaluable", got)
	}
	for name, want := range map[string]string{
		"n2": `results.json reports node "n1", not n2: a copy of another node's results or a foreign node's; node n2's own results are missing`,
		"n3": `reports node "gpu-elsewhere", not n3`,
		"n4": `holds 2 nodes ("n4", "n1"), where a node's results carry exactly one`,
	} {
		if !strings.Contains(reasons[name], want) || !strings.Contains(reasons[name], filepath.Join("nodes", name, "results.json")) {
			t.Errorf("%s: %q; want the file named and %q", name, reasons[name], want)
		}
	}
	if c := m.Results.ExitCode(); c != results.ExitUnevaluable {
		t.Errorf("exit %d, want 2", c)
	}
}
