package node

import (
	"time"

	"github.com/gdrcheck/gdrcheck/internal/stopwatch"
)

// nvmlRead is NVML's part of Collect, run beside the sysfs reads: NVML's
// initialisation is the slowest step of a quick gate after cuInit, and
// needs nothing sysfs gives.
type nvmlRead struct {
	done    chan struct{}
	facts   NVMLFacts
	ok      bool
	scratch Evidence // the host versions and problems collectNVML sets
	took    time.Duration
}

func startNVML(h Host, src Sources) *nvmlRead {
	r := &nvmlRead{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		start := time.Now()
		r.facts, r.ok = r.scratch.collectNVML(h, src)
		r.took = time.Since(start)
	}()
	return r
}

// join waits for NVML and takes what it found into e, in the place the
// serial reading put it: after the PCI devices, before the GPUs merge.
func (r *nvmlRead) join(e *Evidence, w *stopwatch.Watch) (NVMLFacts, bool) {
	<-r.done
	e.Host.DriverVersion = r.scratch.Host.DriverVersion
	e.Host.NVMLVersion = r.scratch.Host.NVMLVersion
	e.Host.CUDADriverVersion = r.scratch.Host.CUDADriverVersion
	e.Problems = append(e.Problems, r.scratch.Problems...)
	w.Add("nvml (beside sysfs)", r.took)
	w.Lap("waiting for nvml")
	return r.facts, r.ok
}
