package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

// withFakePair makes the fake ucx_perftest replay the real 1 x H200
// pairs (UCX 1.20.1) and returns the --ucx-perftest flag naming it; tls
// is the UCX_TLS gdrcheck runs with ("" unset).
func withFakePair(t *testing.T, tls string) []string {
	t.Helper()
	dir, env := fakebin.UCXPerftest(t, fakebin.H200UCXPairs("../../fixtures"))
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	t.Setenv("UCX_TLS", tls)
	if tls == "" {
		os.Unsetenv("UCX_TLS")
	}
	return []string{"--ucx-perftest", filepath.Join(dir, "ucx_perftest")}
}

const (
	specIntraDirect = "proves the direct path between two GPUs in a node"
	specIntraForced = "detects the fallback forced by UCX_TLS=^cuda_ipc in a node"
)

// The 1 x H200 with no CUDA-aware MPI, its UCX built --with-cuda:
// ucx_perftest's server and client on the one GPU prove cuda_ipc and
// detect UCX_TLS=^cuda_ipc; the same run started with a UCX_TLS that
// takes cuda_ipc away, or leaves only tcp, fails its direct spec.
func TestMPIPairJudgesEachRealH200Pair(t *testing.T) {
	for _, c := range []struct {
		tls, direct, forced string
		code                int
		directSays          []string
		forcedSays          string
	}{
		{"", results.StatePassed, results.StatePassed, 0,
			[]string{"ucx_perftest bw intra-node: cuda-ipc", "484.82 GB/s at 4 MiB", "one GPU: the ucx_perftest server and client share it"},
			"intra-node no-cuda-ipc: staged, was cuda-ipc"},
		{"^cuda_ipc", results.StateFailed, results.StateSkipped, 1,
			[]string{"ucx_perftest bw intra-node: UCX staged GPU memory through the host", "35.62 GB/s at 4 MiB"}, "did not take a direct path"},
		{"tcp,cuda_copy", results.StateFailed, results.StateSkipped, 1,
			[]string{"ucx_perftest bw intra-node: UCX staged GPU memory through the host", "0.45 GB/s at 4 MiB"}, "did not take a direct path"},
		{"tcp", results.StateFailed, results.StateSkipped, 1,
			[]string{"ucx_perftest bw intra-node failed: ucx_perftest: exit status 255", "UCX  ERROR Failed to run test: Out of memory"}, "no direct intra-node run with UCX protocol tables"},
	} {
		t.Run("UCX_TLS="+c.tls, func(t *testing.T) {
			flags := withFakePair(t, c.tls)
			r, res, specs := runMPIResults(t, mpiNodeOf(t, "h200x1-vm", "cuda-aware"), flags...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d\n%s\n%s", r.code, c.code, r.stdout, r.stderr)
			}
			wantSpec(t, specs, specIntraDirect, c.direct, "", c.directSays...)
			kind := ""
			if c.forced == results.StateSkipped {
				kind = results.SkipNotApplicable
			}
			wantSpec(t, specs, specIntraForced, c.forced, kind, c.forcedSays)
			if c.tls == "" {
				d, ok := mpiRun(res, "direct", "bw intra-node")
				if !ok || d.PathVerdict != results.PathDirect || d.Transport != "cuda-ipc" || d.Tool != "ucx_perftest" || d.Log == "" {
					t.Errorf("direct run in results.json: %+v", d)
				}
			}
		})
	}
}

// Where the MPI was built without CUDA (the H200's Debian Open MPI
// 4.1.6) its misbuild fails, but the pair, which uses no MPI, still runs.
func TestAnMPIWithoutCUDADoesNotBlockThePair(t *testing.T) {
	flags := withFakePair(t, "")
	root := mpiNodeOf(t, "h200x1-vm", "cuda-aware")
	b, err := os.ReadFile(filepath.Join("testdata", "mpi", "h200-debian-nocuda", "gdrcheck", "mpi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "gdrcheck", "mpi.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, specs := runMPI(t, root, flags...)
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (the misbuild)\n%s", r.code, r.stderr)
	}
	wantSpec(t, specs, "has an Open MPI built with CUDA support", results.StateFailed, "")
	wantSpec(t, specs, specIntraDirect, results.StatePassed, "", "ucx_perftest bw intra-node: cuda-ipc")
	wantSpec(t, specs, specIntraForced, results.StatePassed, "")
}
