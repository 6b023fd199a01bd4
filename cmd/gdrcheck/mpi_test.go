package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// mpiNode is the recorded one-H200 node with an MPI recording laid over
// it (testdata/mpi/NAME: gdrcheck/mpi.json holding ompi_info's output, and
// UCX's module directory as its file names), or bare where overlay is "".
func mpiNode(t *testing.T, overlay string) string {
	t.Helper()
	return mpiNodeOf(t, "h200x1-vm", overlay)
}

// mpiNodeOf is a recorded node with an MPI recording laid over it.
func mpiNodeOf(t *testing.T, name, overlay string) string {
	t.Helper()
	dir := t.TempDir()
	if err := extract(nodes+name+".ttar", dir); err != nil {
		t.Fatal(err)
	}
	if overlay != "" {
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "mpi", overlay))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runMPI(t *testing.T, root string, extra ...string) (result, map[string]results.Spec) {
	t.Helper()
	r, _, specs := runMPIResults(t, root, extra...)
	return r, specs
}

// mpiSpecs are the mpi suite's specs: the misbuilds, then the benchmarks.
const mpiSpecs = 9

func runMPIResults(t *testing.T, root string, extra ...string) (result, *results.Results, map[string]results.Spec) {
	t.Helper()
	out := t.TempDir()
	r := gdrcheck(t, append([]string{"run", "--host-root", root, "--suites", "mpi", "--out", out}, extra...)...)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, r.stderr)
	}
	specs := map[string]results.Spec{}
	for _, s := range res.Nodes[0].Suites {
		if s.Name != "mpi" {
			continue
		}
		for _, sp := range s.Specs {
			specs[sp.Name] = sp
		}
	}
	if len(specs) != mpiSpecs {
		t.Fatalf("want the %d mpi specs, got %v\nstderr:\n%s", mpiSpecs, specs, r.stderr)
	}
	return r, res, specs
}

// The real one-H200 machine's stack: Debian's Open MPI 4.1.6 without CUDA
// and a UCX holding only cma, ib and rdmacm. Both misbuilds fail naming
// their cause and fix, and are told before any benchmark.
func TestMPISuiteNamesTheOneH200Misbuilds(t *testing.T) {
	t.Parallel()
	r, specs := runMPI(t, mpiNode(t, "h200-debian-nocuda"))
	if r.code != 1 {
		t.Errorf("exit %d, want 1\nstderr:\n%s", r.code, r.stderr)
	}
	m := specs["has an Open MPI built with CUDA support"]
	for _, want := range []string{"Open MPI 4.1.6", "/usr/bin/ompi_info", "opal_built_with_cuda_support:value:false", "--with-cuda"} {
		if m.State != results.StateFailed || !strings.Contains(m.Message, want) {
			t.Errorf("MPI spec %s %q: want failed naming %q", m.State, m.Message, want)
		}
	}
	u := specs["has UCX with its cuda transports"]
	for _, want := range []string{"no cuda_copy or cuda_ipc", "the modules in /usr/lib/x86_64-linux-gnu/ucx", "libuct_cuda.so"} {
		if u.State != results.StateFailed || !strings.Contains(u.Message, want) {
			t.Errorf("UCX spec %s %q: want failed naming %q", u.State, u.Message, want)
		}
	}
	if notes := strings.Join(u.Notes, "\n"); !strings.Contains(notes, "libuct_cma.so.0 libuct_cma.so.0.0.0 libuct_ib.so.0") || !strings.Contains(notes, "ucx_info not on PATH") {
		t.Errorf("UCX notes miss the module listing or the missing ucx_info:\n%s", notes)
	}
	if g := specs["has gdr_copy where UCX is set up for it"]; g.State != results.StateSkipped || g.SkipKind != results.SkipNotApplicable {
		t.Errorf("gdr_copy spec %s (%s) %q: want not applicable (no gdrdrv, no UCX_TLS)", g.State, g.SkipKind, g.Message)
	}
	for _, want := range []string{"MPI misbuild: Open MPI 4.1.6", "UCX misbuild: UCX has no cuda_copy or cuda_ipc"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("progress does not say %q:\n%s", want, r.stderr)
		}
	}
}

// A CUDA-aware Open MPI with cuda, cuda_gdr and gdrdrv passes its
// misbuild specs. On one GPU and no NIC the rest does not apply, each
// saying why: no MPICH, no NIC, no second GPU to send to, no launcher
// across nodes; no benchmark is looked for.
func TestMPISuitePassesACUDAAwareBuild(t *testing.T) {
	t.Parallel()
	r, specs := runMPI(t, mpiNode(t, "cuda-aware"))
	if r.code != 0 {
		t.Errorf("exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
	}
	notApplicable := map[string]string{
		"has an MPICH built with CUDA support":                                   "no MPICH here",
		"has UCX registering GPU memory with the RDMA NICs":                      "no RDMA NICs",
		"proves the direct path between two GPUs in a node":                      "1 GPU(s): there is no second GPU in this node",
		"detects the fallback forced by UCX_TLS=^cuda_ipc in a node":             "1 GPU(s)",
		"proves GPUDirect RDMA between two nodes":                                "no RDMA NICs on this node",
		"detects the fallback forced by UCX_IB_GPU_DIRECT_RDMA=no between nodes": "no RDMA NICs on this node",
	}
	for name, sp := range specs {
		if why, ok := notApplicable[name]; ok {
			if sp.State != results.StateSkipped || sp.SkipKind != results.SkipNotApplicable || !strings.Contains(sp.Message, why) {
				t.Errorf("%s: %s (%s) %q, want not applicable saying %q", name, sp.State, sp.SkipKind, sp.Message, why)
			}
			continue
		}
		if sp.State != results.StatePassed {
			t.Errorf("%s: %s %q, want passed", name, sp.State, sp.Message)
		}
	}
	if strings.Contains(r.stderr, "mpi: ") {
		t.Errorf("a benchmark ran or was looked for:\n%s", r.stderr)
	}
}

// A recording without gdrcheck/mpi.json ran no command: the suite could
// not run, says why, and the run exits 2.
func TestMPISuiteCannotRunOnARecordingWithoutMPI(t *testing.T) {
	t.Parallel()
	r, specs := runMPI(t, mpiNode(t, ""))
	if r.code != 2 {
		t.Errorf("exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
	}
	m := specs["has an Open MPI built with CUDA support"]
	if m.State != results.StateSkipped || m.SkipKind != results.SkipCannotRun || !strings.Contains(m.Message, "has no gdrcheck/mpi.json") {
		t.Errorf("MPI spec %s (%s) %q: want could-not-run naming the missing recording", m.State, m.SkipKind, m.Message)
	}
	if u := specs["has UCX with its cuda transports"]; u.SkipKind != results.SkipCannotRun || !strings.Contains(u.Message, "no UCX found") {
		t.Errorf("UCX spec %s (%s) %q: want could-not-run, no UCX", u.State, u.SkipKind, u.Message)
	}
}
