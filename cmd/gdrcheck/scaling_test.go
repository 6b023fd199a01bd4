package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

// The runs recorded on one H200 playing four nodes, emu2 slowed there
// (fixtures/nccl-tests INDEX.md), keyed for the fake nccl-tests: a run
// with the planted slow node replays a slow recording.
func emulatedRecordings() map[string]string {
	r := recorded + "/all_reduce_perf-h200x1-emu-"
	return map[string]string{
		"all_reduce-direct-n1":      r + "n1.txt",
		"all_reduce-direct-n2":      r + "n2-socket.txt",
		"all_reduce-direct-n2-slow": r + "pair-slow-socket.txt",
		"all_reduce-direct-n4":      r + "n4-socket.txt",
		"all_reduce-direct-n4-slow": r + "n4-slow-socket.txt",
	}
}

// runScaling runs the scaling suite across nodes with the fake
// nccl-tests; "env" as the launcher starts each run right here.
func runScaling(t *testing.T, recs map[string]string, slowNode string, args ...string) (result, *results.Results, string) {
	t.Helper()
	fake, env := fakebin.NCCLTests(t, []string{"all_reduce_perf"}, recs)
	out := t.TempDir()
	cmd := exec.Command(bin, append([]string{"run", "--suites", "scaling", "--launcher", "env", "--nccl-tests-dir", fake, "--out", out}, args...)...)
	cmd.Env = append(append(os.Environ(), env...), "GDRCHECK_FAKE_NCCL_SLOW_NODE="+slowNode)
	r := runCmd(t, cmd)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	validateJUnit(t, filepath.Join(out, "junit.xml"))
	return r, res, out
}

func scalingSpec(t *testing.T, res *results.Results, name string) results.Spec {
	t.Helper()
	for _, n := range res.Nodes {
		for _, s := range n.Suites {
			for _, sp := range s.Specs {
				if sp.Name == name {
					return sp
				}
			}
		}
	}
	t.Fatalf("no spec %q in %+v", name, res.Nodes)
	return results.Spec{}
}

func TestTheScalingSuiteNamesTheSlowedEmulatedNodeAndNoOther(t *testing.T) {
	t.Parallel()
	// emu3 here plays the recordings' emu2: slow in both of its pairs.
	r, res, out := runScaling(t, emulatedRecordings(), "emu3", "--nodes", "emu[1-4]", "--allow-missing-baseline")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (a slow node)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if len(res.Nodes) != 1 || res.Nodes[0].Name != "allocation" {
		t.Fatalf("nodes %+v, want the allocation alone", res.Nodes)
	}
	iso := scalingSpec(t, res, "isolates the node that slows multi-node all_reduce")
	if iso.State != results.StateFailed || iso.Message != "slow in every pair it was in: emu3" {
		t.Errorf("isolation: %s %q", iso.State, iso.Message)
	}
	for _, k := range []string{"1", "2", "4"} {
		sp := scalingSpec(t, res, "runs all_reduce across "+k+" node(s) at its baseline bandwidth")
		if sp.State == results.StateFailed {
			t.Errorf("%s: %s", sp.Name, sp.Message)
		}
	}
	one := scalingSpec(t, res, "runs all_reduce across 1 node(s) at its baseline bandwidth")
	if one.State != results.StateSkipped || !strings.Contains(one.Message, "one rank") {
		t.Errorf("one node, one rank: %s %q", one.State, one.Message)
	}
	two := scalingSpec(t, res, "runs all_reduce across 2 node(s) at its baseline bandwidth")
	if !slices.Contains(two.Notes, "all_reduce across 2 node(s): NET/Socket") {
		t.Errorf("the two-node run should name its transport: %q", two.Notes)
	}
	// Two rounds of two pairs after the scaling runs, logs kept.
	var pairs int
	for _, run := range res.Runs {
		if run.Suite == "pairwise" {
			pairs++
		}
		if _, err := os.Stat(filepath.Join(out, run.Log)); err != nil {
			t.Errorf("run %v: log %q: %v", run.Nodes, run.Log, err)
		}
	}
	if pairs != 4 {
		t.Errorf("%d pairwise runs, want 4", pairs)
	}
	junit, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
	if !strings.Contains(string(junit), `name="isolates the node that slows multi-node all_reduce" classname="gdrcheck.allocation.scaling"`) {
		t.Errorf("JUnit lacks the allocation's isolation case:\n%s", junit)
	}
}

// A job of eight nodes that matched no baseline: node7's own all_reduce is
// 30 % below the others', and it is slow with every partner.
func TestInAnEightNodeJobWithoutBaselineTheSlowNodeIsTheOnlyOutlier(t *testing.T) {
	t.Parallel()
	src, err := results.Read("../../fixtures/results/h200x2-nv18-all-suites.results.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nodes := []string{"node1", "node2", "node3", "node4", "node5", "node6", "node7", "node8"}
	for _, name := range nodes {
		n := src.Nodes[0]
		n.Name, n.Profile = name, ""
		n.Runs = slices.Clone(n.Runs)
		for i, run := range n.Runs {
			if name == "node7" && run.Suite == "collectives" && run.Op == "all_reduce" {
				n.Runs[i].BusBW = 0.7 * run.BusBW
			}
		}
		one := *src
		one.Nodes = []results.Node{n}
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := one.Write(filepath.Join(dir, name, "results.json")); err != nil {
			t.Fatal(err)
		}
	}
	recs := emulatedRecordings()
	recs["all_reduce-direct"] = recs["all_reduce-direct-n4"] // eight nodes
	r, res, _ := runScaling(t, recs, "node7", "--nodes", "node[1-8]", "--node-results", dir, "--allow-missing-baseline")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	out := scalingSpec(t, res, "has no node whose own bus bandwidth is far below the job's")
	if out.State != results.StateFailed || !strings.HasPrefix(out.Message, "outlier node7: ") || strings.Contains(out.Message, "more") {
		t.Errorf("outliers: %s %q", out.State, out.Message)
	}
	iso := scalingSpec(t, res, "isolates the node that slows multi-node all_reduce")
	if iso.Message != "slow in every pair it was in: node7" {
		t.Errorf("isolation: %s %q", iso.State, iso.Message)
	}
	for _, n := range []string{"node1", "node2", "node3", "node4", "node5", "node6", "node8"} {
		for _, sp := range []results.Spec{out, iso} {
			if strings.Contains(sp.Message, n) || strings.Contains(strings.Join(sp.Notes, "\n"), n+" is slow") {
				t.Errorf("%s names %s: %q %q", sp.Name, n, sp.Message, sp.Notes)
			}
		}
	}
}

func TestScalingFlagsOutsideTheScalingSuiteAreRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--suites", "topology", "--nodes", "a,b"},
		{"run", "--suites", "scaling,topology", "--nodes", "a,b"},
		{"run", "--suites", "scaling"},
		{"run", "--suites", "scaling", "--nodes", "a,a"},
		{"run", "--suites", "scaling", "--nodes", "a,b", "--launcher", "srun -N {node}"},
		{"run", "--suites", "scaling", "--nodes", "node[1-2]", "--nodes", "node2"},
		{"run", "--suites", "scaling", "--nodes", "a,b", "--nodes-file", "nodes.txt"},
		{"run", "--suites", "scaling", "--nodes-file", "/nonexistent/nodes.txt"},
		{"run", "--suites", "topology", "--nodes-file", "nodes.txt"},
		// Names that could split a list or read as an option, and a
		// range too large to hold.
		{"run", "--suites", "scaling", "--nodes", "a b,c"},
		{"run", "--suites", "scaling", "--nodes", "a,-rf"},
		{"run", "--suites", "scaling", "--nodes", "gpu[1-999999999]"},
		{"run", "--suites", "scaling", "--nodes", "gpu[1-2"},
	} {
		r := gdrcheck(t, args...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("gdrcheck %v: exit %d, stderr %q; want 2 with the reason", args, r.code, r.stderr)
		}
	}
}

// The emulated launcher passes its nodes as a hostlist (emu[1-10]): each
// rank finds its node by position in the expanded list.
func TestEmulatedRankExpandsItsHostlist(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin, "emulated-rank", "--nodes", "emu[1-10]", "--gpus-per-node", "1", "--", "true")
	cmd.Env = append(os.Environ(), "OMPI_COMM_WORLD_RANK=10")
	r := runCmd(t, cmd)
	if r.code == 0 || !strings.Contains(r.stderr, "rank 10 is beyond 10 node(s)") {
		t.Errorf("exit %d, stderr %q: want rank 10 beyond the 10 nodes of emu[1-10]", r.code, r.stderr)
	}
	cmd = exec.Command(bin, "emulated-rank", "--nodes", "emu1,-x", "--", "true")
	cmd.Env = append(os.Environ(), "OMPI_COMM_WORLD_RANK=0")
	if r := runCmd(t, cmd); r.code == 0 || !strings.Contains(r.stderr, "not a node name") {
		t.Errorf("a hostile node name: exit %d, stderr %q", r.code, r.stderr)
	}
}
