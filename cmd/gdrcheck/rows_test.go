package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

// The 2 GiB row of the recorded 2 x H200 all_reduce, as the fake replays it.
const recorded2G = "  2147483648     536870912     float     sum      -1  6289.98  341.41  341.41       0  6286.43  341.61  341.61       0\n"

// withRows writes the recorded direct all_reduce with its 2 GiB row
// replaced by rows, and returns the H200 recordings replaying it.
func withRows(t *testing.T, rows string) (map[string]string, string) {
	t.Helper()
	recs := fakebin.H200Recordings(recorded)
	b, err := os.ReadFile(recs["all_reduce-direct"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), recorded2G) {
		t.Fatal("recording changed shape; update the test")
	}
	f := filepath.Join(t.TempDir(), "all_reduce.txt")
	if err := os.WriteFile(f, []byte(strings.Replace(string(b), recorded2G, rows, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	recs["all_reduce-direct"] = f
	return recs, f
}

func specMessage(res *results.Results, suite, name string) (string, string) {
	sp, _ := specByName(res, suite, name)
	return sp.State, sp.Message
}

const (
	slowRow2G    = "  2147483648     536870912     float     sum      -1 63000.00   34.09   34.09       0 63000.00   34.09   34.09       0\n"
	repeatRow1G  = "  1073741824     268435456     float     sum      -1  3269.90  328.37  328.37       0  3239.42  331.46  331.46       0\n"
	oomRow2G     = "  2147483648     536870912     float     sum      -1 vm:1933:1933 [0] include/alloc.h:124 NCCL WARN Cuda failure 2 'out of memory'\n"
	infRow2G     = "  2147483648     536870912     float     sum      -1  6289.98     inf     inf       0  6286.43     inf     inf       0\n"
	hugeSizeRow  = "  99999999999999999999     536870912     float     sum      -1  6289.98  341.41  341.41       0  6286.43  341.61  341.61       0\n"
	impossible2G = "  2147483648     536870912     float     sum      -1  6289.98   1e308   1e308       0  6286.43   1e308   1e308       0\n"
)

// Each damaged table makes the run fail naming the row (exit 1: it is no
// pass) and analyze say the output is partial (exit 2) or failed (1, with
// a WARN among the rows), where they compared the 1 GiB row and passed.
func TestADamagedTableIsNeverAPass(t *testing.T) {
	for _, c := range []struct {
		name, rows, reason string
		analyze            int
	}{
		{"2 GiB at 34 GB/s then a repeated 1 GiB", slowRow2G + repeatRow1G, "goes back to 1 GiB after the 2 GiB row", 2},
		{"a 2 GiB row ending in an interleaved out-of-memory WARN", oomRow2G, "the 2 GiB row has NCCL's log interleaved into it", 1},
		{"a 2 GiB row of inf", infRow2G, "the 2 GiB row has a value that is not a finite number (inf)", 2},
		{"a size past int64", hugeSizeRow, "has a size past the largest 64-bit integer", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, file := withRows(t, c.rows)
			r, res := ncclRun(t, recs)
			state, msg := specMessage(res, "collectives", "runs the collectives without errors")
			if r.code != 1 || state != results.StateFailed || !strings.Contains(msg, c.reason) {
				t.Errorf("run: exit %d, %s %q; want 1 naming %q", r.code, state, msg, c.reason)
			}
			state, msg = specMessage(res, "collectives", "reaches the baseline bus bandwidth at large messages")
			if state != results.StateFailed || !strings.Contains(msg, "all_reduce_perf busbw not compared: its table is partial") {
				t.Errorf("bandwidth spec: %s %q; want it not compared", state, msg)
			}
			a := gdrcheck(t, "analyze", "nccl-tests", file)
			if a.code != c.analyze || !strings.Contains(a.stdout, c.reason) || strings.Contains(a.stdout, "result: pass") {
				t.Errorf("analyze: exit %d, want %d naming %q\n%s", a.code, c.analyze, c.reason, a.stdout)
			}
		})
	}
}

// 1e308 GB/s through two H200s' 18 NVLinks: the run fails saying the
// measurement cannot be right, no table prints the 309 digits, and the
// HTML axis shows no +Inf.
func TestImpossibleBusBandwidthFails(t *testing.T) {
	recs, _ := withRows(t, impossible2G)
	dir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf", "all_gather_perf", "sendrecv_perf"}, recs)
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	out := t.TempDir()
	r := gdrcheck(t, "run", "--host-root", nodes+"h200x2-nv18-vm.ttar", "--nccl-tests-dir", dir, "--out", out, "--suites", "collectives")
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.stderr)
	}
	state, msg := specMessage(res, "collectives", "runs the collectives without errors")
	want := "all_reduce_perf busbw at 2 GiB reads 1e+308 GB/s, above the 900 GB/s the path can carry (twice GPU 0000:00:06.0: 18 links up x 25 GB/s per link and direction, NVLink 4"
	if r.code != 1 || state != results.StateFailed || !strings.Contains(msg, want) || !strings.Contains(msg, "the measurement cannot be right") {
		t.Errorf("exit %d, %s %q; want 1 and %q", r.code, state, msg, want)
	}
	long := regexp.MustCompile(`[0-9]{20,}`)
	if m := long.FindString(r.stdout); m != "" {
		t.Errorf("the tables print %q:\n%s", m, r.stdout)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(html), "Inf") || long.Match(html) {
		t.Errorf("the HTML report holds Inf or a long number")
	}
}

// A results.json that passed but holds 1e308 GB/s (edited, or from a
// build without the check): baseline record refuses to propose it.
func TestBaselineRecordRefusesAnImpossibleValue(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(realResults + "h200x2-nv18-collectives-negative.results.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	run := doc["nodes"].([]any)[0].(map[string]any)["runs"].([]any)[0].(map[string]any)
	points := run["points"].([]any)
	if run["mode"] != "direct" || run["op"] != "all_reduce" {
		t.Fatalf("first run %v %v; update the test", run["op"], run["mode"])
	}
	points[len(points)-1].(map[string]any)["busbw_gbps"] = 1e308
	dir := t.TempDir()
	out, _ := json.Marshal(doc)
	os.WriteFile(filepath.Join(dir, "results.json"), out, 0o644)
	r := gdrcheck(t, "baseline", "record", dir)
	if r.code != 2 || !strings.Contains(r.stderr, "all_reduce_perf busbw at 2 GiB reads 1e+308 GB/s, above the 900 GB/s") || strings.Contains(r.stdout, "1e+308") || strings.Contains(r.stdout, "expected") {
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// 9,968 Gb/s through each 400 Gb/s NDR port: the fabric suite fails.
func TestPerftestAboveItsPortRateFailsTheFabricSuite(t *testing.T) {
	b, err := os.ReadFile("../../fixtures/corpus/perftest/gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt")
	if err != nil {
		t.Fatal(err)
	}
	const row = " 8388608    5000             140.55             140.40               0.002092"
	if !strings.Contains(string(b), row) {
		t.Fatal("recording changed shape; update the test")
	}
	f := filepath.Join(t.TempDir(), "ib_write_bw.txt")
	os.WriteFile(f, []byte(strings.Replace(string(b), row, " 8388608    5000             9968.55            9968.40              0.148", 1)), 0o644)
	pdir, penv := fakebin.Perftest(t, []string{"ib_write_bw"}, map[string]string{"ib_write_bw-host": f, "ib_write_bw-cuda": f, "ib_write_bw-cuda-dmabuf": f})
	for _, e := range penv {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	out := t.TempDir()
	r := gdrcheck(t, "run", "-q", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--perftest-dir", pdir, "--out", out, "--suites", "fabric")
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.stderr)
	}
	state, msg := specMessage(res, "fabric", "reaches with GPU memory the RDMA bandwidth it reaches with host memory")
	want := "ib_write_bw through mlx5_0 with host memory reads 9968.4 Gb/s, above the 400 Gb/s the path can carry (mlx5_0 port 1 rate 400 Gb/s, plus 5 %): the measurement cannot be right"
	if r.code != 1 || state != results.StateFailed || !strings.Contains(msg, want) {
		t.Errorf("exit %d, %s %q; want 1 and %q", r.code, state, msg, want)
	}
}
