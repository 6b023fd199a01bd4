package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// analyzeBenchSize is the input issue 34 measured: a real log repeated to
// 268 MB.
const analyzeBenchSize = 268_000_000

// analyzeBenches are the analyze commands, each on a real recording
// repeated to analyzeBenchSize, beside grep -cE of the lines it reads
// most: the floor a user would pipe the same file into.
var analyzeBenches = []struct {
	cmd, file, grep string
	code            int // the exit code on the repeated file
}{
	// A 2 x H200 NCCL_DEBUG=INFO run: 599 NCCL lines of 646.
	{"nccl-log", "../../fixtures/nccl-tests/all_reduce_perf-h200x2-nv18-direct-p2p.txt", `via (NET|P2P|SHM)`, 0},
	// The same output as nccl-tests reads it: its table rows and the
	// NCCL lines between them (exit 2: over 4,096 rows, not all kept).
	{"nccl-tests", "../../fixtures/nccl-tests/all_reduce_perf-h200x2-nv18-direct-p2p.txt", `float|Avg bus bandwidth`, 2},
	// ib_write_bw with --use_cuda_dmabuf on an H200 (exit 2, as above).
	{"perftest", "../../fixtures/corpus/perftest/gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt", `^ *[0-9]+ +[0-9]+ `, 2},
	// UCX protocol tables of a cuda tag_bw run (exit 1: staged).
	{"ucx-log", "../../fixtures/corpus/ucx/ucx9908-perftest-tag_bw-cuda-rndv-cuda_copy-fenced-write-gdr-disabled.txt", `rndv|zcopy|copy`, 1},
}

// BenchmarkAnalyzeBesideGrep times each analyze command and grep on the
// same file in the same iteration, so that the ratio holds on a machine
// others share, and reports the peak resident set of the analyzer: its
// ru_maxrss, which on Linux also counts the resident set of the test
// process that spawned it (Go starts a child with vfork, and exec keeps
// the larger), so it is an upper bound. Issue 34 asks for nccl-log at
// 0.5 x grep or more, in 64 MiB:
//
//	go test -run '^$' -bench AnalyzeBesideGrep -benchtime 3x ./cmd/gdrcheck/
func BenchmarkAnalyzeBesideGrep(b *testing.B) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("no grep to compare with")
	}
	for _, c := range analyzeBenches {
		b.Run(c.cmd, func(b *testing.B) {
			in, size := repeatedFile(b, c.file, analyzeBenchSize)
			warm(b, in) // into the page cache, for both
			var tool, floor timed
			for b.Loop() {
				g := benchRun(b, exec.Command(grep, "-cE", c.grep, in))
				r := benchRun(b, exec.Command(bin, "analyze", c.cmd, in))
				if r.code != c.code {
					b.Fatalf("analyze %s exited %d, want %d:\n%s", c.cmd, r.code, c.code, r.stderr)
				}
				floor.wall, floor.cpu = floor.wall+g.wall, floor.cpu+g.cpu
				tool.wall, tool.cpu, tool.maxRSS = tool.wall+r.wall, tool.cpu+r.cpu, max(tool.maxRSS, r.maxRSS)
			}
			mbps := func(d time.Duration) float64 { return float64(b.N) * float64(size) / 1e6 / d.Seconds() }
			b.ReportMetric(mbps(tool.wall), "MB/s")
			b.ReportMetric(mbps(floor.wall), "grep-MB/s")
			b.ReportMetric(floor.wall.Seconds()/tool.wall.Seconds(), "x-grep")
			// CPU time (user and system) varies less than wall time
			// when others share the machine.
			b.ReportMetric(floor.cpu.Seconds()/tool.cpu.Seconds(), "cpu-x-grep")
			b.ReportMetric(float64(tool.maxRSS)/(1<<20), "peak-rss-MiB")
		})
	}
}

// repeatedFile writes src over and over, whole, into a file of size bytes
// or a few MB more in b's temporary directory; it returns its path and size.
func repeatedFile(b *testing.B, src string, size int) (string, int) {
	b.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	path := filepath.Join(b.TempDir(), filepath.Base(src))
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	chunk := bytes.Repeat(data, max(1, (4<<20)/len(data)))
	n := 0
	for ; n < size; n += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path, n
}

// warm reads path once, so that the runs timed all read the page cache.
func warm(b *testing.B, path string) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		b.Fatal(err)
	}
}

// timed is a finished process: its exit code, standard error, wall and
// CPU time (user and system) and peak resident set in bytes.
type timed struct {
	code      int
	stderr    string
	wall, cpu time.Duration
	maxRSS    int64
}

func benchRun(b *testing.B, cmd *exec.Cmd) timed {
	b.Helper()
	// Standard output to a pipe, never /dev/null: GNU grep stops at its
	// first match when it writes there.
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t := timed{stderr: stderr.String(), wall: time.Since(start)}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.code = ee.ExitCode()
	} else if err != nil {
		b.Fatalf("%v: %v", cmd.Args, err)
	}
	t.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		t.maxRSS = ru.Maxrss << 10 // KiB on Linux
	}
	return t
}
