package runner

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/results"
)

const ncclTests = "../fixtures/nccl-tests/"

// emuRun is a recorded all_reduce across nodes emulated on one H200
// (fixtures/nccl-tests/INDEX.md): n2 reaches 1.86 GB/s at 256 MiB, the
// n4 run with a slow node 0.65.
func emuRun(t *testing.T, file string, nodes ...string) nccl.ScalingRun {
	t.Helper()
	f, err := os.Open(ncclTests + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := nccl.ParseTests(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return nccl.ScalingRun{Kind: nccl.KindScale, Nodes: nodes, Result: nccl.Result{Tests: tr, LogFile: "/scratch/logs/" + strings.TrimSuffix(file, ".txt") + ".log"}}
}

// multiNode is the shipped h200x2-nv18 profile with the multi-node
// bandwidths a site would add: 1.5 GB/s across 2 nodes, 1.5 across 4.
func multiNode(t *testing.T) *baseline.Baseline {
	t.Helper()
	b, err := os.ReadFile("../fixtures/baselines/h200x2-nv18.yaml")
	if err != nil {
		t.Fatal(err)
	}
	extra := ""
	for _, n := range []string{"2", "4"} {
		extra += "  - name: nccl.all_reduce.busbw.nodes" + n + "\n    unit: GB/s\n    direction: higher\n    expected: 1.5\n    tolerance: {relative: 0.10}\n"
	}
	y := strings.Replace(string(b), "metrics:\n", "metrics:\n"+extra, 1)
	bl, err := baseline.Parse("h200x2-nv18-multinode.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return bl
}

func TestWantPairsRunsThePairwiseRoundsOnlyWhenTheyCanTellSomething(t *testing.T) {
	store, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	single, ok := store.Get("h200x2-nv18")
	if !ok {
		t.Fatal("no shipped h200x2-nv18 baseline")
	}
	multi := multiNode(t)
	n1 := emuRun(t, "all_reduce_perf-h200x1-emu-n1.txt", "emu0")
	n2 := emuRun(t, "all_reduce_perf-h200x1-emu-n2-socket.txt", "emu0", "emu1")
	slow := emuRun(t, "all_reduce_perf-h200x1-emu-n4-slow-socket.txt", "emu0", "emu1", "emu2", "emu3")
	failed := nccl.ScalingRun{Kind: nccl.KindScale, Nodes: []string{"emu0", "emu1"}, Result: nccl.Result{Err: errors.New("exit status 1")}}
	for _, tc := range []struct {
		name string
		mode string
		b    *baseline.Baseline
		runs []nccl.ScalingRun
		want bool
		why  string
	}{
		{"always", PairsAlways, multi, []nccl.ScalingRun{n1, n2}, true, "asked for (--scaling-pairs always)"},
		{"never", PairsNever, nil, []nccl.ScalingRun{n1, slow}, false, "not asked for (--scaling-pairs never)"},
		{"no baseline", PairsAuto, nil, []nccl.ScalingRun{n1, n2}, true, "no baseline to judge multi-node bandwidth by: the job judges its own pairs"},
		{"a baseline of one node", PairsAuto, single, []nccl.ScalingRun{n1, n2}, true, "baseline h200x2-nv18 states no multi-node bandwidth: the job judges its own pairs"},
		{"only one node ran", PairsAuto, multi, []nccl.ScalingRun{n1}, true, "baseline h200x2-nv18 states no multi-node bandwidth: the job judges its own pairs"},
		{"every run in its band", PairsAuto, multi, []nccl.ScalingRun{n1, n2}, false, "every multi-node run within its baseline band"},
		{"a run below its band", PairsAuto, multi, []nccl.ScalingRun{n1, n2, slow}, true, "all_reduce across 4 nodes fell below baseline h200x2-nv18"},
		{"a failed run", PairsAuto, multi, []nccl.ScalingRun{n1, failed}, true, "all_reduce across 2 nodes failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := wantPairs(tc.mode, tc.b)(tc.runs)
			if got != tc.want || why != tc.why {
				t.Errorf("got %t %q, want %t %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// scalingRuns bands each run by the baseline of its node count and names
// its log as results.json does.
func TestScalingRunsCarryTheirBandAndLog(t *testing.T) {
	s := &nccl.Scaling{Runs: []nccl.ScalingRun{
		emuRun(t, "all_reduce_perf-h200x1-emu-n1.txt", "emu0"),
		emuRun(t, "all_reduce_perf-h200x1-emu-n2-socket.txt", "emu0", "emu1"),
	}}
	runs := scalingRuns(s, multiNode(t), Options{LogDir: "/scratch/stage", LogRef: "logs"})
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	one, two := runs[0], runs[1]
	if one.Baseline != nil || len(one.Nodes) != 1 || one.Log != "logs/all_reduce_perf-h200x1-emu-n1.log" {
		t.Errorf("one node: band %+v, nodes %v, log %q: want no band (no metric of one node), its log under logs/", one.Baseline, one.Nodes, one.Log)
	}
	if b := two.Baseline; b == nil || b.Profile != "h200x2-nv18" || b.Metric != "nccl.all_reduce.busbw.nodes2" || b.Expected != 1.5 ||
		math.Abs(b.Low-1.35) > 1e-9 || math.Abs(b.High-1.65) > 1e-9 || b.Direction != "higher" ||
		two.BusBW != 1.86 || two.Log != "logs/all_reduce_perf-h200x1-emu-n2-socket.log" {
		t.Errorf("two nodes: band %+v, busbw %v, log %q: want h200x2-nv18's nodes2 band 1.35-1.65 around 1.5, 1.86 GB/s, its log under logs/", b, two.BusBW, two.Log)
	}
	if runs := scalingRuns(s, nil, Options{}); runs[1].Baseline != nil || runs[1].Log != "" {
		t.Errorf("no baseline, no log dir: got band %+v, log %q", runs[1].Baseline, runs[1].Log)
	}
}

// readNodeResults takes each node's own all_reduce bandwidth and, from
// the first that reported, its GPUs, profile and evidence; a node that
// never reported, or was not evaluated, adds nothing.
func TestReadNodeResultsOfARecordedNode(t *testing.T) {
	dir := t.TempDir()
	rec, err := os.ReadFile("../fixtures/results/h200x2-nv18-all-suites.results.json")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("n1", rec)
	bad := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: "n2", Status: results.NodeUnevaluable, Reason: "NVML could not be used",
		Runs: []results.Run{{Suite: "collectives", Op: "all_reduce", Mode: nccl.ModeDirect.Name, BusBW: 999}}}}}
	if err := os.Mkdir(filepath.Join(dir, "n2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := bad.Write(filepath.Join(dir, "n2", "results.json")); err != nil {
		t.Fatal(err)
	}
	rep, err := readNodeResults(dir, []string{"n0", "n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.busbw) != 1 || rep.busbw["n1"] != 340 || rep.gpus != 2 || rep.profile != "h200x2-nv18" || rep.evidence == nil || len(rep.evidence.GPUs) != 2 {
		t.Errorf("got busbw %v, %d GPUs, profile %q, evidence %v: want n1's 340 GB/s, 2 GPUs, h200x2-nv18 and its evidence",
			rep.busbw, rep.gpus, rep.profile, rep.evidence != nil)
	}
	if rep, err := readNodeResults("", []string{"n1"}); err != nil || len(rep.busbw) != 0 || rep.gpus != 0 {
		t.Errorf("no directory: got %+v, %v", rep, err)
	}
	write("n3", []byte("{not json"))
	if _, err := readNodeResults(dir, []string{"n1", "n3"}); err == nil || !strings.Contains(err.Error(), "n3") {
		t.Errorf("a results.json that is no JSON: got %v, want an error naming it", err)
	}
}
