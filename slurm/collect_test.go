package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

	res, err := Collect(dir, "job 7 ended TIMEOUT")
	if err != nil {
		t.Fatal(err)
	}
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
