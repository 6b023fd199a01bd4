package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// A job directory as a job with a container image leaves it when node2
// never reported and no container step got to run anywhere.
func TestCollectAccountsForEveryNodeAndItsContainer(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if err := writeJSON(filepath.Join(dir, jobFile), JobInfo{ID: "7", Nodes: []string{"node1", "node2"}, Started: t0, ContainerImage: "nvcr.io#nvidia/pytorch:24.10-py3"}); err != nil {
		t.Fatal(err)
	}
	steps := []Step{
		{Name: "node-suites", Nodes: []string{"node1", "node2"}, Started: t0, Finished: t0.Add(90 * time.Second), TimedOut: true, Error: "watchdog: no end after 1m30s"},
		{Name: "container-suite", Nodes: []string{"node1", "node2"}, Started: t0.Add(time.Minute), Finished: t0.Add(61 * time.Second), ExitCode: 1, Error: "exit status 1"},
	}
	if err := writeJSON(filepath.Join(dir, stepsFile), steps); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, nodesDir, "node1"), 0o755)
	good := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: "node1", Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "topology", Specs: []results.Spec{{Name: "x", State: results.StatePassed}}}}}}}
	if err := good.Write(filepath.Join(dir, nodesDir, "node1", resultsFile)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, nodesDir, "node2.log"), []byte("gdrcheck: collecting evidence\nnccl: all_reduce_perf (direct) ...\n"), 0o644)
	os.WriteFile(filepath.Join(dir, nodesDir, "node1-container.log"), []byte("srun: unrecognized option '--container-image=nvcr.io#nvidia/pytorch:24.10-py3'\n"), 0o644)

	m, err := Collect(dir, CollectOptions{Note: "job 7 ended TIMEOUT"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Discard()
	res := m.Results
	var names []string
	for _, n := range res.Nodes {
		names = append(names, n.Name+"="+n.Status)
	}
	if got := strings.Join(names, " "); got != "node1=evaluated node2=missing node1-container=missing node2-container=missing" {
		t.Fatalf("nodes %s", got)
	}
	if r := res.Nodes[1].Reason; !strings.Contains(r, "the node-suites step hung and the watchdog stopped it after 1m30s") || !strings.Contains(r, "job 7 ended TIMEOUT") || !strings.Contains(r, "last output: gdrcheck: collecting evidence | nccl: all_reduce_perf (direct) ...") {
		t.Errorf("node2: %s", r)
	}
	if r := res.Nodes[2].Reason; !strings.Contains(r, "the container-suite step failed: exit status 1") || !strings.Contains(r, "unrecognized option '--container-image") {
		t.Errorf("node1-container: %s", r)
	}
	if res.ExitCode() != results.ExitUnevaluable {
		t.Errorf("exit %d", res.ExitCode())
	}
	if f := FailedNodes(res); len(f) != 3 {
		t.Errorf("failed %v", f)
	}
}

func TestContainerStepRunsOnlyTheContainerSuiteInTheImage(t *testing.T) {
	l := &Leader{Gdrcheck: "/opt/gdrcheck", Out: "/shared/job-7", ContainerImage: "nvcr.io#nvidia/pytorch:24.10-py3", ContainerMounts: "/data:/data", Config: JobConfig{StepTimeout: 10 * time.Minute}}
	got := strings.Join(append(l.containerArgs(), l.runArgs("/shared/job-7/nodes/{node}-container", "{node}-container", []string{"container"})...), " ")
	want := "--container-image=nvcr.io#nvidia/pytorch:24.10-py3 --container-mounts=/opt/gdrcheck:/opt/gdrcheck,/shared/job-7:/shared/job-7,/data:/data /opt/gdrcheck run -q --out /shared/job-7/nodes/{node}-container --node-name {node}-container --suites container --timeout 9m0s"
	if got != want {
		t.Errorf("step\n got %s\nwant %s", got, want)
	}
}

// The merge streams each node, evidence and all, into results.json and
// keeps only the slim copy; the set appears only on Write, results.json
// with it, and nothing staged is left behind.
func TestCollectStreamsTheEvidenceAndKeepsTheSlimCopy(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"node1", "node2"} {
		os.MkdirAll(filepath.Join(dir, nodesDir, n), 0o755)
		r := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: n, Status: results.NodeEvaluated,
			Evidence: []byte(`{"host":{"hostname":"` + n + `"}}`),
			Suites:   []results.Suite{{Name: "topology", Specs: []results.Spec{{Name: "x", State: results.StatePassed}}}}}}}
		if err := r.Write(filepath.Join(dir, nodesDir, n, resultsFile)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range m.Results.Nodes {
		if n.Evidence != nil {
			t.Errorf("%s: the slim copy kept its evidence", n.Name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, resultsFile)); !os.IsNotExist(err) {
		t.Errorf("results.json appeared before Write: %v", err)
	}
	if err := m.Write(reports.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	full, err := results.Read(filepath.Join(dir, resultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Nodes) != 2 || !strings.Contains(string(full.Nodes[1].Evidence), `"node2"`) {
		t.Errorf("merged results.json: %+v", full.Nodes)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "junit.xml nodes report.html results.json" {
		t.Errorf("job directory holds %s", got)
	}
	m2, err := Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m2.Discard()
	ents2, _ := os.ReadDir(dir)
	if len(ents2) != len(ents) {
		t.Errorf("Discard left %d entries, want %d", len(ents2), len(ents))
	}
}

// The collector passes every node through Amend before it is written, the
// allocation with the cross-node runs; a failed compare spec drains
// nothing.
func TestCollectWritesAmendedNodesAndDrainsNoComparison(t *testing.T) {
	dir := t.TempDir()
	if err := writeJSON(filepath.Join(dir, jobFile), JobInfo{ID: "8", Nodes: []string{"node1"}}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, nodesDir, "node1"), 0o755)
	os.MkdirAll(filepath.Join(dir, scaleDir), 0o755)
	one := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: "node1", Status: results.NodeEvaluated, Facts: []results.Fact{{Name: "gpus", Value: "8"}}}}}
	if err := one.Write(filepath.Join(dir, nodesDir, "node1", resultsFile)); err != nil {
		t.Fatal(err)
	}
	scale := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: AllocationNode, Status: results.NodeEvaluated, Facts: []results.Fact{{Name: "nodes", Value: "1"}}}},
		Runs: []results.Run{{Suite: "scale", Op: "all_reduce", Nodes: []string{"node1"}}}}
	if err := scale.Write(filepath.Join(dir, scaleDir, resultsFile)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	m, err := Collect(dir, CollectOptions{Amend: func(n results.Node, runs []results.Run) results.Node {
		seen[n.Name] = len(runs)
		n.Suites = append(n.Suites, results.Suite{Name: results.SuiteCompare, Specs: []results.Spec{{Name: "keeps its bandwidth", State: results.StateFailed, Message: "busbw 300 -> 200"}}})
		return n
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Write(reports.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if seen["node1"] != 0 || seen[AllocationNode] != 1 {
		t.Errorf("amend saw %v: want node1 without runs, the allocation with its one run", seen)
	}
	res, err := results.Read(filepath.Join(dir, resultsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range res.Nodes {
		if s := n.Suites; len(s) != 1 || s[0].Name != results.SuiteCompare {
			t.Errorf("%s in results.json: suites %+v", n.Name, s)
		}
	}
	if res.ExitCode() != results.ExitFailed {
		t.Errorf("exit %d, want 1", res.ExitCode())
	}
	if f := FailedNodes(res); len(f) != 0 {
		t.Errorf("a comparison drains %v", f)
	}
}
