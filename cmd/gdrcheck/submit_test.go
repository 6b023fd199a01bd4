package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	"github.com/gdrcheck/gdrcheck/slurm/localcluster"
)

var (
	clusterOnce sync.Once
	cluster     *localcluster.Cluster
	clusterErr  error
	// clusterMu makes the tests that share the cluster take turns, while
	// the others run beside them (t.Parallel).
	clusterMu sync.Mutex
)

// slurmCluster starts the real four-node test cluster once for the test
// binary (stopped in TestMain); tests using it run one after another,
// each holding it until it ends. Call it once per test.
func slurmCluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the local Slurm cluster needs root (slurmd runs jobs as their users)")
	}
	if testing.Short() {
		t.Skip("-short: no Slurm jobs")
	}
	clusterMu.Lock()
	t.Cleanup(clusterMu.Unlock)
	clusterOnce.Do(func() {
		// A cluster of this process's own: test binaries of other
		// packages or checkouts may run at the same time.
		pid := os.Getpid()
		port, err := localcluster.FreePorts(pid, 5)
		if err != nil {
			clusterErr = err
			return
		}
		cluster, clusterErr = localcluster.Start(context.Background(), localcluster.Options{
			StateDir: fmt.Sprintf("/tmp/gdrcheck-slurm-e2e-%d", pid), Port: port, Nodes: 4, Install: true,
		})
	})
	if clusterErr != nil {
		t.Fatalf("starting the local Slurm cluster: %v", clusterErr)
	}
	return cluster
}

func stopCluster() {
	if cluster != nil {
		cluster.Stop()
		os.RemoveAll(cluster.StateDir)
	}
}

// abs makes fixture paths absolute: Slurm tasks start elsewhere.
func abs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// submitJob runs gdrcheck submit --wait against the test cluster, with
// each node replaying the fixture node named for it.
func submitJob(t *testing.T, c *localcluster.Cluster, nodeRoots map[string]string, extraEnv map[string]map[string]string, args ...string) (result, *results.Results, string) {
	t.Helper()
	recs := fakebin.H200Recordings(recorded)
	recs["all_reduce-direct-n2"] = "../../fixtures/corpus/nccl-tests/all_reduce_perf-gcp-a3mega-h100-2node-16rank.txt"
	recs["all_reduce-direct-n4"] = "../../fixtures/corpus/nccl-tests/all_reduce_perf-coreweave-h100-64gpu-sharp-elided.txt"
	return submitJobWith(t, c, recs, nodeRoots, extraEnv, args...)
}

// submitJobWith is submitJob with the nccl-tests recordings given.
func submitJobWith(t *testing.T, c *localcluster.Cluster, recs, nodeRoots map[string]string, extraEnv map[string]map[string]string, args ...string) (result, *results.Results, string) {
	t.Helper()
	fake, fakeEnv := fakebin.NCCLTests(t, []string{"all_reduce_perf", "all_gather_perf", "sendrecv_perf"}, recs)
	env := map[string]map[string]string{"*": {}}
	for _, e := range fakeEnv {
		k, v, _ := strings.Cut(e, "=")
		env["*"][k] = v
	}
	for n, root := range nodeRoots {
		env[n] = map[string]string{"GDRCHECK_HOST_ROOT": abs(t, nodes+root+".ttar")}
	}
	for n, kv := range extraEnv {
		if env[n] == nil {
			env[n] = map[string]string{}
		}
		for k, v := range kv {
			env[n][k] = v
		}
	}
	if err := c.WriteNodeEnv(env); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(bin, append([]string{"submit", "-N", "4", "-p", "gpu", "--out", out, "--nccl-tests-dir", fake, "--wait", "--poll", "1s"}, args...)...)
	cmd.Env = c.Env()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "job-*"))
	if len(dirs) != 1 {
		t.Fatalf("job directories %v\nstdout:\n%s\nstderr:\n%s", dirs, r.stdout, r.stderr)
	}
	res, err := results.Read(filepath.Join(dirs[0], "results.json"))
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	validateJUnit(t, filepath.Join(dirs[0], "junit.xml"))
	return r, res, dirs[0]
}

func nodeByName(res *results.Results, name string) (results.Node, bool) {
	for _, n := range res.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return results.Node{}, false
}

func TestJobOnFourNodesReportsExactlyTheBrokenNodeAndScales(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	roots := map[string]string{"node1": "h200x2-nv18-vm", "node2": "h200x2-nv18-vm", "node3": "h100x8-nic-sys", "node4": "h200x2-nv18-vm"}
	prom := filepath.Join(t.TempDir(), "gdrcheck.prom")
	r, res, dir := submitJob(t, c, roots, nil, "--step-timeout", "3m", "--drain-on-fail", "--prom-textfile", prom)
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(dir), "slurm-"+strings.TrimPrefix(filepath.Base(dir), "job-")+".out"))
			t.Logf("batch output:\n%s", b)
		}
	}()
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if failed := slurm.FailedNodes(res); len(failed) != 1 || failed["node3"] == "" {
		t.Errorf("failed nodes %v, want node3 alone", failed)
	}
	n3, _ := nodeByName(res, "node3")
	if !strings.Contains(specMessages(n3), "GPU 4 0000:98:00.0 -> mlx5_4 is SYS; GDR expected at PIX/PXB") {
		t.Errorf("node3 does not give its topology reason:\n%s", specMessages(n3))
	}
	for _, n := range []string{"node1", "node2", "node4"} {
		if nd, ok := nodeByName(res, n); !ok || nd.Status != results.NodeEvaluated || nd.Counts().Failed != 0 {
			t.Errorf("%s: %+v", n, nd.Status)
		}
	}
	var counts []string
	for _, run := range res.Runs {
		if run.Suite == "scale" {
			counts = append(counts, strconv.Itoa(len(run.Nodes)))
			if run.Error != "" || len(run.Points) == 0 {
				t.Errorf("scaling run on %d nodes: %q, %d points", len(run.Nodes), run.Error, len(run.Points))
			}
		}
	}
	if strings.Join(counts, ",") != "1,2,4" {
		t.Errorf("scaling runs at %v nodes, want 1,2,4", counts)
	}
	if !strings.Contains(r.stdout, "Scaling (all_reduce across nodes)") {
		t.Errorf("no scaling table:\n%s", r.stdout)
	}
	// The job's textfile, written by the job on its first node: the
	// allocation's series alone, node3 counted among the failing nodes.
	checkPromtool(t, prom)
	got := checkAllocationAgrees(t, prom, res, strings.TrimPrefix(filepath.Base(dir), "job-"))
	wantSeries(t, got, map[string]float64{
		series("gdrcheck_job_failed_nodes", "node", "allocation", "suite", "topology"):                                                         1,
		series("gdrcheck_job_verdict_info", "node", "allocation", "job_id", strings.TrimPrefix(filepath.Base(dir), "job-"), "verdict", "fail"): 1,
	})
	for _, run := range res.Runs {
		if run.Suite != "scale" || len(run.Points) == 0 {
			continue
		}
		s := series("gdrcheck_scaling_busbw_bytes_per_second", "node", "allocation", "op", "all_reduce", "nodes", strconv.Itoa(len(run.Nodes)))
		if got[s] != run.BusBW*1e9 {
			t.Errorf("%s = %v, results.json says %v GB/s", s, got[s], run.BusBW)
		}
	}
	// --drain-on-fail drained node3, with gdrcheck's prefix.
	nodesNow, err := slurm.Client{Env: c.Vars()}.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodesNow {
		drained := strings.Contains(n["State"], "DRAIN")
		if n["NodeName"] == "node3" && (!drained || !strings.HasPrefix(n["Reason"], "gdrcheck: ")) {
			t.Errorf("node3 not drained by gdrcheck: %v %v", n["State"], n["Reason"])
		}
		// The reason ends in the node's action, for remediation
		// pipelines (Slurm adds " [user@time]"), and cites the spec
		// that asks it: a GPU far from its NIC is a card a person
		// moves, and the slow bandwidth it causes asks less.
		if n["NodeName"] == "node3" && (!strings.HasPrefix(n["Reason"], "gdrcheck: topology: GPU 4 0000:98:00.0 -> mlx5_4 is SYS") || !strings.Contains(n["Reason"], " action=INVESTIGATE [")) {
			t.Errorf("node3's drain reason %q does not cite its topology and end in action=INVESTIGATE", n["Reason"])
		}
		if n["NodeName"] != "node3" && drained {
			t.Errorf("%s drained", n["NodeName"])
		}
	}
	undrain := exec.Command(bin, "undrain")
	undrain.Env = c.Env()
	if out, err := undrain.CombinedOutput(); err != nil || !strings.Contains(string(out), "resumed node3") {
		t.Errorf("undrain: %v %s", err, out)
	}
}

// killNodeStep SIGKILLs the gdrcheck run of one node once it has started.
func killNodeStep(t *testing.T, node string, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(200 * time.Millisecond):
		}
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			cmdline, _ := os.ReadFile(p + "/cmdline")
			env, _ := os.ReadFile(p + "/environ")
			if bytes.Contains(cmdline, []byte(bin+"\x00run")) && bytes.Contains(env, []byte("SLURMD_NODENAME="+node+"\x00")) {
				pid, _ := strconv.Atoi(filepath.Base(p))
				syscall.Kill(pid, syscall.SIGKILL)
				return
			}
		}
	}
}

func TestAJobWhoseNodeStepIsKilledStillReportsTheNodeAsMissing(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	roots := map[string]string{"node1": "h200x2-nv18-vm", "node2": "h200x2-nv18-vm", "node3": "h200x2-nv18-vm", "node4": "h200x2-nv18-vm"}
	done := make(chan struct{})
	go killNodeStep(t, "node2", done)
	r, res, _ := submitJob(t, c, roots, map[string]map[string]string{"node2": {"GDRCHECK_FAKE_NCCL_SLEEP": "60s"}},
		"--suites", "collectives", "--scaling=false", "--step-timeout", "3m")
	close(done)
	if r.code != 2 {
		t.Errorf("exit %d, want 2 (a node never reported)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	n2, ok := nodeByName(res, "node2")
	if !ok || n2.Status != results.NodeMissing || !strings.Contains(n2.Reason, "node node2 never reported (no results.json)") {
		t.Errorf("node2: %+v", n2)
	}
	for _, n := range []string{"node1", "node3", "node4"} {
		if nd, _ := nodeByName(res, n); nd.Status != results.NodeEvaluated {
			t.Errorf("%s: %s %s", n, nd.Status, nd.Reason)
		}
	}
}

func TestAJobThatHitsItsTimeLimitStillWritesTheMergedReport(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	roots := map[string]string{"node1": "h200x2-nv18-vm", "node2": "h200x2-nv18-vm", "node3": "h200x2-nv18-vm", "node4": "h200x2-nv18-vm"}
	prom := filepath.Join(t.TempDir(), "gdrcheck.prom")
	r, res, dir := submitJob(t, c, roots, map[string]map[string]string{"*": {"GDRCHECK_FAKE_NCCL_SLEEP": "10m"}},
		"--suites", "collectives", "--scaling=false", "--time", "1", "--signal-seconds", "50", "--prom-textfile", prom)
	if r.code != 2 {
		t.Errorf("exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if len(res.Nodes) != 4 {
		t.Fatalf("%d nodes in the merged report, want all 4", len(res.Nodes))
	}
	for _, n := range res.Nodes {
		if n.Status != results.NodeMissing || !strings.Contains(n.Reason, "never reported") {
			t.Errorf("%s: %s %q", n.Name, n.Status, n.Reason)
		}
		if !strings.Contains(n.Reason, "cancelled when the job was told to end") && !strings.Contains(n.Reason, "TIMEOUT") {
			t.Errorf("%s: the reason does not say the job ran out of time: %q", n.Name, n.Reason)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "junit.xml")); err != nil {
		t.Error(err)
	}
	// Told to end, the job still wrote its textfile, like its other files.
	checkPromtool(t, prom)
	got := checkAllocationAgrees(t, prom, res, strings.TrimPrefix(filepath.Base(dir), "job-"))
	wantSeries(t, got, map[string]float64{series("gdrcheck_job_nodes", "node", "allocation", "status", "missing"): 4})
}

func TestDrainLeavesNodesDrainedByOthersAlone(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	cl := slurm.Client{Env: c.Vars()}
	ctx := context.Background()
	scontrol := func(args ...string) {
		cmd := exec.Command("scontrol", args...)
		cmd.Env = c.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scontrol %v: %v %s", args, err, out)
		}
	}
	scontrol("update", "NodeName=node2", "State=DRAIN", "Reason=hw repair ticket 42")
	defer scontrol("update", "NodeName=node2", "State=RESUME")
	done, err := cl.Drain(ctx, map[string]string{"node2": "topology: x", "node3": "kernel: no GPUDirect peer-memory mechanism works"})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 || done[0].Action != "skipped" || done[1].Action != "drained" || done[1].Why != "gdrcheck: kernel: no GPUDirect peer-memory mechanism works" {
		t.Errorf("drain: %+v", done)
	}
	done, err = cl.Undrain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range done {
		got = append(got, d.Action+" "+d.Node)
	}
	if strings.Join(got, ", ") != "skipped node2, resumed node3" {
		t.Errorf("undrain: %v", got)
	}
	recs, _ := cl.Nodes(ctx)
	for _, r := range recs {
		if r["NodeName"] == "node2" && !strings.HasPrefix(r["Reason"], "hw repair ticket 42") {
			t.Errorf("node2's reason changed to %q", r["Reason"])
		}
	}
}

func specMessages(n results.Node) string {
	var b strings.Builder
	for _, s := range n.Suites {
		for _, sp := range s.Specs {
			if sp.Message != "" {
				b.WriteString(s.Name + " / " + sp.Name + ": " + sp.Message + "\n")
			}
		}
	}
	return b.String()
}

// A node planted slow (every run it is in replays a slow recording made on
// the device) is named by the scaling suite's pairwise specs, under the
// allocation in JUnit, and drained.
func TestAJobNamesThePlantedSlowNodeFromItsPairsAndDrainsIt(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	recs := fakebin.H200Recordings(recorded)
	for k, v := range emulatedRecordings() {
		recs[k] = v
	}
	roots := map[string]string{}
	for _, n := range []string{"node1", "node2", "node3", "node4"} {
		roots[n] = "h200x2-nv18-vm"
	}
	r, res, dir := submitJobWith(t, c, recs, roots, map[string]map[string]string{"*": {"GDRCHECK_FAKE_NCCL_SLOW_NODE": "node3"}},
		"--scaling-pairs", "always", "--drain-on-fail")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	alloc, ok := nodeByName(res, "allocation")
	if !ok {
		t.Fatalf("no allocation entry: %+v", res.Nodes)
	}
	var iso results.Spec
	for _, s := range alloc.Suites {
		for _, sp := range s.Specs {
			if sp.Name == "isolates the node that slows multi-node all_reduce" {
				iso = sp
			}
		}
	}
	if iso.State != results.StateFailed || iso.Message != "slow in every pair it was in: node3" {
		t.Errorf("isolation: %q %q\n%s", iso.State, iso.Message, r.stdout)
	}
	for _, n := range []string{"node1", "node2", "node3", "node4"} {
		if nr, ok := nodeByName(res, n); !ok || nr.Counts().Failed != 0 {
			t.Errorf("%s should pass its own suites: %s", n, specMessages(nr))
		}
	}
	junit, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if !strings.Contains(string(junit), `name="isolates the node that slows multi-node all_reduce" classname="gdrcheck.allocation.scaling"`) {
		t.Errorf("JUnit lacks gdrcheck.allocation.scaling's isolation case")
	}
	if !strings.Contains(r.stderr+r.stdout, "node3") {
		t.Errorf("no word of node3")
	}
	nodesNow, err := slurm.Client{Env: c.Vars()}.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodesNow {
		drained := strings.Contains(n["State"], "DRAIN")
		if n["NodeName"] == "node3" && (!drained || !strings.HasPrefix(n["Reason"], "gdrcheck: scaling: slow in every pair")) {
			t.Errorf("node3 not drained by gdrcheck for the scaling suite: %v %q", n["State"], n["Reason"])
		}
		if n["NodeName"] != "node3" && drained {
			t.Errorf("%s drained", n["NodeName"])
		}
	}
	undrain := exec.Command(bin, "undrain")
	undrain.Env = c.Env()
	if out, err := undrain.CombinedOutput(); err != nil || !strings.Contains(string(out), "resumed node3") {
		t.Errorf("undrain: %v %s", err, out)
	}
}
