package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

const recorded = "../../fixtures/nccl-tests"

// ncclRun runs the NCCL suites on the recorded H200 node with the fake
// nccl-tests replaying recs.
func ncclRun(t *testing.T, recs map[string]string, args ...string) (result, *results.Results) {
	t.Helper()
	dir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf", "all_gather_perf", "sendrecv_perf"}, recs)
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	out := t.TempDir()
	r := gdrcheck(t, append([]string{"run", "-q", "--host-root", nodes + "h200x2-nv18-vm.ttar", "--nccl-tests-dir", dir, "--out", out, "--suites", "collectives,negative"}, args...)...)
	res, err := results.Read(out + "/results.json")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.stdout, r.stderr)
	}
	for _, run := range res.Nodes[0].Runs {
		if b, err := os.ReadFile(out + "/" + run.Log); err != nil || !strings.Contains(string(b), "NCCL INFO") {
			t.Errorf("%s %s: raw log %q unreadable or empty: %v", run.Op, run.Mode, run.Log, err)
		}
	}
	validateJUnit(t, out+"/junit.xml")
	return r, res
}

func TestNCCLSuitesPassOnTheRecordedH200RunsAndDetectEveryFallback(t *testing.T) {
	r, res := ncclRun(t, fakebin.H200Recordings(recorded))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	for _, want := range []string{
		"| vm   | direct           | P2P/direct | 341.61     | 2 GiB   | 1.00  |",
		"| vm   | p2p-disabled     | SHM        | 27.79      | 1 GiB   | 0.084 |",
		"| vm   | p2p-shm-disabled | NET/Socket | 2.77       | 256 MiB | 0.009 |",
		"nccl.all_reduce.busbw | all_reduce_perf at 2 GiB | 341.61 GB/s | 341.61 GB/s",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tables lack %q:\n%s", want, r.stdout)
		}
	}
	n := res.Nodes[0]
	if n.Profile != "h200x2-nv18" || n.Fact("profile") != "h200x2-nv18" {
		t.Errorf("profile %q", n.Profile)
	}
	if len(n.Runs) != 5 {
		t.Fatalf("%d runs in results.json, want 5", len(n.Runs))
	}
	shm := n.Runs[3]
	if shm.Mode != "p2p-disabled" || shm.Transport != "SHM" || shm.RatioToDirect == nil || *shm.RatioToDirect > 0.09 || len(shm.Points) == 0 {
		t.Errorf("SHM run %+v", shm)
	}
	if d := n.Runs[0]; d.Baseline == nil || d.Baseline.Expected != 341.61 || d.PathVerdict != "direct" {
		t.Errorf("direct run %+v", d)
	}
	// The raw output is kept beside the reports, as the evidence it is.
	if n.Runs[0].Log != "logs/all_reduce_perf-direct.log" {
		t.Errorf("log %q", n.Runs[0].Log)
	}
}

// The reason the negative suite exists: a fallback that gdrcheck cannot
// see must fail, here a build that ignores NCCL_P2P_DISABLE.
func TestAFallbackThatDoesNotHappenIsReportedAsUndetected(t *testing.T) {
	recs := fakebin.H200Recordings(recorded)
	recs["all_reduce-p2p-disabled"] = recs["all_reduce-direct"]
	r, res := ncclRun(t, recs)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	var msg string
	for _, s := range res.Nodes[0].Suites {
		for _, sp := range s.Specs {
			if sp.State == results.StateFailed {
				if msg != "" {
					t.Errorf("a second spec failed: %s: %s", sp.Name, sp.Message)
				}
				msg = sp.Message
			}
		}
	}
	want := "forced fallback NCCL_P2P_DISABLE=1 not detected: transport stayed P2P/direct; busbw kept 1.00 of the direct run (limit 0.50)"
	if msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if !strings.Contains(r.stdout, "NOT DETECTED") {
		t.Errorf("fallback table does not flag it:\n%s", r.stdout)
	}
}

func TestBusBandwidthBelowTheBaselineFails(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../fixtures/baselines/h200x2-nv18.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// 20% above what the node measured.
	y := strings.Replace(string(b), "2147483648: 341.61", "2147483648: 409.93", 1)
	if y == string(b) {
		t.Fatal("baseline file changed shape; update the test")
	}
	os.WriteFile(dir+"/h200x2-nv18.yaml", []byte(y), 0o644)
	r, _ := ncclRun(t, fakebin.H200Recordings(recorded), "--baseline-dir", dir)
	if r.code != 1 || !strings.Contains(r.stdout, "all_reduce_perf busbw 341.6 GB/s at 2 GiB; baseline h200x2-nv18 expects") {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}
}

func TestMissingNCCLTestsFailWhenAskedForAndSkipOtherwise(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	r := gdrcheck(t, "run", "-q", "--host-root", nodes+"h200x2-nv18-vm.ttar", "--out", out, "--suites", "collectives", "--nccl-tests-dir", t.TempDir())
	if r.code != 1 || !strings.Contains(r.stdout, "nccl-tests binary not found: all_reduce_perf in") {
		t.Errorf("asked for: exit %d\n%s", r.code, r.stdout)
	}
	// Not asked for by name, they are skipped, but the suites selected by
	// default could not run: exit 2 naming what to install (issue 22).
	r = gdrcheck(t, "run", "-q", "--host-root", nodes+"h200x2-nv18-vm.ttar", "--out", out)
	if r.code != 2 || !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "exit 2: collectives, negative could not run here: nccl-tests binary not found: all_reduce_perf on PATH (install nccl-tests") {
		t.Errorf("default run without nccl-tests on PATH: exit %d\n%s", r.code, r.stdout)
	}
}

func TestAnalyzeGivesTheDocumentedJSON(t *testing.T) {
	t.Parallel()
	r := gdrcheck(t, "analyze", "nccl-log", "--format", "json", "../../fixtures/corpus/nccl-debug/a100pcie-2node-cx5-cx6-gdr-enabled-dmabuf-netgdrlevel-sys.txt")
	var log map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &log); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	for _, k := range []string{"nccl_version", "network", "transports", "gdr_hcas", "verdict", "reasons", "findings", "hints", "partial", "partial_reason"} {
		if _, ok := log[k]; !ok {
			t.Errorf("nccl-log JSON lacks %q", k)
		}
	}
	// Direct as far as it goes, but an excerpt: nothing a gate can pass.
	if log["nccl_version"] != "2.16.5" || log["network"] != "IB" || log["verdict"] != "direct" || log["partial"] != true || r.code != 2 {
		t.Errorf("exit %d, %v %v %v %v", r.code, log["nccl_version"], log["network"], log["verdict"], log["partial"])
	}
	if r := gdrcheck(t, "analyze", "nccl-log", recorded+"/all_reduce_perf-h200x2-nv18-direct-p2p.txt"); r.code != 0 {
		t.Errorf("a whole direct run: exit %d\n%s", r.code, r.stdout)
	}

	r = gdrcheck(t, "analyze", "nccl-tests", "--format", "json", recorded+"/all_reduce_perf-h200x2-nv18-direct-p2p.json")
	var tests struct {
		Rows []map[string]any `json:"rows"`
		Avg  *float64         `json:"avg_busbw"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tests); err != nil {
		t.Fatal(err)
	}
	last := tests.Rows[len(tests.Rows)-1]
	for _, k := range []string{"size", "busbw_oop", "busbw_ip", "wrong"} {
		if _, ok := last[k]; !ok {
			t.Errorf("row lacks %q", k)
		}
	}
	if last["size"].(float64) != 2147483648 || last["busbw_ip"].(float64) < 341.60 || last["busbw_ip"].(float64) > 341.61 || tests.Avg == nil {
		t.Errorf("last row %v avg %v", last, tests.Avg)
	}

	r = gdrcheck(t, "analyze", "nccl-tests", "../../fixtures/corpus/nccl-tests/all_reduce_perf-nccltests369-gh200-2node-slingshot-cxi-wrong-96-FAILED.txt")
	if r.code != 1 || !strings.Contains(r.stdout, "failure on line 43: gpu-1-1 pid 662195: Test failure common.cu:1189") {
		t.Errorf("failed run: exit %d\n%s", r.code, r.stdout)
	}
	if r := gdrcheck(t, "analyze", "nccl-log", "/nonexistent"); r.code != 2 {
		t.Errorf("missing file: exit %d", r.code)
	}
}

// An nccl-tests output that exits 0 but whose table stops short fails the
// run (exit 1), naming the last size read.
func TestATruncatedNCCLTestsOutputFailsTheRun(t *testing.T) {
	t.Parallel()
	recs := fakebin.H200Recordings(recorded)
	b, err := os.ReadFile(recs["all_reduce-direct"])
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte("\n     2097152 "))
	cut := filepath.Join(t.TempDir(), "cut.txt")
	if at < 0 || os.WriteFile(cut, b[:at+1], 0o644) != nil {
		t.Fatal("cannot cut the recording")
	}
	recs["all_reduce-direct"] = cut
	fake, env := fakebin.NCCLTests(t, []string{"all_reduce_perf"}, recs)
	out := t.TempDir()
	cmd := exec.Command(bin, "run", "-q", "--host-root", nodes+"h200x2-nv18-vm.ttar", "--suites", "collectives", "--nccl-tests-dir", fake, "--out", out)
	cmd.Env = append(os.Environ(), env...)
	r := runCmd(t, cmd)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	for _, s := range res.Nodes[0].Suites {
		for _, sp := range s.Specs {
			if sp.Name == "runs the collectives without errors" {
				msg = sp.Message
			}
		}
	}
	if r.code != 1 || !strings.Contains(msg, "all_reduce_perf output is cut short or damaged; partial: ") || !strings.Contains(msg, "1 MiB") {
		t.Errorf("exit %d, %q; want 1 and the cut named with its last size", r.code, msg)
	}
}

// SIGTERM while a benchmark runs: the run stops, still writes a complete
// report (every spec listed, the rest skipped) that says it was
// interrupted, and exits 2.
func TestSIGTERMGivesACompleteInterruptedReport(t *testing.T) {
	t.Parallel()
	fake, env := fakebin.NCCLTests(t, []string{"all_reduce_perf"}, fakebin.H200Recordings(recorded))
	out := t.TempDir()
	cmd := exec.Command(bin, "run", "-q", "--host-root", nodes+"h200x2-nv18-vm.ttar", "--nccl-tests-dir", fake, "--out", out)
	cmd.Env = append(append(os.Environ(), env...), "GDRCHECK_FAKE_NCCL_SLEEP=30s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2", err)
	}
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := res.Nodes[0]
	if n.Status != results.NodeInterrupted || !strings.HasPrefix(n.Reason, "interrupted by SIGTERM") {
		t.Errorf("node %s: %q", n.Status, n.Reason)
	}
	if c := n.Counts(); c.Tests < 20 || c.Passed != 0 {
		t.Errorf("the report should list every spec, none run: %+v", c)
	}
	validateJUnit(t, filepath.Join(out, "junit.xml"))
}

// A profile that matches the node but states no bus bandwidth judges
// nothing the collectives measured: the spec fails saying so, where it
// passed with the slowest run.
func TestAMatchingProfileThatComparesNoBusBandwidthFails(t *testing.T) {
	b, err := os.ReadFile("../../fixtures/baselines/h200x2-nv18.yaml")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(b), "metrics:\n")
	if !ok {
		t.Fatal("baseline file changed shape; update the test")
	}
	dir := t.TempDir()
	os.WriteFile(dir+"/h200x2-nv18.yaml", []byte(head+"metrics:\n  - name: nccl.fallback.p2p-disabled.ratio\n    direction: lower\n    expected: 0.5\nbar1: {min_total_mib: 262144}\n"), 0o644)
	r, _ := ncclRun(t, fakebin.H200Recordings(recorded), "--baseline-dir", dir)
	want := "baseline h200x2-nv18 (" + dir + "/h200x2-nv18.yaml) states none of nccl.all_reduce.busbw, nccl.all_gather.busbw, nccl.sendrecv.busbw, so nothing measured here was compared"
	// The failures list wraps long messages at spaces.
	if r.code != 1 || !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), want) {
		t.Errorf("exit %d, want 1 saying %q\n%s", r.code, want, r.stdout)
	}
}
