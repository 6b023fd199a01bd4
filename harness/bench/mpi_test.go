package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/harness/mpi"
)

// runFake runs one spec through the fake launcher and benchmarks.
func runFake(t *testing.T, recs map[string]string, s mpi.BenchSpec) mpi.BenchRun {
	t.Helper()
	dir, env := fakebin.OSU(t, recs)
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	s.Launcher = mpi.FillRanks([]string{filepath.Join(dir, "mpirun"), "--mca", "pml", "ucx", "-np", "{ranks}"})
	return MPIRunner{Dir: dir, LogDir: t.TempDir()}.Run(context.Background(), s)
}

// ucx_perftest stands in where OSU is missing: the real tag_bw -m cuda
// run of openucx/ucx#9908 reads as 0.647 GB/s over a rendezvous staged
// through cuda_copy, its tables kept for the verdict.
func TestBenchRunReadsUCXPerftest(t *testing.T) {
	specs := mpi.Specs(mpi.ToolPerftest, mpi.IntraNode, nil, mpi.ModeNoCUDAIPC)
	if specs[0].Binary != "ucx_perftest" || strings.Join(specs[0].Args, " ") != "-t tag_bw -m cuda -s 33554432 -n 200" {
		t.Fatalf("spec %+v", specs[0])
	}
	r := runFake(t, map[string]string{"ucx_perftest-tag_bw-intra-node-direct": "../../fixtures/corpus/ucx/ucx9908-perftest-tag_bw-cuda-rndv-cuda_copy-fenced-write-gdr-disabled.txt"}, specs[0])
	bw, size, ok := r.BandwidthGBs()
	if r.Err != nil || !ok || bw != 0.64678 || size != 33554432 || r.UCX == nil || len(r.UCX.Transfers) != 2 || r.CPUSeconds == nil {
		t.Errorf("got %+v (bw %v at %d)", r, bw, size)
	}
	if b, err := os.ReadFile(r.LogFile); err != nil || filepath.Base(r.LogFile) != "ucx_perftest-bw-intra-node-direct.log" || !strings.Contains(string(b), "Final:") {
		t.Errorf("log %s: %v", r.LogFile, err)
	}
}

// Tools that ran but cannot measure GPU buffers prove nothing: a
// ucx_perftest built without MPI waits for a client (the reporter's
// mpirun -n 2 ucx_perftest in openucx/ucx#9908), an OSU built without
// CUDA prints a title without MPI-CUDA.
func TestBenchRunNamesAnUnfitTool(t *testing.T) {
	dir := t.TempDir()
	wait := filepath.Join(dir, "wait.txt")
	host := filepath.Join(dir, "host.txt")
	os.WriteFile(wait, []byte("[1717084632.951730] [gpu2:3756767:0]          module.c:280  UCX  DEBUG loading modules for ucx_perftest\nWaiting for connection...\n"), 0o644)
	os.WriteFile(host, []byte("# OSU MPI Bandwidth Test v7.2\n# Size      Bandwidth (MB/s)\n# Datatype: MPI_CHAR.\n1                       1.01\n"), 0o644)
	r := runFake(t, map[string]string{"ucx_perftest-tag_bw-intra-node-direct": wait}, mpi.Specs(mpi.ToolPerftest, mpi.IntraNode, nil, mpi.ModeNoCUDAIPC)[0])
	if !errors.Is(r.Err, mpi.ErrUnfit) || !strings.Contains(r.Err.Error(), "built without MPI") {
		t.Errorf("waiting ucx_perftest: %v", r.Err)
	}
	r = runFake(t, map[string]string{"osu_bw-intra-node-direct": host}, mpi.Specs(mpi.ToolOSU, mpi.IntraNode, nil, mpi.ModeNoCUDAIPC)[0])
	if !errors.Is(r.Err, mpi.ErrUnfit) || !strings.Contains(r.Err.Error(), "built without --enable-cuda") {
		t.Errorf("host-only OSU: %v", r.Err)
	}
	// A recording the fake lacks: the run fails, quoting its last line.
	r = runFake(t, nil, mpi.Specs(mpi.ToolOSU, mpi.IntraNode, nil, mpi.ModeNoCUDAIPC)[2])
	if r.Err == nil || errors.Is(r.Err, mpi.ErrUnfit) || !strings.Contains(r.Err.Error(), "exit status 3: last output: fake osu_bw: no recording") {
		t.Errorf("failed run: %v", r.Err)
	}
	if _, err := (MPIRunner{Dir: t.TempDir()}).Tool(); !errors.Is(err, mpi.ErrBenchNotFound) || !strings.Contains(err.Error(), "osu_bw not in") {
		t.Errorf("no tool: %v", err)
	}
}
