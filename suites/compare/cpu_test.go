package compare

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// recordedCPUs is the recorded 2 x H200 VM's CPU count: its GPUs'
// cpu_list is 0-31 with no NUMA node, so every CPU of the host. Those
// runs predate cpu_s and hold only the host's CPU share (cpu_pct).
const recordedCPUs = 32

func hostCPUSeconds(r *results.Run) *float64 {
	s := *r.CPUPct / 100 * recordedCPUs * r.Duration
	return &s
}

func stagingSpec(t *testing.T, cpuRise float64) results.Spec {
	t.Helper()
	before, after := load(t), load(t)
	b := run(&before.Nodes[0], "collectives", "all_reduce", "direct")
	a := run(&after.Nodes[0], "collectives", "all_reduce", "direct")
	b.CPUSeconds = hostCPUSeconds(b)
	a.CPUSeconds = hostCPUSeconds(a)
	*a.CPUSeconds *= cpuRise // the same bandwidth, the same run time
	for _, s := range Compare(before, after, Options{}).Nodes[0].Suites[0].Specs {
		if s.Name == AspectBandwidth {
			return s
		}
	}
	t.Fatal("no bandwidth aspect")
	return results.Spec{}
}

// The staging signal: the recorded direct all_reduce at its recorded
// 341 GB/s, after an upgrade costing the host twelve times the CPU per GB
// (what the recorded SHM fallback costs per byte) fails the bandwidth
// aspect though no bandwidth was lost.
func TestCPUPerGBRisingAtEqualBandwidthIsARegression(t *testing.T) {
	s := stagingSpec(t, 12)
	if s.State != results.StateFailed || !strings.Contains(s.Message, "collectives all_reduce direct: host CPU") || !strings.Contains(s.Message, "bandwidth held") {
		t.Errorf("CPU per GB x12 at equal busbw: %s %q, want a failure naming the staging signal", s.State, s.Message)
	}
}

func TestCPUPerGBWithinToleranceIsNoRegression(t *testing.T) {
	if s := stagingSpec(t, 1.3); s.State != results.StatePassed {
		t.Errorf("CPU per GB +30%% at equal busbw: %s %q, want passed", s.State, s.Message)
	}
}
