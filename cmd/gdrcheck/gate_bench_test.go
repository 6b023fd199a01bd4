package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
	"github.com/gdrcheck/gdrcheck/results"
)

// BenchmarkQuickGate is `gdrcheck run --suites topology,kernel,bar1` on the
// 8-GPU fixture node (unpacked once), as a health check runs it: the whole
// process with its reports. The evidence and probe steps results.json
// records are reported beside it (the recorded probe costs nothing; on a
// live node cuInit and the contexts dominate: examples/gate-vs-floor.sh).
func BenchmarkQuickGate(b *testing.B) {
	root := filepath.Join(b.TempDir(), "node")
	if err := os.Mkdir(root, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := ttar.ExtractFile(nodes+"h100x8-nvswitch-cx7-pix.ttar", root); err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	var evidence, suites float64
	for b.Loop() {
		cmd := exec.Command(bin, "run", "-q", "--host-root", root, "--suites", "topology,kernel,bar1", "--out", out)
		cmd.Env = append(os.Environ(), "SLURMD_NODENAME=")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, msg)
		}
		res, err := results.Read(filepath.Join(out, "results.json"))
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range res.Nodes[0].Steps {
			switch s.Name {
			case "read the node's evidence (its evidence: steps)":
				evidence += s.Duration
			case "suites":
				suites += s.Duration
			}
		}
	}
	b.ReportMetric(evidence/float64(b.N)*1e3, "evidence-ms/op")
	b.ReportMetric(suites/float64(b.N)*1e3, "suites-ms/op")
}
