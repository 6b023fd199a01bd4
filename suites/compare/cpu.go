package compare

import "github.com/gdrcheck/gdrcheck/results"

// DefaultCPUTolerance is the rise in CPU seconds per GB, as a fraction of
// the run before, not called a regression. CPU time varies more than
// bandwidth between two runs; the staging signal it looks for is several
// times, not tens of percent (SHM instead of P2P costs about twelve times
// the CPU per byte on 2 x H200).
const DefaultCPUTolerance = 0.5

// cpuPerGB flags the staging signal: a run whose host CPU per GB rose
// beyond DefaultCPUTolerance while its bandwidth held (bwDelta within the
// bandwidth tolerance: a drop is already the bandwidth's regression). The
// bytes still arrive on time, but the host now carries them.
func cpuPerGB(c *change, br, ar results.Run, bwDelta, bwTol float64) {
	b, okb := br.CPUPerGB()
	a, oka := ar.CPUPerGB()
	if !okb || !oka || bwDelta < -bwTol {
		return
	}
	rise := (a - b) / b
	switch {
	case rise > DefaultCPUTolerance:
		c.regress("%s: host CPU %.4g -> %.4g s/GB (%+.0f%%) at busbw %.2f -> %.2f GB/s: bandwidth held but the host now carries the bytes (staged through host memory?); gdrcheck allows %.0f%%",
			runKey(ar), b, a, 100*rise, br.BusBW, ar.BusBW, 100*DefaultCPUTolerance)
	case rise < -DefaultCPUTolerance:
		c.note("%s: host CPU %.4g -> %.4g s/GB (%+.0f%%)", runKey(ar), b, a, 100*rise)
	}
}
