package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Hostile inputs (issue 13): every reader of a file a user hands gdrcheck
// must stay within 64 MiB of peak RSS on a 200 MB input of the worst shapes
// (one line, many short lines, one JSON string, deep nesting, a YAML file),
// refusing it or reading it in part with a reason. Each case writes its
// input to a temporary file and runs the gdrcheck binary on it:
//
//	go test -run '^$' -bench HostileInput -benchtime 1x ./cmd/gdrcheck/
//
// GDRCHECK_HOSTILE_MB sets another size, and GDRCHECK_HOSTILE_BIN another
// gdrcheck binary (an older build, for a before/after table). Reported:
// the process's peak RSS and its exit code (0 means the input was taken as
// good). Linux folds the RSS high-water mark of the process that starts a
// command into the command's (Go starts it with CLONE_VM), so this
// benchmark resets its own mark first (clear_refs) and reports its own
// RSS then, bench-MiB-rss: the peak RSS is the command's own wherever it
// is above that.

// hostileSize is the size of each hostile input in bytes.
func hostileSize(b *testing.B) int64 {
	mb := int64(200)
	if s := os.Getenv("GDRCHECK_HOSTILE_MB"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("GDRCHECK_HOSTILE_MB=%q: want a positive number of MB", s)
		}
		mb = n
	}
	return mb * 1000 * 1000
}

// sink writes a generated input and counts its bytes.
type sink struct {
	w *bufio.Writer
	n int64
}

func (s *sink) put(x string) { s.w.WriteString(x); s.n += int64(len(x)) }

// fill writes n bytes of 'a'.
func (s *sink) fill(n int64) {
	chunk := strings.Repeat("a", 64<<10)
	for n > 0 {
		k := min(n, int64(len(chunk)))
		s.put(chunk[:k])
		n -= k
	}
}

// linesUntil writes line(i) for i = 0, 1, ... until size bytes are written.
func (s *sink) linesUntil(size int64, line func(i int) string) {
	for i := 0; s.n < size; i++ {
		s.put(line(i))
	}
}

// nested writes about size bytes of open brackets and their closes.
func (s *sink) nested(size int64) {
	for _, c := range []string{"[", "]"} {
		chunk := strings.Repeat(c, 64<<10)
		for n := size / 2; n > 0; n -= int64(len(chunk)) {
			s.put(chunk[:min(n, int64(len(chunk)))])
		}
	}
}

// hostileCase is one input shape fed to one reader.
type hostileCase struct {
	name  string
	file  string // the input's path under the case's directory
	root  bool   // file lies in a copy of a fixture node; args get the root
	write func(s *sink, size int64)
	args  func(path string) []string
}

// runArgs runs suite on the node root a case wrote its input into.
func runArgs(suite string) func(string) []string {
	return func(root string) []string {
		return []string{"run", "-q", "--host-root", root, "--suites", suite, "--out", filepath.Join(root, "out")}
	}
}

func analyzeArgs(tool string) func(string) []string {
	return func(p string) []string { return []string{"analyze", tool, p} }
}

var resultsHead = `{"schema": "gdrcheck.results/v1", "nodes": [`

var hostileCases = []hostileCase{
	{"nccl-log/one-line", "in.log", false, func(s *sink, n int64) {
		s.put("h:1:1 [0] NCCL INFO ")
		s.fill(n)
		s.put("\n")
	}, analyzeArgs("nccl-log")},
	{"nccl-log/short-lines", "in.log", false, func(s *sink, n int64) {
		s.linesUntil(n, func(i int) string {
			switch i % 5 {
			case 0:
				return fmt.Sprintf("h:1:1 [0] NCCL WARN distinct warning %d\n", i)
			case 1:
				return fmt.Sprintf("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via T%d/x\n", i)
			case 2:
				return fmt.Sprintf("h:1:1 [0] NCCL INFO NCCL_X%d set by environment to %d\n", i, i)
			case 3:
				return fmt.Sprintf("h%d:1:1 [0] NCCL INFO comm 0x%x rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n", i, i)
			}
			return fmt.Sprintf("h:1:1 [0] NCCL INFO NET/IB : Using [%d]mlx5_%d:1/IB ; OOB eth0:10.0.0.1<0>\n", i, i)
		})
	}, analyzeArgs("nccl-log")},
	{"nccl-tests/one-line", "in.txt", false, func(s *sink, n int64) {
		s.put("#  size count ")
		s.fill(n)
		s.put("\n")
	}, analyzeArgs("nccl-tests")},
	{"nccl-tests/short-lines", "in.txt", false, func(s *sink, n int64) {
		s.put("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
		s.linesUntil(n, func(i int) string {
			switch i % 4 {
			case 0:
				return fmt.Sprintf("#  Rank %d Group 0 Pid %d on host%d device 0 [0x01] NVIDIA H200\n", i, i, i)
			case 1:
				return fmt.Sprintf("host%d: Test NCCL failure common.cu:%d 'unhandled error %d'\n", i, i, i)
			case 2:
				return fmt.Sprintf("%12d x%d\n", i, i)
			}
			return fmt.Sprintf("%12d %12d float%d sum -1 1.0 2.0 3.0 0 1.0 2.0 3.0 0\n", i, i, i)
		})
	}, analyzeArgs("nccl-tests")},
	{"nccl-tests-json/string", "in.json", false, func(s *sink, n int64) {
		s.put(`{"args": ["`)
		s.fill(n)
		s.put(`"]}`)
	}, analyzeArgs("nccl-tests")},
	{"nccl-tests-json/nested", "in.json", false, func(s *sink, n int64) {
		s.put(`{"nccl_version": 22803, "other": `)
		s.nested(n)
		s.put(`}`)
	}, analyzeArgs("nccl-tests")},
	{"nccl-tests-json/short-lines", "in.json", false, func(s *sink, n int64) {
		s.put("{\"nccl_version\": 22803, \"results\": [\n")
		s.linesUntil(n, func(i int) string {
			return fmt.Sprintf(`{"size": %d, "count": 2, "type": "float%d", "redop": "sum", "root": "-1", "in_place": {"time": 1, "alg_bw": 1, "bus_bw": 1, "nwrong": 0}},`+"\n", i, i)
		})
		s.put(`{"size": 8}]}`)
	}, analyzeArgs("nccl-tests")},
	{"perftest/one-line", "in.txt", false, func(s *sink, n int64) {
		s.fill(n)
		s.put("\n")
	}, analyzeArgs("perftest")},
	{"perftest/short-lines", "in.txt", false, func(s *sink, n int64) {
		s.put(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n")
		s.linesUntil(n, func(i int) string {
			if i%2 == 0 {
				return fmt.Sprintf(" Failed status 12: wr_id %d syndrom 0x81 QP %d\n", i, i)
			}
			return fmt.Sprintf(" %d 5000 100.%d 100.0 1.0\n", i, i)
		})
	}, analyzeArgs("perftest")},
	{"perftest-json/string", "in.json", false, func(s *sink, n int64) {
		s.put(`{"test_info": {"test": "`)
		s.fill(n)
		s.put(`"}}`)
	}, analyzeArgs("perftest")},
	{"perftest-json/nested", "in.json", false, func(s *sink, n int64) {
		s.put(`{"test_info": `)
		s.nested(n)
		s.put(`}`)
	}, analyzeArgs("perftest")},
	{"perftest-json/short-lines", "in.json", false, func(s *sink, n int64) {
		s.linesUntil(n, func(i int) string {
			return fmt.Sprintf("{\"test_info\": {\"test\": \"RDMA_Write_BW_Test\"}, \"results\": {\"MsgSize\": %d, \"BW_average\": 1.%d}}\n", i, i)
		})
	}, analyzeArgs("perftest")},
	{"report/string", "results.json", false, func(s *sink, n int64) {
		s.put(resultsHead + `{"name": "n", "status": "evaluated", "suites": [], "reason": "`)
		s.fill(n)
		s.put(`"}]}`)
	}, func(p string) []string { return []string{"report", p} }},
	{"report/nested", "results.json", false, func(s *sink, n int64) {
		s.put(resultsHead + `{"name": "n", "status": "evaluated", "suites": [], "evidence": `)
		s.nested(n)
		s.put(`}]}`)
	}, func(p string) []string { return []string{"report", p} }},
	{"report/short-lines", "results.json", false, func(s *sink, n int64) {
		s.put(resultsHead + "\n")
		s.linesUntil(n, func(i int) string {
			return fmt.Sprintf(`{"name": "n%d", "status": "evaluated", "suites": [{"name": "s%d", "specs": []}]},`+"\n", i, i)
		})
		s.put(`{"name": "last", "status": "evaluated", "suites": []}]}`)
	}, func(p string) []string { return []string{"report", p} }},
	{"baseline/yaml-short-lines", "baselines/big.yaml", false, func(s *sink, n int64) {
		s.put("profile:\n  name: big\nmetrics:\n")
		s.linesUntil(n, func(i int) string {
			return fmt.Sprintf("  - name: m%d\n    unit: GB/s\n    expected: %d\n", i, i)
		})
	}, func(p string) []string { return []string{"baseline", "show", "--baseline-dir", filepath.Dir(p)} }},
	{"baseline/yaml-one-line", "baselines/big.yaml", false, func(s *sink, n int64) {
		s.put("profile: ")
		s.fill(n)
		s.put("\n")
	}, func(p string) []string { return []string{"baseline", "show", "--baseline-dir", filepath.Dir(p)} }},
	{"inventory-expect/yaml-short-lines", "expect.yaml", false, func(s *sink, n int64) {
		s.put("gpus:\n")
		s.linesUntil(n, func(i int) string {
			return fmt.Sprintf("  - bus_id: \"0000:%x:00.0\"\n    name: gpu%d\n", i, i)
		})
	}, func(p string) []string {
		return []string{"inventory", "--host-root", nodes + "h200x2-nv18-vm.ttar", "--expect", p}
	}},
	{"nvml.json/string", "gdrcheck/nvml.json", true, func(s *sink, n int64) {
		s.put(`{"library": "`)
		s.fill(n)
		s.put(`"}`)
	}, runArgs("kernel")},
	{"nvml.json/nested", "gdrcheck/nvml.json", true, func(s *sink, n int64) {
		s.put(`{"library": `)
		s.nested(n)
		s.put(`}`)
	}, runArgs("kernel")},
	{"gpudirect.json/string", "gdrcheck/gpudirect.json", true, func(s *sink, n int64) {
		s.put(`{"cuda": {"error": "`)
		s.fill(n)
		s.put(`"}}`)
	}, runArgs("kernel")},
	{"container.json/string", "gdrcheck/container.json", true, func(s *sink, n int64) {
		s.put(`{"runtime": "`)
		s.fill(n)
		s.put(`"}`)
	}, runArgs("container")},
	{"kmsg.txt/short-lines", "gdrcheck/kmsg.txt", true, func(s *sink, n int64) {
		s.linesUntil(n, func(i int) string {
			return fmt.Sprintf("6,%d,%d,-;nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2) %d\n", i, i, i)
		})
	}, runArgs("kernel")},
}

func BenchmarkHostileInput(b *testing.B) {
	size := hostileSize(b)
	exe := bin
	if e := os.Getenv("GDRCHECK_HOSTILE_BIN"); e != "" {
		exe = e
	}
	for _, hc := range hostileCases {
		b.Run(hc.name, func(b *testing.B) {
			arg := hc.setup(b, size)
			var h hostileRun
			for b.Loop() {
				h = hc.run(b, exe, arg)
				b.Logf("exit %d: %.300s", h.code, h.stderr)
			}
			b.ReportMetric(float64(h.peakRSS)/(1<<20), "MiB-peak-rss")
			b.ReportMetric(float64(h.floor)/(1<<20), "bench-MiB-rss")
			b.ReportMetric(float64(h.code), "exit")
		})
	}
}

// TestHostileInputsAreNeverTakenAsWholeAndStayUnder64MiB runs every
// hostile shape at 10 MB, past every cap: none may pass (exit 0), and
// none may take more than 64 MiB.
//
// Not parallel: a child's ru_maxrss starts at this process's RSS (Go
// starts it with vfork, sharing our memory until exec), so it runs with
// the serial tests, before the parallel ones grow this process.
func TestHostileInputsAreNeverTakenAsWholeAndStayUnder64MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 10 MB per case")
	}
	for _, hc := range hostileCases {
		t.Run(hc.name, func(t *testing.T) {
			h := hc.run(t, bin, hc.setup(t, 10e6))
			if h.code == 0 || h.peakRSS > 64<<20 {
				t.Errorf("exit %d, peak RSS %.1f MiB; want a refusal, a failure or a partial result within 64 MiB\n%.500s",
					h.code, float64(h.peakRSS)/(1<<20), h.stderr)
			}
		})
	}
}

// setup writes the case's input of about size bytes and returns the
// argument naming it: the file, or the copy of a fixture node around it.
func (hc hostileCase) setup(tb testing.TB, size int64) string {
	tb.Helper()
	dir := tb.TempDir()
	arg := filepath.Join(dir, hc.file)
	if hc.root {
		if err := extract(nodes+"h200x2-nv18-vm.ttar", dir); err != nil {
			tb.Fatal(err)
		}
		arg = dir
	}
	writeHostile(tb, filepath.Join(dir, hc.file), size, hc.write)
	return arg
}

// hostileRun is what one run of gdrcheck on a hostile input did.
type hostileRun struct {
	code           int
	stderr         string
	peakRSS, floor int64 // bytes: the command's peak, this process's RSS when it started it
}

func (hc hostileCase) run(tb testing.TB, exe, arg string) hostileRun {
	tb.Helper()
	h := hostileRun{floor: resetRSSMark(tb)}
	cmd := exec.Command(exe, hc.args(arg)...)
	cmd.Env = append(os.Environ(), "SLURMD_NODENAME=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		h.code = ee.ExitCode()
	} else if err != nil {
		tb.Fatalf("gdrcheck %v: %v", hc.args(arg), err)
	}
	h.stderr = strings.TrimSpace(stderr.String())
	if strings.Contains(h.stderr, "panic:") {
		tb.Fatalf("gdrcheck panicked:\n%.2000s", h.stderr)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		h.peakRSS = ru.Maxrss << 10 // KiB on Linux
	}
	return h
}

// writeHostile writes a case's input of about size bytes to path.
func writeHostile(tb testing.TB, path string, size int64, write func(*sink, int64)) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	s := &sink{w: bufio.NewWriterSize(f, 1<<20)}
	write(s, size)
	if err := s.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// resetRSSMark returns this process's memory to the system, resets its
// RSS high-water mark to its RSS, and returns that RSS in bytes.
func resetRSSMark(tb testing.TB) int64 {
	tb.Helper()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Fatalf("resetting the RSS high-water mark: %v", err)
	}
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(string(st)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}
