package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

// knownBadNode is the fixture in the cell of NVIDIA/nccl#1676: a working
// nvidia_peermem without a memory_peers client, and NCCL 2.21.5.
const knownBadNode = "h100x8-nccl221-peermem-only"

// runWithProgress runs gdrcheck on a fixture node with its replayed
// nccl-tests runs and the progress on stderr (no -q).
func runWithProgress(t *testing.T, name string, extra ...string) (result, *results.Results, string) {
	t.Helper()
	out := t.TempDir()
	recs, _ := shapeRuns(name)
	var bins []string
	for k := range recs {
		if op, mode, _ := strings.Cut(k, "-"); mode == "direct" {
			bins = append(bins, op+"_perf")
		}
	}
	dir, env := fakebin.NCCLTests(t, bins, recs)
	cmd := exec.Command(bin, append([]string{"run", "--host-root", nodes + name + ".ttar", "--out", out, "--nccl-tests-dir", dir}, extra...)...)
	cmd.Env = append(append(os.Environ(), "SLURMD_NODENAME="), env...)
	r := runCmd(t, cmd)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	return r, res, filepath.Join(out, "results.json")
}

func specOf(res *results.Results, suite, name string) (results.Spec, bool) {
	for _, s := range res.Nodes[0].Suites {
		for _, sp := range s.Specs {
			if s.Name == suite && sp.Name == name {
				return sp, true
			}
		}
	}
	return results.Spec{}, false
}

// The flag comes before the benchmarks it explains: the known-bad line is
// on stderr before nccl-tests' first progress line, and the kernel suite's
// spec fails naming the source.
func TestAKnownBadNodeIsFlaggedBeforeAnyBenchmark(t *testing.T) {
	t.Parallel()
	r, res, _ := runWithProgress(t, knownBadNode, "--suites", "kernel,collectives,negative")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	flag := strings.Index(r.stderr, "known-bad combination (fail, NCCL from /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5): NVIDIA/nccl#1676: ")
	bench := strings.Index(r.stderr, "nccl: all_reduce_perf (direct) ...")
	switch {
	case flag < 0:
		t.Fatalf("no known-bad line on stderr:\n%s", r.stderr)
	case bench < 0:
		t.Fatalf("no benchmark ran:\n%s", r.stderr)
	case flag > bench:
		t.Errorf("the known-bad line comes after the first benchmark:\n%s", r.stderr)
	}
	sp, ok := specOf(res, "kernel", "is in no known-bad combination of versions")
	if !ok || sp.State != results.StateFailed {
		t.Fatalf("spec %+v, want failed", sp)
	}
	for _, want := range []string{"in a known-bad combination: NVIDIA/nccl#1676: NCCL 2.21.5 is <=2.22.3", "; fix: NCCL >= 2.23.4", "(https://github.com/NVIDIA/nccl/issues/1676)"} {
		if !strings.Contains(sp.Message, want) {
			t.Errorf("message %q lacks %q", sp.Message, want)
		}
	}
	// NCCL 2.21.5 both ran and was installed: one fact, and the library.
	var ncclFacts []string
	for _, f := range res.Nodes[0].Facts {
		if f.Name == "nccl" {
			ncclFacts = append(ncclFacts, f.Value)
		}
	}
	if strings.Join(ncclFacts, ",") != "2.21.5" || res.Nodes[0].Fact("nccl_library") != "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5" {
		t.Errorf("nccl facts %v, library %q", ncclFacts, res.Nodes[0].Fact("nccl_library"))
	}
}

// What ran wins: the healthy node's replays say NCCL 2.28.3, so no flag,
// and its spec notes the version and where it was read.
func TestTheKnownBadSpecPassesOnAHealthyNode(t *testing.T) {
	t.Parallel()
	r, res, _ := runWithProgress(t, "h100x8-nvswitch-cx7-pix", "--suites", "kernel,collectives")
	if r.code != 0 || strings.Contains(r.stderr, "known-bad") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sp, _ := specOf(res, "kernel", "is in no known-bad combination of versions")
	if sp.State != results.StatePassed || strings.Join(sp.Notes, "|") != "NCCL 2.28.3 (nccl-tests)" {
		t.Errorf("spec %+v", sp)
	}
	// Without a benchmark or a library the version is unknown: a note.
	r, res, _ = runKernelSuite(t, "h100x8-nvswitch-cx7-pix")
	sp, _ = specOf(res, "kernel", "is in no known-bad combination of versions")
	if r.code != 0 || sp.State != results.StatePassed || len(sp.Notes) != 1 || !strings.HasPrefix(sp.Notes[0], "NCCL version unknown: ") {
		t.Errorf("exit %d, spec %+v", r.code, sp)
	}
}

// An upgrade that moves a node into a known-bad cell is a regression:
// the same node, its NCCL going from 2.23.4 to 2.21.5.
func TestCompareFlagsAnUpgradeIntoAKnownBadCell(t *testing.T) {
	t.Parallel()
	_, res, after := runKernelSuite(t, knownBadNode)
	fixed := *res
	fixed.Nodes = append([]results.Node(nil), res.Nodes...)
	n := &fixed.Nodes[0]
	n.Facts = append([]results.Fact(nil), n.Facts...)
	for i := range n.Facts {
		if n.Facts[i].Name == "nccl" {
			n.Facts[i].Value = "2.23.4"
		}
	}
	before := filepath.Join(t.TempDir(), "results.json")
	if err := fixed.Write(before); err != nil {
		t.Fatal(err)
	}
	// A wide terminal: the change is looked for whole, not as wrapped.
	r := gdrcheckEnv(t, append(os.Environ(), "SLURMD_NODENAME=", "COLUMNS=1000"), "compare", before, after)
	if r.code != 1 {
		t.Fatalf("compare exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"stays out of known-bad combinations", "moved into a known-bad combination: NVIDIA/nccl#1676: NCCL 2.21.5 is <=2.22.3"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("compare output lacks %q:\n%s", want, r.stdout)
		}
	}
	// The way back out is no regression.
	if r := gdrcheck(t, "compare", after, before); r.code != 0 {
		t.Errorf("compare back: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// runKernelSuite runs the kernel suite alone on a fixture node, quietly.
func runKernelSuite(t *testing.T, name string) (result, *results.Results, string) {
	t.Helper()
	out := t.TempDir()
	r := gdrcheck(t, "run", "-q", "--host-root", nodes+name+".ttar", "--out", out, "--suites", "kernel")
	path := filepath.Join(out, "results.json")
	res, err := results.Read(path)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return r, res, path
}
