package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

// Stand-ins for Slurm's commands in a job of many nodes on this machine.
// scontrol show hostnames prints the job's nodes. srun drops its options:
// a node step (gdrcheck on each node) has already left its results.json
// and does nothing; any other command (nccl-tests) runs here, as every
// rank of the run, or, with GDRCHECK_TEST_KILL_SCALING set, SIGKILLs
// its parent, the scaling step, as the OOM killer would.
const (
	fakeScontrol = `#!/bin/sh
[ "$1 $2" = "show hostnames" ] && exec cat "$GDRCHECK_TEST_HOSTNAMES"
echo "fake scontrol: $*" >&2; exit 1
`
	fakeSrun = `#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in --*) shift;; *) break;; esac; done
case "$1" in */gdrcheck) exit 0;; esac
if [ -n "$GDRCHECK_TEST_KILL_SCALING" ]; then kill -KILL $PPID; exit 0; fi
exec "$@"
`
)

// manyNodeJob lays out a job directory of n nodes named gpunode0001 ...
// (eleven characters: from 24 nodes their names joined pass the 255-byte
// limit on a file name) whose node suites already reported, and the
// environment `gdrcheck job` runs in there: the fake Slurm first on PATH,
// the fake nccl-tests' recordings, gpunode0037 planted slow.
func manyNodeJob(t *testing.T, n int) (dir string, names []string, env []string, ncclDir string) {
	t.Helper()
	src, err := results.Read("../../fixtures/results/h200x2-nv18-all-suites.results.json")
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "job-4711")
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("gpunode%04d", i)
		names = append(names, name)
		one := *src
		node := src.Nodes[0]
		// No baseline states multi-node bandwidth for replays on one
		// machine: the job judges its own pairs.
		node.Name, node.Profile = name, ""
		one.Nodes = []results.Node{node}
		if err := os.MkdirAll(filepath.Join(dir, "nodes", name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := one.Write(filepath.Join(dir, "nodes", name, "results.json")); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	for f, s := range map[string]string{"scontrol": fakeScontrol, "srun": fakeSrun} {
		if err := os.WriteFile(filepath.Join(bin, f), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hosts := filepath.Join(bin, "hostnames")
	if err := os.WriteFile(hosts, []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs := emulatedRecordings()
	recs["all_reduce-direct"] = recs["all_reduce-direct-n4"] // 8 nodes and more
	ncclDir, fake := fakebin.NCCLTests(t, []string{"all_reduce_perf"}, recs)
	env = append(append(os.Environ(), fake...), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GDRCHECK_TEST_HOSTNAMES="+hosts, "SLURM_JOB_ID=4711", fmt.Sprintf("SLURM_JOB_NODELIST=gpunode[0001-%04d]", n),
		"SLURMD_NODENAME=", "GDRCHECK_FAKE_NCCL_SLOW_NODE=gpunode0037")
	return dir, names, env, ncclDir
}

func gdrcheckEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	return runCmd(t, cmd)
}

// The job's leader runs the scaling suite across 64 nodes (the scaling
// step's logs were once named after every node: from 24 such nodes the
// name was too long to create, the step exited 2 and the merged report
// passed without the allocation); the merged report, and a collect of
// the directory after, carry the allocation's verdict: the planted slow
// node, named from its pairs.
func TestAJobOf64NodesJudgesTheAllocationAndNamesTheSlowNode(t *testing.T) {
	t.Parallel()
	dir, names, env, ncclDir := manyNodeJob(t, 64)
	prom := filepath.Join(t.TempDir(), "gdrcheck-{node}.prom")
	r := gdrcheckEnv(t, env, "job", "--out", dir, "--nccl-tests-dir", ncclDir, "--allow-missing-baseline", "--prom-textfile", prom)
	scalingLog, _ := os.ReadFile(filepath.Join(dir, "scale", "scaling.log"))
	if r.code != 1 {
		t.Fatalf("job: exit %d, want 1 (the slow node)\n%s\n%s\nscaling step:\n%s", r.code, r.stdout, r.stderr, scalingLog)
	}
	for _, res := range []string{"job", "collect"} {
		if res == "collect" {
			if c := gdrcheckEnv(t, env, "collect", dir); c.code != 1 {
				t.Fatalf("collect: exit %d, want 1\n%s\n%s", c.code, c.stdout, c.stderr)
			}
		}
		merged, err := results.Read(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		alloc, ok := nodeByName(merged, "allocation")
		if !ok || alloc.Status != results.NodeEvaluated {
			t.Fatalf("%s: allocation %+v\nscaling step:\n%s", res, alloc, scalingLog)
		}
		iso := scalingSpec(t, &results.Results{Nodes: []results.Node{alloc}}, "isolates the node that slows multi-node all_reduce")
		if iso.State != results.StateFailed || iso.Message != "slow in every pair it was in: gpunode0037" {
			t.Errorf("%s: isolation %s %q", res, iso.State, iso.Message)
		}
		if len(merged.Nodes) != 65 {
			t.Errorf("%s: %d nodes, want 64 and the allocation", res, len(merged.Nodes))
		}
		// Every scaling run: its log under a short name, its nodes
		// beside it in results.json.
		var counts []int
		pairs := 0
		for _, run := range merged.Runs {
			if len(filepath.Base(run.Log)) > 32 || !strings.HasPrefix(run.Log, "scale/logs/") {
				t.Errorf("%s: run across %d nodes: log %q", res, len(run.Nodes), run.Log)
			}
			if _, err := os.Stat(filepath.Join(dir, run.Log)); err != nil {
				t.Errorf("%s: %v", res, err)
			}
			switch run.Suite {
			case "scale":
				counts = append(counts, len(run.Nodes))
				if !slices.Equal(run.Nodes, names[:len(run.Nodes)]) {
					t.Errorf("%s: scale run nodes %v", res, run.Nodes)
				}
			case "pairwise":
				pairs++
			}
		}
		if fmt.Sprint(counts) != "[1 2 4 8 16 32 64]" || pairs != 64 {
			t.Errorf("%s: scale runs at %v nodes and %d pairs, want 1 ... 64 and 64", res, counts, pairs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "scale", "logs", "scale-n64.log")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(string(scalingLog), "across gpunode[0001-0064] (64 node(s)), log scale-n64.log") {
		t.Errorf("the scaling step's output does not name the nodes of its last log:\n%s", scalingLog)
	}
	validateJUnit(t, filepath.Join(dir, "junit.xml"))
	// The job's own textfile: {node} is the allocation.
	checkPromtool(t, strings.ReplaceAll(prom, "{node}", "allocation"))
}

// The scaling step is killed mid-run: the merged report fails the
// allocation, saying how the step ended and what it printed last, and
// both the job and a later collect exit non-zero.
func TestAJobWhoseScalingStepIsKilledFailsTheAllocation(t *testing.T) {
	t.Parallel()
	dir, _, env, ncclDir := manyNodeJob(t, 32)
	env = append(env, "GDRCHECK_TEST_KILL_SCALING=1")
	r := gdrcheckEnv(t, env, "job", "--out", dir, "--nccl-tests-dir", ncclDir, "--allow-missing-baseline")
	if r.code != 2 {
		t.Errorf("job: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	c := gdrcheckEnv(t, env, "collect", dir)
	if c.code != 2 {
		t.Errorf("collect: exit %d, want 2\n%s\n%s", c.code, c.stdout, c.stderr)
	}
	merged, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	alloc, ok := nodeByName(merged, "allocation")
	if !ok || alloc.Status != results.NodeMissing {
		t.Fatalf("allocation %+v, want it missing", alloc)
	}
	for _, want := range []string{"the scaling suite never reported (no results.json)", "the scaling step failed: signal: killed",
		"last output: ", "scaling: all_reduce_perf (scale) across gpunode0001 (1 node(s)), log scale-n1.log"} {
		if !strings.Contains(alloc.Reason, want) {
			t.Errorf("reason %q lacks %q", alloc.Reason, want)
		}
	}
	if !strings.Contains(c.stdout, "allocation") || !strings.Contains(c.stdout, "missing") {
		t.Errorf("collect's tables do not show the missing allocation:\n%s", c.stdout)
	}
	validateJUnit(t, filepath.Join(dir, "junit.xml"))
}

// The scaling suite across 16,384 nodes, given as one hostlist word and
// as a node file, through srun (the stand-in drops srun's options and
// execs the rest, so the kernel checks every word): each run starts, the
// largest log is scale-n16384.log, and the report names the nodes in
// their compressed form.
func TestTheScalingSuiteRunsAcross16384NodesGivenAsAHostlistOrAFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: 15 runs across 16,384 nodes")
	}
	_, _, env, ncclDir := manyNodeJob(t, 0)
	file := filepath.Join(t.TempDir(), "nodes.txt")
	var names []string
	for i := 1; i <= 16384; i++ {
		names = append(names, fmt.Sprintf("gpu%05d", i))
	}
	os.WriteFile(file, []byte(strings.Join(names, "\n")+"\n"), 0o644)
	for _, nodes := range [][]string{{"--nodes", "gpu[00001-16384]"}, {"--nodes-file", file}} {
		out := t.TempDir()
		r := gdrcheckEnv(t, env, append([]string{"run", "--suites", "scaling", "--nccl-tests-dir", ncclDir, "--out", out,
			"--allow-missing-baseline", "--scaling-pairs", "never", "--scaling-args", "-b 8 -e 1M -f 2"}, nodes...)...)
		if r.code == 2 {
			t.Fatalf("%v: exit 2\n%s\n%s", nodes, r.stdout, r.stderr)
		}
		res, err := results.Read(filepath.Join(out, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Runs) != 15 {
			t.Fatalf("%v: %d runs, want 15", nodes, len(res.Runs))
		}
		for _, run := range res.Runs {
			if run.Error != "" {
				t.Errorf("%v: across %d nodes: %s", nodes, len(run.Nodes), run.Error)
			}
		}
		if last := res.Runs[14]; last.Log != "logs/scale-n16384.log" || !slices.Equal(last.Nodes, names) {
			t.Errorf("%v: last run: log %q, %d nodes", nodes, last.Log, len(last.Nodes))
		}
		if got := res.Nodes[0].Fact("nodes"); got != "gpu[00001-16384]" {
			t.Errorf("%v: nodes fact %.80q", nodes, got)
		}
		if !strings.Contains(r.stdout, "suite scaling across gpu[00001-16384] (16384 nodes)") {
			t.Errorf("%v: stdout:\n%.400s", nodes, r.stdout)
		}
	}
}
