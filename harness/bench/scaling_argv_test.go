package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
)

// gpuNodes are n eight-character names, gpu00001 ...: at 16,384 of them,
// joined with commas, 147 KB.
func gpuNodes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("gpu%05d", i+1)
	}
	return out
}

// execSize is what exec copies for argv and envp: each string with its
// NUL, and a pointer to it.
func execSize(argv, env []string) int {
	n := 0
	for _, s := range append(slices.Clone(argv), env...) {
		n += len(s) + 1 + 8
	}
	return n
}

func TestTheLargestRunOf16384NodesFitsInArgumentsLinuxExecs(t *testing.T) {
	nodes := gpuNodes(16384)
	if joined := strings.Join(nodes, ","); len(joined) < MaxArg {
		t.Fatalf("the names joined are %d bytes: the test would not reproduce the old failure", len(joined))
	}
	r := NCCLRunner{Dir: "/opt/nccl-tests/build", Env: []string{"UCX_TLS=rc"}}
	rr, err := runnerFor(r, SrunLaunch([]string{"--mpi=pmix"}), nodes, 8)
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append(slices.Clone(rr.Launcher), filepath.Join(r.Dir, "all_reduce_perf")), append(DefaultScalingArgs, "-g", "1")...)
	env := append(append(append(os.Environ(), nccl.SafeEnv...), nccl.DebugEnv...), rr.Env...)
	for _, s := range append(slices.Clone(argv), env...) {
		if len(s)+1 > MaxArg {
			t.Errorf("a string of %d bytes, over MAX_ARG_STRLEN: %.60s...", len(s), s)
		}
	}
	if n := execSize(argv, env); n > 1<<20 {
		t.Errorf("argv and environment take %d bytes, want well under ARG_MAX", n)
	}
	if !slices.Contains(argv, "--nodelist=gpu[00001-16384]") || !slices.Contains(argv, "--ntasks=131072") {
		t.Errorf("srun words: %q", rr.Launcher)
	}
	list, _ := strings.CutPrefix(rr.Env[len(rr.Env)-1], "GDRCHECK_RUN_NODELIST=")
	if back, err := hostlist.Expand(list); err != nil || !slices.Equal(back, nodes) {
		t.Errorf("GDRCHECK_RUN_NODELIST %q does not expand to the nodes: %v", list, err)
	}
}

// Names without a shared pattern do not compress: the run is refused
// with the reason, not left to fail in exec with E2BIG.
func TestALauncherWordOverTheLimitIsRefusedSayingWhy(t *testing.T) {
	nodes := make([]string, 16384)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("host%05dx", i)
	}
	_, err := runnerFor(NCCLRunner{}, SrunLaunch(nil), nodes, 8)
	if err == nil || !strings.Contains(err.Error(), "do not compress into a hostlist") {
		t.Fatalf("err %v", err)
	}
}

// The runs across 1, 2, 4 ... 16,384 nodes go through a stand-in srun
// (which drops its options and execs the rest): the kernel itself checks
// every argument and the environment, and each run's log has a name that
// does not grow with the nodes.
func TestScalingRunsAcross16384NodesExecAndKeepShortLogNames(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 15 runs")
	}
	bin := t.TempDir()
	srun := "#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in --*) shift;; *) break;; esac; done\nexec \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(srun), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf"}, map[string]string{"all_reduce-direct": "../../fixtures/nccl-tests/all_reduce_perf-h200x1-emu-n4-socket.txt"})
	r := NCCLRunner{Dir: dir, Env: env, LogDir: t.TempDir()}
	plan := nccl.ScalingPlan{Nodes: gpuNodes(16384), GPUsPerNode: 8, Args: []string{"-b", "8", "-e", "1M", "-f", "2"}}
	s := MeasureScaling(context.Background(), r, SrunLaunch(nil), plan, func([]nccl.ScalingRun) (bool, string) { return false, "not asked" }, nil)
	if len(s.Runs) != 15 {
		t.Fatalf("%d runs, want 15 (1, 2, 4 ... 16384)", len(s.Runs))
	}
	for _, run := range s.Runs {
		if run.Result.Err != nil {
			t.Errorf("across %d nodes: %v", len(run.Nodes), run.Result.Err)
		}
		if want := filepath.Join(r.LogDir, nccl.ScaleLog(len(run.Nodes))); run.Result.LogFile != want {
			t.Errorf("across %d nodes: log %q, want %q", len(run.Nodes), run.Result.LogFile, want)
		}
	}
	if last := s.Runs[len(s.Runs)-1]; filepath.Base(last.Result.LogFile) != "scale-n16384.log" || len(last.Nodes) != 16384 {
		t.Errorf("last run: %d nodes, log %s", len(last.Nodes), last.Result.LogFile)
	}
}

// Planning an allocation of 16,384 nodes and building every run's
// launcher words and environment: the scale runs and both pairwise
// rounds.
func BenchmarkScalingLaunchArgs16384(b *testing.B) {
	nodes := gpuNodes(16384)
	launch := SrunLaunch([]string{"--mpi=pmix"})
	for b.Loop() {
		for _, k := range nccl.NodeCounts(len(nodes)) {
			if _, err := runnerFor(NCCLRunner{}, launch, nodes[:k], 8); err != nil {
				b.Fatal(err)
			}
		}
		for _, round := range nccl.Pairings(nodes) {
			for _, p := range round {
				if _, err := runnerFor(NCCLRunner{}, launch, p, 8); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
