package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SelectGPUs turns a job's GPU list into the bus ids of this node's GPUs.
// Slurm gives a Prolog SLURM_JOB_GPUS, host indices ("0,1,5"), and the
// tasks CUDA_VISIBLE_DEVICES, host indices or UUIDs ("GPU-8f3c..."). A
// host index is the N of /dev/nvidiaN (the minor number gres.conf's
// File= lines count by), else NVML's index where the minor is unknown. An
// entry no GPU answers to is an error naming it: a prolog that checked
// fewer GPUs than the job got would prove nothing about the others.
func (e *Evidence) SelectGPUs(list string) ([]string, error) {
	var out []string
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		g, err := e.gpuByID(id)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, g.BusID) {
			out = append(out, g.BusID)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("GPU list %q names no GPU", list)
	}
	return out, nil
}

func (e *Evidence) gpuByID(id string) (GPU, error) {
	if strings.HasPrefix(id, "MIG-") {
		return GPU{}, fmt.Errorf("GPU %q: a MIG instance; give the GPU's index or UUID", id)
	}
	if strings.HasPrefix(id, "GPU-") {
		// CUDA accepts a unique prefix of the UUID.
		var found []GPU
		for _, g := range e.GPUs {
			if g.UUID != "" && strings.HasPrefix(g.UUID, id) {
				found = append(found, g)
			}
		}
		switch len(found) {
		case 0:
			return GPU{}, fmt.Errorf("GPU %q: no GPU of this node has that UUID", id)
		case 1:
			return found[0], nil
		}
		return GPU{}, fmt.Errorf("GPU %q: the start of %d GPUs' UUIDs; give one whole", id, len(found))
	}
	n, err := strconv.Atoi(id)
	if err != nil || n < 0 {
		return GPU{}, fmt.Errorf("GPU %q: want a host index (0, 1, ...) or a UUID (GPU-...)", id)
	}
	for _, g := range e.GPUs {
		if g.Minor != nil && *g.Minor == n {
			return g, nil
		}
	}
	for _, g := range e.GPUs {
		if g.Minor == nil && g.Index == n {
			return g, nil
		}
	}
	return GPU{}, fmt.Errorf("GPU %d: this node has no /dev/nvidia%d (%d GPUs)", n, n, len(e.GPUs))
}

// Scope keeps only the GPUs with these bus ids and what belongs to them:
// their rail NICs (each GPU's preferred NIC), the paths and GPU pairs
// among them, the bridges on those paths, and the probe's answers for
// them. A prolog judges the job's GPUs alone, so a fault of a GPU another
// job holds neither fails this job nor gets touched by it. Calling it
// again (after the probe) is harmless.
func (e *Evidence) Scope(busIDs []string) {
	keep := func(id string) bool { return slices.Contains(busIDs, id) }
	nics := map[string]bool{}
	for _, p := range e.Paths {
		if p.Preferred && keep(p.GPU) {
			nics[p.NIC] = true
		}
	}
	e.GPUs = slices.DeleteFunc(e.GPUs, func(g GPU) bool { return !keep(g.BusID) })
	e.NICs = slices.DeleteFunc(e.NICs, func(n NIC) bool { return !nics[n.Name] })
	e.Paths = slices.DeleteFunc(e.Paths, func(p Path) bool { return !keep(p.GPU) || !nics[p.NIC] })
	e.GPUPairs = slices.DeleteFunc(e.GPUPairs, func(p GPUPair) bool { return !keep(p.A) || !keep(p.B) })
	e.PCIe.PeerPaths = slices.DeleteFunc(e.PCIe.PeerPaths, func(p PeerPath) bool { return !keep(p.A) || !keep(p.B) })
	bridges := map[string]bool{}
	for _, p := range e.Paths {
		for _, b := range p.Bridges {
			bridges[b] = true
		}
	}
	for _, p := range e.PCIe.PeerPaths {
		for _, b := range p.Bridges {
			bridges[b] = true
		}
	}
	nicBus := map[string]bool{}
	for _, n := range e.NICs {
		nicBus[n.BusID] = true
	}
	e.ACS = slices.DeleteFunc(e.ACS, func(a ACS) bool { return !bridges[a.Bridge] })
	e.PCIe.Devices = slices.DeleteFunc(e.PCIe.Devices, func(d PCIeDevice) bool {
		switch d.Role {
		case RoleGPU:
			return !keep(d.Address)
		case RoleNIC:
			return !nicBus[d.Address]
		}
		return !bridges[d.Address]
	})
	e.CUDA.GPUs = slices.DeleteFunc(e.CUDA.GPUs, func(g CUDAGPU) bool { return !keep(g.BusID) })
	e.Verbs.Registrations = slices.DeleteFunc(e.Verbs.Registrations, func(r Registration) bool { return !keep(r.GPU) || !nics[r.NIC] })
}
