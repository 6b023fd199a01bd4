package node

import "fmt"

// CPUTimes reads the all-CPU line of proc/stat: busy and total seconds.
// Sampled before and after a benchmark, the difference is the host CPU
// the run cost, which is how host staging shows (a direct path leaves the
// CPUs idle).
func (h Host) CPUTimes() (busy, total float64, err error) {
	st, err := h.Proc.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("reading %q: %w", h.proc("stat"), err)
	}
	c := st.CPUTotal
	total = c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
	busy = total - c.Idle - c.Iowait
	return busy, total, nil
}
