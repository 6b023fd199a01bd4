package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The outputs people and Jenkins read, recorded before the house moved
// (issue 11): a change to them is a change of behaviour and must be made
// on purpose, with -update and a commit that says why.
const unchanged = "testdata/unchanged/"

func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s changed:\n--- want\n%s\n--- got\n%s", golden, want, got)
	}
}

func TestRecordedRunsRenderAsBefore(t *testing.T) {
	files, _ := filepath.Glob("../../fixtures/results/*.results.json")
	if len(files) == 0 {
		t.Fatal("no recorded runs in fixtures/results")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".results.json")
		for _, format := range []string{"junit", "text", "markdown"} {
			r := gdrcheck(t, "report", f, "--format", format)
			if r.code == 2 {
				t.Fatalf("report %s --format %s: exit 2\n%s", f, format, r.stderr)
			}
			ext := map[string]string{"junit": ".junit.xml", "text": ".tables.txt", "markdown": ".tables.md"}[format]
			checkGolden(t, unchanged+name+ext, r.stdout)
		}
	}
}

// The job make run submits: four nodes replaying the recorded 2 x H200
// node, nccl-tests replaying the runs recorded there (as
// slurm/localcluster/make-run.sh sets it up).
func TestMakeRunJobPrintsTheTablesItPrintedBefore(t *testing.T) {
	c := slurmCluster(t)
	rec := "../../fixtures/nccl-tests/"
	recs := map[string]string{
		"all_reduce-direct":           rec + "all_reduce_perf-h200x2-nv18-mpi-np2-direct-cumem.txt",
		"all_reduce-p2p-disabled":     rec + "all_reduce_perf-h200x2-nv18-mpi-np2-p2p-disabled-shm.txt",
		"all_reduce-p2p-shm-disabled": rec + "all_reduce_perf-h200x2-nv18-mpi-np2-p2p-shm-disabled-socket.txt",
		"all_gather-direct":           rec + "all_gather_perf-h200x2-nv18-direct-p2p.txt",
		"sendrecv-direct":             rec + "sendrecv_perf-h200x2-nv18-direct-p2p.txt",
	}
	roots := map[string]string{}
	for _, n := range []string{"node1", "node2", "node3", "node4"} {
		roots[n] = "h200x2-nv18-vm"
	}
	r, _, _ := submitJobWith(t, c, recs, roots, nil)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	checkGolden(t, unchanged+"make-run.tables.txt", tablesOf(r.stdout))
}

// tablesOf is the part of a submit's output that is its tables: from the
// summary to the paths of the files written.
func tablesOf(out string) string {
	i := strings.Index(out, "\nSummary")
	j := strings.Index(out, "\nJUnit:")
	if i < 0 || j < i {
		return out
	}
	return out[i+1 : j+1]
}
