package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

const mpiBench = "../../fixtures/mpi-bench/"

// mpiRecordings are fixtures/mpi-bench's runs keyed as the fake wants
// them: the 2 x H200 NV18 node inside (cuda_ipc, and staged through host
// with cuda_ipc taken away) and the H100 NDR pair across nodes
// (rc_mlx5 zero-copy, and the rendezvous through cuda_copy without
// GPUDirect RDMA).
func mpiRecordings() map[string]string {
	return map[string]string{
		"osu_bw-intra-node-direct":      mpiBench + "osu_bw-h200x2-intra-cuda_ipc.txt",
		"osu_latency-intra-node-direct": mpiBench + "osu_latency-h200x2-intra-cuda_ipc.txt",
		"osu_bw-intra-node-no-cuda-ipc": mpiBench + "osu_bw-h200x2-intra-no-cuda-ipc-rndv-cuda_copy.txt",
		"osu_bw-inter-node-direct":      mpiBench + "osu_bw-h100x8-inter-rc_mlx5-zcopy.txt",
		"osu_latency-inter-node-direct": mpiBench + "osu_latency-h100x8-inter-rc_mlx5-zcopy.txt",
		"osu_bw-inter-node-no-gdr":      mpiBench + "osu_bw-h100x8-inter-no-gdr-rndv-cuda_copy.txt",
	}
}

// withFakeMPI puts the fake mpirun, srun and benchmarks first on PATH,
// replaying recs, and returns their directory for --mpi-bench-dir.
func withFakeMPI(t *testing.T, recs map[string]string, env ...string) string {
	t.Helper()
	dir, fenv := fakebin.OSU(t, recs)
	for _, e := range append(fenv, env...) {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

func mpiRun(res *results.Results, mode, op string) (results.Run, bool) {
	for _, r := range res.Nodes[0].Runs {
		if r.Suite == "mpi" && r.Mode == mode && r.Op == op {
			return r, true
		}
	}
	return results.Run{}, false
}

func wantSpec(t *testing.T, specs map[string]results.Spec, name, state, kind string, says ...string) results.Spec {
	t.Helper()
	sp := specs[name]
	if sp.State != state || sp.SkipKind != kind {
		t.Errorf("%s: %s (%s) %q, want %s (%s)", name, sp.State, sp.SkipKind, sp.Message, state, kind)
	}
	text := sp.Message + "\n" + strings.Join(sp.Notes, "\n")
	for _, s := range says {
		if !strings.Contains(text, s) {
			t.Errorf("%s does not say %q:\n%s", name, s, text)
		}
	}
	return sp
}

// Two H200 on NV18 with a CUDA-aware Open MPI: osu_bw -d cuda D D under
// mpirun --mca pml ucx shows cuda_ipc in UCX's tables, UCX_TLS=^cuda_ipc
// moves it through host memory at a thirtieth of the bandwidth and more
// CPU per GB, and both are told; the specs across nodes do not apply
// (no NIC).
func TestMPIBenchProvesCUDAIPCInANodeAndDetectsItsFallback(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "launched")
	dir := withFakeMPI(t, mpiRecordings(), "GDRCHECK_FAKE_MPI_MARK="+mark, "GDRCHECK_FAKE_OSU_SPIN=direct=300ms,no-cuda-ipc=900ms")
	r, res, specs := runMPIResults(t, mpiNodeOf(t, "h200x2-nv18-vm", "cuda-aware"), "--mpi-bench-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	wantSpec(t, specs, "proves the direct path between two GPUs in a node", results.StatePassed, "", "osu_bw bw intra-node: cuda-ipc", "(?) rendezvous zero-copy read from remote on cuda_ipc/cuda", "347.16 GB/s at 32 MiB", "2.08 us at 1 bytes")
	f := wantSpec(t, specs, "detects the fallback forced by UCX_TLS=^cuda_ipc in a node", results.StatePassed, "", "intra-node no-cuda-ipc: staged, was cuda-ipc", "rendezvous cuda_copy, fenced write to remote, cuda_copy on cma/memory")
	var ratio, cpu *results.Metric
	for i, m := range f.Metrics {
		switch m.Name {
		case "ratio_to_direct":
			ratio = &f.Metrics[i]
		case results.CPUPerGBMetric:
			cpu = &f.Metrics[i]
		}
	}
	if ratio == nil || ratio.Value > 0.05 || ratio.Verdict != "pass" {
		t.Errorf("ratio metric %+v, want about 0.033, pass (NVLink: required)", ratio)
	}
	if cpu == nil || cpu.Verdict != "pass" || cpu.Baseline == nil || cpu.Value <= *cpu.Baseline {
		t.Errorf("CPU per GB metric %+v, want the forced run's above the direct run's", cpu)
	}
	for _, name := range []string{"proves GPUDirect RDMA between two nodes", "detects the fallback forced by UCX_IB_GPU_DIRECT_RDMA=no between nodes"} {
		wantSpec(t, specs, name, results.StateSkipped, results.SkipNotApplicable, "no RDMA NICs on this node")
	}
	d, ok := mpiRun(res, "direct", "bw intra-node")
	if !ok || d.PathVerdict != results.PathDirect || d.Transport != "cuda-ipc" || d.BusBW < 347 || d.CPUSecondsPerGB == nil || d.Log == "" {
		t.Errorf("direct run in results.json: %+v", d)
	}
	if fr, ok := mpiRun(res, "no-cuda-ipc", "bw intra-node"); !ok || fr.PathVerdict != results.PathFallback || fr.Transport != "staged" || len(fr.Env) != 1 || fr.Env[0] != "UCX_TLS=^cuda_ipc" {
		t.Errorf("forced run in results.json: %+v", fr)
	}
	launched, _ := os.ReadFile(mark)
	for _, want := range []string{"mpirun --mca pml ucx -np 2 env UCX_PROTO_INFO=y ", "osu_bw -d cuda -m 33554432 D D", "env UCX_PROTO_INFO=y UCX_TLS=^cuda_ipc "} {
		if !strings.Contains(string(launched), want) {
			t.Errorf("launched:\n%s\nwant %q", launched, want)
		}
	}
}

// A run whose tables show a pipeline through host memory under the
// direct settings fails, quoting the protocol; the forced spec has no
// direct path to force from. A forced run that stays on cuda_ipc at the
// same bandwidth is a fallback gdrcheck did not see: it fails.
func TestMPIBenchFailsAStagedDirectRunAndAnUnseenFallback(t *testing.T) {
	t.Run("staged under the direct settings", func(t *testing.T) {
		recs := mpiRecordings()
		recs["osu_bw-intra-node-direct"] = recs["osu_bw-intra-node-no-cuda-ipc"]
		dir := withFakeMPI(t, recs)
		r, specs := runMPI(t, mpiNodeOf(t, "h200x2-nv18-vm", "cuda-aware"), "--mpi-bench-dir", dir)
		if r.code != 1 {
			t.Errorf("exit %d, want 1\n%s", r.code, r.stderr)
		}
		wantSpec(t, specs, "proves the direct path between two GPUs in a node", results.StateFailed, "", "osu_bw bw intra-node: UCX staged GPU memory through the host", "rendezvous cuda_copy, fenced write to remote, cuda_copy on cma/memory (staged)")
		wantSpec(t, specs, "detects the fallback forced by UCX_TLS=^cuda_ipc in a node", results.StateSkipped, results.SkipNotApplicable, "did not take a direct path")
	})
	t.Run("fallback not seen", func(t *testing.T) {
		recs := mpiRecordings()
		recs["osu_bw-intra-node-no-cuda-ipc"] = recs["osu_bw-intra-node-direct"]
		dir := withFakeMPI(t, recs)
		r, specs := runMPI(t, mpiNodeOf(t, "h200x2-nv18-vm", "cuda-aware"), "--mpi-bench-dir", dir)
		if r.code != 1 {
			t.Errorf("exit %d, want 1\n%s", r.code, r.stderr)
		}
		wantSpec(t, specs, "proves the direct path between two GPUs in a node", results.StatePassed, "")
		wantSpec(t, specs, "detects the fallback forced by UCX_TLS=^cuda_ipc in a node", results.StateFailed, "", "forced fallback UCX_TLS=^cuda_ipc not detected: transport stayed cuda-ipc; busbw kept 1.00")
	})
}

// Across two nodes of H100 with NDR: the direct run's tables show
// rc_mlx5 zero-copy from GPU memory (GPUDirect RDMA), and
// UCX_IB_GPU_DIRECT_RDMA=no the rendezvous through cuda_copy at half the
// bandwidth; a no-gdr run still on zero-copy is not detected.
func TestMPIBenchProvesGPUDirectRDMABetweenNodes(t *testing.T) {
	launcher := []string{"--mpi-internode-launcher", "mpirun --mca pml ucx -np {ranks} --host node1,node2"}
	t.Run("detected", func(t *testing.T) {
		dir := withFakeMPI(t, mpiRecordings())
		r, res, specs := runMPIResults(t, mpiNodeOf(t, "h100x8-nvswitch-cx7-pix", "cuda-aware-ucx-info"), append(launcher, "--mpi-bench-dir", dir)...)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		wantSpec(t, specs, "has UCX registering GPU memory with the RDMA NICs", results.StatePassed, "", "memory domain mlx5_0 registers host, cuda memory")
		wantSpec(t, specs, "proves GPUDirect RDMA between two nodes", results.StatePassed, "", "osu_bw bw inter-node: rdma-zcopy", "on rc_mlx5/mlx5_0:1", "48.13 GB/s at 32 MiB")
		wantSpec(t, specs, "detects the fallback forced by UCX_IB_GPU_DIRECT_RDMA=no between nodes", results.StatePassed, "", "inter-node no-gdr: staged, was rdma-zcopy")
		if d, ok := mpiRun(res, "direct", "bw inter-node"); !ok || d.PathVerdict != results.PathDirect || d.Transport != "rdma-zcopy" || d.CPUSeconds != nil {
			t.Errorf("inter-node run: %+v (CPU is not counted: the remote rank is not ours)", d)
		}
	})
	t.Run("not detected", func(t *testing.T) {
		recs := mpiRecordings()
		recs["osu_bw-inter-node-no-gdr"] = recs["osu_bw-inter-node-direct"]
		dir := withFakeMPI(t, recs)
		r, specs := runMPI(t, mpiNodeOf(t, "h100x8-nvswitch-cx7-pix", "cuda-aware-ucx-info"), append(launcher, "--mpi-bench-dir", dir)...)
		if r.code != 1 {
			t.Errorf("exit %d, want 1\n%s", r.code, r.stderr)
		}
		wantSpec(t, specs, "detects the fallback forced by UCX_IB_GPU_DIRECT_RDMA=no between nodes", results.StateFailed, "", "forced fallback UCX_IB_GPU_DIRECT_RDMA=no not detected: transport stayed rdma-zcopy")
	})
}

// The one-H200 machine's Open MPI without CUDA on a node with two GPUs:
// the misbuild fails, mpirun is never started, and each benchmark spec
// could not run, pointing at the misbuild; the exit stays 1.
func TestAMisbuiltMPINeverRunsTheBenchmarks(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "launched")
	dir := withFakeMPI(t, mpiRecordings(), "GDRCHECK_FAKE_MPI_MARK="+mark)
	r, specs := runMPI(t, mpiNodeOf(t, "h200x2-nv18-vm", "h200-debian-nocuda"), "--mpi-bench-dir", dir)
	if r.code != 1 {
		t.Errorf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(mark); err == nil {
		b, _ := os.ReadFile(mark)
		t.Errorf("mpirun was started:\n%s", b)
	}
	for _, name := range []string{"proves the direct path between two GPUs in a node", "detects the fallback forced by UCX_TLS=^cuda_ipc in a node"} {
		wantSpec(t, specs, name, results.StateSkipped, results.SkipCannotRun, "not run: the MPI/UCX build is broken (mpi / has an Open MPI built with CUDA support failed: Open MPI 4.1.6")
	}
	if !strings.Contains(r.stderr, "mpi: benchmarks not run: mpi / has an Open MPI built with CUDA support failed") {
		t.Errorf("progress does not say the benchmarks were not run:\n%s", r.stderr)
	}
}
