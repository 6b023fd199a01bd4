package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// jobDir is a job directory whose one node reported and passed.
func jobDir(t *testing.T, cfg JobConfig, steps []Step) string {
	t.Helper()
	dir := t.TempDir()
	if err := writeJSON(filepath.Join(dir, jobFile), JobInfo{ID: "9", Nodes: []string{"gpu00001"}, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if steps != nil {
		if err := writeJSON(filepath.Join(dir, stepsFile), steps); err != nil {
			t.Fatal(err)
		}
	}
	one := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: "gpu00001", Status: results.NodeEvaluated,
		Facts:  []results.Fact{{Name: "gpus", Value: "8"}},
		Suites: []results.Suite{{Name: "topology", Specs: []results.Spec{{Name: "x", State: results.StatePassed}}}}}}}
	if err := os.MkdirAll(filepath.Join(dir, nodesDir, "gpu00001"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := one.Write(filepath.Join(dir, nodesDir, "gpu00001", resultsFile)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func allocation(res *results.Results) (results.Node, bool) {
	for _, n := range res.Nodes {
		if n.Name == AllocationNode {
			return n, true
		}
	}
	return results.Node{}, false
}

// A job that wanted the scaling suite and has no scale/results.json is
// not a job without one: the allocation is missing, with the step's fate
// and its last words, and the merged report does not pass.
func TestCollectFailsTheAllocationWhoseScalingStepLeftNoResults(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	wanted := JobConfig{Scaling: true}
	cases := []struct {
		name  string
		cfg   JobConfig
		steps []Step
		log   string // scale/scaling.log
		junk  bool   // scale/results.json there but unreadable
		note  string
		want  []string // in the reason; nil: no allocation entry
	}{
		{name: "exited 2", cfg: wanted,
			steps: []Step{{Name: "scaling", Started: t0, Finished: t0.Add(time.Second), ExitCode: 2, Error: "exit status 2"}},
			log:   "gdrcheck v1: suite scaling across gpu[00001-00032] (32 nodes)\nscaling: all_reduce_perf (scale) across gpu[00001-00032] (32 node(s)), log scale-n32.log ...\nError: open logs/x: file name too long\n",
			want:  []string{"the scaling suite never reported (no results.json)", "the scaling step exited 2", "last output: gdrcheck v1: suite scaling across gpu[00001-00032] (32 nodes) | scaling: all_reduce_perf (scale)", "| Error: open logs/x: file name too long"}},
		{name: "killed", cfg: wanted,
			steps: []Step{{Name: "scaling", Started: t0, Finished: t0.Add(time.Second), ExitCode: -1, Error: "signal: killed"}},
			want:  []string{"the scaling step failed: signal: killed"}},
		{name: "never started", cfg: wanted, note: "job 9 ended TIMEOUT",
			want: []string{"the scaling step never started", "job 9 ended TIMEOUT"}},
		{name: "could not start", cfg: wanted,
			steps: []Step{{Name: "scaling", Started: t0, Finished: t0, Error: "not started: no node reported evidence to size the multi-node runs"}},
			want:  []string{"the scaling step failed: not started: no node reported evidence"}},
		{name: "still running", cfg: wanted,
			steps: []Step{{Name: "scaling", Started: t0}},
			want:  []string{"the scaling step was still running when the job ended"}},
		{name: "unreadable results", cfg: JobConfig{}, junk: true,
			want: []string{"the scaling suite never reported (reading", "the scaling step never started"}},
		{name: "scaling off", cfg: JobConfig{Scaling: false}},
		{name: "no NCCL suite", cfg: JobConfig{Scaling: true, Suites: []string{"topology", "kernel"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := jobDir(t, c.cfg, c.steps)
			os.MkdirAll(filepath.Join(dir, scaleDir), 0o755)
			if c.log != "" {
				os.WriteFile(filepath.Join(dir, scaleDir, scaleLogFile), []byte(c.log), 0o644)
			}
			if c.junk {
				os.WriteFile(filepath.Join(dir, scaleDir, resultsFile), []byte("{\"schema\": 1, \"nodes\": [tru"), 0o644)
			}
			m, err := Collect(dir, CollectOptions{Note: c.note})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Write(reports.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			res := m.Results
			alloc, ok := allocation(res)
			if c.want == nil {
				if ok || res.ExitCode() != results.ExitPassed {
					t.Errorf("allocation %+v, exit %d: the job did not want the scaling suite", alloc, res.ExitCode())
				}
				return
			}
			if !ok || alloc.Status != results.NodeMissing {
				t.Fatalf("allocation %+v, want it missing", alloc)
			}
			for _, w := range c.want {
				if !strings.Contains(alloc.Reason, w) {
					t.Errorf("reason %q lacks %q", alloc.Reason, w)
				}
			}
			if res.ExitCode() == results.ExitPassed {
				t.Errorf("exit %d with the allocation missing", res.ExitCode())
			}
			junit, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
			if !strings.Contains(string(junit), `classname="gdrcheck.allocation.node"`) || !strings.Contains(string(junit), `type="missing"`) {
				t.Errorf("JUnit has no failed case for the allocation:\n%s", junit)
			}
		})
	}
}

// The leader's scaling step dies (here a stand-in for gdrcheck that
// prints and exits 2): steps.json says so, what it printed is in
// scale/scaling.log, and the merged report fails the allocation quoting it.
func TestALeaderWhoseScalingStepDiesFailsTheAllocation(t *testing.T) {
	dir := jobDir(t, JobConfig{Scaling: true}, nil)
	stand := filepath.Join(t.TempDir(), "gdrcheck")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\necho 'scaling: all_reduce_perf (scale) across gpu00001 (1 node(s)), log scale-n1.log ...'\necho 'Error: the launcher died' >&2\nexit 2\n"
	if err := os.WriteFile(stand, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	l := &Leader{Gdrcheck: stand, Out: dir, Config: JobConfig{Scaling: true}}
	err := l.scale(context.Background(), []string{"gpu00001"})
	if err == nil || !strings.Contains(err.Error(), "exit status 2") || !strings.Contains(err.Error(), "Error: the launcher died") {
		t.Errorf("scale: %v", err)
	}
	args, _ := os.ReadFile(stand + ".args")
	if !strings.Contains(string(args), "--nodes-file\n"+filepath.Join(dir, scaleDir, scaleNodesFile)+"\n") {
		t.Errorf("the step was not given the node file:\n%s", args)
	}
	if names, err := hostlist.ReadFile(filepath.Join(dir, scaleDir, scaleNodesFile)); err != nil || !slices.Equal(names, []string{"gpu00001"}) {
		t.Errorf("node file: %q, %v", names, err)
	}
	m, err := Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Discard()
	alloc, ok := allocation(m.Results)
	if !ok || alloc.Status != results.NodeMissing || !strings.Contains(alloc.Reason, "the scaling step exited 2") || !strings.Contains(alloc.Reason, "Error: the launcher died") {
		t.Errorf("allocation %+v", alloc)
	}
	if m.Results.ExitCode() != results.ExitUnevaluable {
		t.Errorf("exit %d, want 2", m.Results.ExitCode())
	}
}

// maxArg is Linux's MAX_ARG_STRLEN: one argv or environment string,
// its NUL counted.
const maxArg = 128 << 10

// Every command the leader starts for 16,384 nodes (the node step's and
// the container step's srun, the scaling step) has no argument that grows
// with the nodes: each is under MAX_ARG_STRLEN and all of them, with the
// environment, far under ARG_MAX.
func TestEveryStepOf16384NodesFitsInArgumentsLinuxExecs(t *testing.T) {
	nodes := make([]string, 16384)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("gpu%05d", i+1)
	}
	l := &Leader{Gdrcheck: "/opt/gdrcheck/bin/gdrcheck", Out: "/shared/gdrcheck-jobs/job-4711", ContainerImage: "nvcr.io#nvidia/pytorch:24.10-py3",
		Config: JobConfig{Scaling: true, NCCLSrunArgs: []string{"--mpi=pmix"}, NCCLTestsDir: "/opt/nccl-tests/build", PromTextfile: "/var/lib/node_exporter/textfile/gdrcheck.prom", StepTimeout: time.Hour}}
	first := results.Node{Profile: "h100x8-ndr", Facts: []results.Fact{{Name: "gpus", Value: "8"}}}
	steps := map[string][]string{
		"node-suites":     append([]string{"srun"}, l.nodeSuitesArgs(nodes)...),
		"container-suite": append(append([]string{"srun"}, l.stepArgs(nodes, "%N-container.log")...), l.containerArgs()...),
		"scaling":         append([]string{l.Gdrcheck}, l.scaleArgs(filepath.Join(l.Out, scaleDir, scaleNodesFile), first)...),
	}
	env := os.Environ()
	for name, argv := range steps {
		total := 0
		for _, a := range append(slices.Clone(argv), env...) {
			if len(a)+1 > maxArg {
				t.Errorf("%s: a string of %d bytes: %.60s...", name, len(a), a)
			}
			total += len(a) + 1 + 8
		}
		if total > 1<<20 {
			t.Errorf("%s: %d bytes of argv and environment", name, total)
		}
		if strings.Contains(strings.Join(argv, " "), "gpu00002") {
			t.Errorf("%s names the nodes one by one: %q", name, argv)
		}
	}
	if !slices.Contains(steps["scaling"], "--nodes-file") {
		t.Errorf("scaling step: %q", steps["scaling"])
	}
}

// With --prom-textfile every node step writes its own textfile at PATH
// (its series under its own name: the run's node name is the node's,
// and {node} in PATH is replaced by it); the container step does not.
func TestNodeStepsWriteTheirOwnTextfile(t *testing.T) {
	l := &Leader{Gdrcheck: "/opt/gdrcheck", Out: "/shared/job-7", Config: JobConfig{PromTextfile: "/var/lib/node_exporter/textfile/gdrcheck-{node}.prom", StepTimeout: 10 * time.Minute}}
	got := strings.Join(l.nodeSuitesArgs([]string{"node1", "node2"}), " ")
	want := "--nodes=2 --ntasks=2 --ntasks-per-node=1 --kill-on-bad-exit=0 --output=/shared/job-7/nodes/%N.log /opt/gdrcheck run -q --out /shared/job-7/nodes/{node} --timeout 9m0s --prom-textfile /var/lib/node_exporter/textfile/gdrcheck-{node}.prom"
	if got != want {
		t.Errorf("node step\n got %s\nwant %s", got, want)
	}
	l.Config.PromTextfile = ""
	if got := strings.Join(l.nodeSuitesArgs([]string{"node1"}), " "); strings.Contains(got, "prom") {
		t.Errorf("without --prom-textfile: %s", got)
	}
}
