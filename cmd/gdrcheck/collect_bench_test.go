package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

// jobOf writes a job directory of n nodes, each a copy of the 8 x H100 +
// 8 CX-7 fixture node's results.json (about 86 KB) under its own name.
// edit, where given, changes node i's copy (1-based) first, or says it
// never reported (false: no results.json).
func jobOf(tb testing.TB, n int, edit func(i int, node *results.Node) bool) string {
	tb.Helper()
	one := tb.TempDir()
	if r := gdrcheck(tb, "run", "-q", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--out", one); r.code != 0 {
		tb.Fatalf("fixture run: exit %d\n%s", r.code, r.stderr)
	}
	src, err := results.Read(filepath.Join(one, "results.json"))
	if err != nil {
		tb.Fatal(err)
	}
	fixture := src.Nodes[0]
	dir := tb.TempDir()
	var names []string
	for i := 1; i <= n; i++ {
		name := nodeName(i)
		names = append(names, name)
		node := fixture
		node.Name = name
		if edit != nil && !edit(i, &node) {
			continue
		}
		src.Nodes = []results.Node{node}
		if err := os.MkdirAll(filepath.Join(dir, "nodes", name), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := src.Write(filepath.Join(dir, "nodes", name, "results.json")); err != nil {
			tb.Fatal(err)
		}
	}
	job := fmt.Sprintf(`{"id": "4711", "nodes": [%s], "started": %q, "config": {}, "version": "bench"}`, quoteAll(names), time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(dir, "job.json"), []byte(job), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func quoteAll(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf("%q", s)
	}
	return out
}

// gdrcheck collect on a job of 1024 nodes, as a process: wall time per
// merge, and the process's peak RSS (the goal is 5 s and 256 MiB on a
// 2-core machine).
func BenchmarkCollect1024Nodes(b *testing.B) {
	dir := jobOf(b, 1024, nil)
	var peak int64
	for b.Loop() {
		cmd := exec.Command(bin, "collect", dir)
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 2 {
				b.Fatalf("collect: %v", err)
			}
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss) // KiB on Linux
		}
	}
	b.ReportMetric(float64(peak)/1024, "MiB-peak-rss")
	if fi, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "MiB-results.json")
	}
}
