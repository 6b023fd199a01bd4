package node

// LiveGPUDirect probes the running host's libcuda and libibverbs.
type LiveGPUDirect struct{}

// Probe is implemented in gpudirect_probe.go once the dlopen wrappers land.
func (LiveGPUDirect) Probe(rails map[string][]string) (CUDAFacts, VerbsFacts) {
	return probeLive(rails, false)
}

// ProbeOnly probes only the GPUs rails names: a prolog's, once Scope
// kept the job's GPUs, so that no context is created on a GPU another
// job holds (an exclusive-process GPU would refuse it, or the other job
// its own).
func (LiveGPUDirect) ProbeOnly(rails map[string][]string) (CUDAFacts, VerbsFacts) {
	return probeLive(rails, true)
}

// scopedProbe is a probe that can leave out the GPUs rails does not name.
type scopedProbe interface {
	ProbeOnly(rails map[string][]string) (CUDAFacts, VerbsFacts)
}
