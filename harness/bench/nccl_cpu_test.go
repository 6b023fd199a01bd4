package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

// cpuBurner writes an all_reduce_perf that burns CPU in a grandchild (as
// mpirun's ranks do) and then prints the recorded direct run.
func cpuBurner(t *testing.T) string {
	t.Helper()
	rec, err := filepath.Abs(filepath.Join(recorded, "all_reduce_perf-h200x2-nv18-direct-p2p.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\nsh -c 'i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done' &\nwait\ncat '" + rec + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "all_reduce_perf"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunnerCountsTheCPUOfTheWholeProcessTree(t *testing.T) {
	res := bench.NCCLRunner{Dir: cpuBurner(t)}.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf"})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	// The loop runs in a grandchild: only the tree's rusage holds it.
	if res.CPUSeconds == nil || *res.CPUSeconds < 0.05 {
		t.Fatalf("CPU seconds %v, want the grandchild's loop (well over 0.05 s)", res.CPUSeconds)
	}
	c, ok := res.CPUPerGB()
	if !ok {
		t.Fatal("no CPU per GB for a measured run")
	}
	if want := *res.CPUSeconds / (res.BusBW() * res.Duration.Seconds()); c != want {
		t.Errorf("CPU per GB %g, want cpu_s / (busbw x duration) = %g", c, want)
	}
	run := nccl.Measured{Op: "all_reduce", Mode: nccl.ModeDirect, Result: res}.Report("collectives", nccl.Expectation{})
	if run.CPUSeconds == nil || run.CPUSecondsPerGB == nil || *run.CPUSecondsPerGB != c {
		t.Errorf("results.json run: cpu_s %v, cpu_s_per_gb %v, want %g", run.CPUSeconds, run.CPUSecondsPerGB, c)
	}
}

func TestRunnerLeavesCPUUnmeasuredWhenSrunStartsTheRanks(t *testing.T) {
	dir := cpuBurner(t)
	// srun here is a stand-in that runs its arguments; the real one hands
	// them to slurmstepd, out of our process tree.
	if err := os.WriteFile(filepath.Join(dir, "srun"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := bench.NCCLRunner{Dir: dir, Launcher: []string{filepath.Join(dir, "srun")}}.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf"})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.CPUSeconds != nil {
		t.Errorf("CPU seconds %v under srun, want none", *res.CPUSeconds)
	}
	if _, ok := res.CPUPerGB(); ok {
		t.Error("CPU per GB under srun, want none")
	}
}
