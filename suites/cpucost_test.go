package suites

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// The recorded 2 x H200 VM's CPU count (its GPUs' cpu_list 0-31, no NUMA
// node): those runs hold only the host's CPU share, cpu_pct.
const recordedCPUs = 32

// recordedCPUPerGB reads the real 2 x H200 negative run's all_reduce runs
// and their CPU seconds per GB of bus traffic, by mode.
func recordedCPUPerGB(t *testing.T) map[string]float64 {
	t.Helper()
	const path = "../fixtures/results/h200x2-nv18-collectives-negative.results.json"
	r, err := results.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, run := range r.Nodes[0].Runs {
		if run.Op != "all_reduce" || run.CPUPct == nil {
			continue
		}
		s := *run.CPUPct / 100 * recordedCPUs * run.Duration
		run.CPUSeconds = &s
		c, ok := run.CPUPerGB()
		if !ok {
			t.Fatalf("%s: %s run has no CPU per GB", path, run.Mode)
		}
		out[run.Mode] = c
	}
	return out
}

// Direct P2P at 341 GB/s, SHM at 27.6 and sockets at 3.2: each fallback
// costs the host more per byte, SHM about twelve times direct though its
// CPU share was lower.
func TestRecordedFallbacksCostMoreCPUPerGBThanDirect(t *testing.T) {
	c := recordedCPUPerGB(t)
	d, shm, sock := c["direct"], c["p2p-disabled"], c["p2p-shm-disabled"]
	if d <= 0 || shm/d < 10 || sock <= shm {
		t.Fatalf("CPU s/GB direct %.4g, SHM %.4g, socket %.4g: want SHM >= 10x direct and socket above SHM", d, shm, sock)
	}
	for mode, f := range map[string]float64{"p2p-disabled": shm, "p2p-shm-disabled": sock} {
		m, finding, ok := CPUCost(mode, d, f, true, true)
		if !ok || finding != "" || m.Verdict != "pass" || m.Name != results.CPUPerGBMetric || *m.Baseline != d {
			t.Errorf("%s: %+v %q, want a passing %s metric against direct", mode, m, finding, results.CPUPerGBMetric)
		}
	}
}

func TestAFallbackCostingNoMoreCPUPerGBIsAFinding(t *testing.T) {
	c := recordedCPUPerGB(t)
	m, finding, ok := CPUCost("p2p-disabled", c["p2p-disabled"], c["direct"], true, true)
	if !ok || finding == "" || m.Verdict != "fail" {
		t.Errorf("a fallback at direct's CPU per GB: %+v %q, want a failing metric and a finding", m, finding)
	}
	if _, _, ok := CPUCost("p2p-disabled", c["direct"], 0, true, false); ok {
		t.Error("an unmeasured fallback judged, want nothing")
	}
}
