package results

// Host CPU per byte: a benchmark that loses the direct path keeps the bus
// busy through host memory, and its CPU cost per byte moved rises long
// before anyone reads a percentage (4.8 % of the host at 340 GB/s and
// 4.95 % at 27 GB/s look alike; per byte they are twelve times apart).

// CPUPerGBMetric names the metric: CPU seconds of the benchmark's process
// tree per GB of bus traffic.
const CPUPerGBMetric = "cpu_s_per_gb"

// MinCPUSeconds is the least process-tree CPU time that counts as a
// measured benchmark. Any real nccl-tests run spends more than this
// starting CUDA; less is a replay or a launcher whose ranks ran elsewhere,
// whose ratio would be noise.
const MinCPUSeconds = 0.05

// CPUPerGB is CPU seconds per GB of bus traffic: cpuS / (busbw × durS),
// the CPU time over the bytes the run's sustained bus bandwidth (GB/s, as
// nccl-tests computes busbw) moves in its wall time. Bus bytes, not the
// buffer size, because they are what crosses a link whatever the
// collective; wall time, because the CPU time covers the whole run too.
// Set-up counts in both, so it compares like runs: the same test with the
// same arguments (a forced fallback with its direct run, a run with its
// namesake before an upgrade). False when either side is not measured.
func CPUPerGB(cpuS, busbw, durS float64) (float64, bool) {
	if cpuS < MinCPUSeconds || busbw <= 0 || durS <= 0 {
		return 0, false
	}
	return cpuS / (busbw * durS), true
}

// CPUPerGB is the run's CPU seconds per GB of bus traffic, from its
// process tree's CPU time (CPUSeconds); false where that was not measured
// or the run moved nothing over a bus (one rank).
func (r Run) CPUPerGB() (float64, bool) {
	if r.CPUSeconds == nil || r.OneRank() || r.Error != "" || r.Unit != "" {
		return 0, false
	}
	return CPUPerGB(*r.CPUSeconds, r.BusBW, r.Duration)
}
