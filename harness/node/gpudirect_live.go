package node

// LiveGPUDirect probes the running host's libcuda and libibverbs.
type LiveGPUDirect struct{}

// Probe is implemented in gpudirect_probe.go once the dlopen wrappers land.
func (LiveGPUDirect) Probe(rails map[string][]string) (CUDAFacts, VerbsFacts) {
	return probeLive(rails)
}
