package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/slurm"
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
	t.Parallel()
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

// makeRunCluster reads slurm/localcluster/make-run.cluster, which
// make-run.sh reads too: the node roots and nccl-tests recordings of make
// run, and with fault those of make run-fault.
func makeRunCluster(t testing.TB, fault bool) (roots map[string]string, recs map[string]string, env map[string]map[string]string) {
	t.Helper()
	b, err := os.ReadFile("../../slurm/localcluster/make-run.cluster")
	if err != nil {
		t.Fatal(err)
	}
	roots, recs = map[string]string{}, map[string]string{}
	env = map[string]map[string]string{}
	faultNode, faultRecs := "", map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		path := "../../" + f[2]
		switch f[0] {
		case "node":
			for _, n := range []string{"node1", "node2", "node3", "node4"} {
				roots[n] = strings.TrimSuffix(strings.TrimPrefix(f[2], "fixtures/nodes/"), ".ttar")
			}
		case "rec":
			recs[f[1]] = path
		case "fault-node":
			faultNode = f[1]
			if fault {
				roots[f[1]] = strings.TrimSuffix(strings.TrimPrefix(f[2], "fixtures/nodes/"), ".ttar")
			}
		case "fault-rec":
			faultRecs[f[1]] = path
		}
	}
	if fault {
		// As make-run.sh: multi-node runs with the planted node print
		// from the first node, the planted node's own runs are its own.
		own := map[string]string{}
		for k, v := range recs {
			own[k] = v
		}
		for k, v := range faultRecs {
			own[k] = v
			if strings.HasSuffix(k, "-slow") {
				recs[k] = v
			}
		}
		dir := t.TempDir()
		for k, v := range own {
			a, _ := filepath.Abs(v)
			if err := os.Symlink(a, filepath.Join(dir, k+".txt")); err != nil {
				t.Fatal(err)
			}
		}
		env["*"] = map[string]string{"GDRCHECK_FAKE_NCCL_SLOW_NODE": faultNode}
		env[faultNode] = map[string]string{"GDRCHECK_FAKE_NCCL_DIR": dir}
	}
	return roots, recs, env
}

// The job make run submits, set up as slurm/localcluster/make-run.sh does.
func TestMakeRunJobPrintsTheTablesItPrintedBefore(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	roots, recs, env := makeRunCluster(t, false)
	r, res, _ := submitJobWith(t, c, recs, roots, env)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, n := range []string{"node1", "node2", "node3", "node4"} {
		if !strings.Contains(r.stdout, "| "+n+"      | dmabuf    | yes                   | NET/IB/GDRDMA         | proven ") {
			t.Errorf("%s: GPUDirect RDMA not proven:\n%s", n, r.stdout)
		}
	}
	var rows []string
	for _, run := range res.Runs {
		rows = append(rows, fmt.Sprintf("%.2f", run.BusBW))
	}
	if len(rows) < 3 || rows[0] == rows[1] || rows[1] == rows[2] {
		t.Errorf("the scaling rows should differ: %v", rows)
	}
	checkGolden(t, unchanged+"make-run.tables.txt", tablesOf(r.stdout))
}

// make run-fault: node3 lost its peer memory. It is caught by every line
// of evidence that should catch it, named, and drained; no other node is.
func TestMakeRunFaultCatchesNamesAndDrainsThePlantedNode(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	roots, recs, env := makeRunCluster(t, true)
	r, res, _ := submitJobWith(t, c, recs, roots, env, "--drain-on-fail")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	failed := slurm.FailedNodes(res)
	if len(failed) != 1 || !strings.HasPrefix(failed["node3"], "kernel: no GPUDirect peer-memory mechanism works") {
		t.Errorf("failed nodes %v, want node3 alone for its peer memory", failed)
	}
	// No peer memory is a module to load, however slow it left the node.
	if !strings.HasSuffix(failed["node3"], " action=RELOAD_DRIVER") {
		t.Errorf("node3's drain reason %q does not end in action=RELOAD_DRIVER", failed["node3"])
	}
	for _, want := range []string{
		// The verdict cell wraps at 120 columns: its row and its start.
		"| node3      | none      | NO                    | NET/IB                | NOT PROVEN: with P2P",
		"slow in every pair it was in: node3",
		"Nodes that failed (drained by the job",
		"  node3: kernel: no GPUDirect peer-memory mechanism works",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	nodesNow, err := slurm.Client{Env: c.Vars()}.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodesNow {
		drained := strings.Contains(n["State"], "DRAIN")
		if drained != (n["NodeName"] == "node3") {
			t.Errorf("%s: state %s (%s)", n["NodeName"], n["State"], n["Reason"])
		}
	}
	undrain := exec.Command(bin, "undrain")
	undrain.Env = c.Env()
	if out, err := undrain.CombinedOutput(); err != nil {
		t.Errorf("undrain: %v %s", err, out)
	}
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
