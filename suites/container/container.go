// Package container holds the specs run inside the workload's container:
// a bare-metal pass proves little when the job's container misses
// /dev/infiniband, runs with a memlock limit or lacks CAP_IPC_LOCK. Each
// failure names its likely cause, so a host-vs-container comparison can
// say what to fix.
package container

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

// Causes, as the host-vs-container table names them.
const (
	CauseNotExposed = "device not exposed"
	CauseCgroup     = "cgroup device rule"
	CausePermission = "device permissions"
	CauseMemlock    = "memlock"
	CauseCapability = "capability"
	CauseNoRDMA     = "RDMA devices hidden"
	CauseWrong      = "not the device it names"
	CauseNoDriver   = "no driver behind the node"
	CauseNoGPUs     = "GPUs not exposed by the runtime"
)

// The running spec's inputs, set by BeforeEach. Ginkgo builds its tree
// once per process and runs one spec at a time, so the functions that
// register the specs share them, as one Describe closure's locals did.
var ev *node.Evidence
var c node.ContainerFacts

var _ = suites.Describe("container", func() {
	BeforeEach(func() {
		ev = suites.Evidence()
		Expect(ev.Container).To(suites.HaveContainerFacts())
		c = *ev.Container
		if c.Recorded {
			suites.Note("facts recorded with the node, not read from this process")
		}
		suites.Note("runtime: %s; %s", c.Runtime, envText(c.Env))
	})

	deviceSpecs()
	registrationSpecs()
})

// deviceSpecs registers the specs of what the container exposes: device
// nodes, memlock, CAP_IPC_LOCK, RDMA devices.
func deviceSpecs() {
	It("opens the device node of every GPU", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		if c.NoGPU != nil {
			suites.Note("cause: %s", CauseNoGPUs)
			Expect([]string{noGPUFinding(*c.NoGPU, c.Env)}).To(suites.HaveNoFindings())
		}
		Expect(judgeDevices(c, "/dev/nvidia", "NVIDIA_VISIBLE_DEVICES")).To(suites.HaveNoFindings())
	})

	It("opens the RDMA device nodes of every rail NIC", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		n := 0
		for _, d := range c.Devices {
			if strings.HasPrefix(d.Path, "/dev/infiniband") {
				n++
			}
		}
		if n == 0 {
			suites.NotApplicable("no rail NICs: no RDMA device nodes to check")
		}
		Expect(judgeDevices(c, "/dev/infiniband", "MELLANOX_VISIBLE_DEVICES")).To(suites.HaveNoFindings())
	})

	It("may lock the memory RDMA registration pins", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		if c.Unlimited() {
			suites.Note("RLIMIT_MEMLOCK unlimited")
		} else {
			suites.Note("cause: %s", CauseMemlock)
		}
		Expect(c).To(suites.HaveUnlimitedMemlock())
	})

	It("has CAP_IPC_LOCK where memory locking is limited", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		if c.Unlimited() {
			suites.NotApplicable("RLIMIT_MEMLOCK is unlimited: CAP_IPC_LOCK is not needed")
		}
		if !c.CapIPCLock {
			suites.Note("cause: %s", CauseCapability)
		}
		Expect(c).To(suites.HaveCapIPCLock())
	})

	It("sees the host's rail NICs in /sys/class/infiniband", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		var rails []string
		for _, p := range ev.Paths {
			if p.Preferred {
				rails = append(rails, p.NIC)
			}
		}
		if len(rails) == 0 {
			suites.NotApplicable("no rail NICs on this node")
		}
		seen := map[string]bool{}
		for _, n := range c.InfiniBand {
			seen[n] = true
		}
		var bad []string
		done := map[string]bool{}
		for _, r := range rails {
			if !seen[r] && !done[r] {
				done[r] = true
				bad = append(bad, fmt.Sprintf("rail NIC %s is not in /sys/class/infiniband here (sees %s): %s (an RDMA network namespace in exclusive mode, or a device plugin that exposes only some NICs)", r, orNone(c.InfiniBand), CauseNoRDMA))
			}
		}
		if len(bad) > 0 {
			suites.Note("cause: %s", CauseNoRDMA)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// registrationSpecs registers the specs of the GPUDirect proof from inside
// the container.
func registrationSpecs() {
	It("exports GPU memory as a dma-buf and registers it from inside", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		if c.NoGPU != nil {
			suites.NotApplicable("no GPU is exposed to this container: no memory to export (the GPU device node check says why)")
		}
		Expect(ev.CUDA).To(suites.HaveLibcuda("libcuda does not answer in here"))
		var bad []string
		for _, g := range ev.CUDA.GPUs {
			if g.Export.Tried && !g.Export.OK {
				bad = append(bad, fmt.Sprintf("GPU %s: dma-buf export failed: %s; %s", g.BusID, g.Export.Error, ev.BAR1State(g.BusID)))
			}
		}
		mech := ev.Mechanism().Mechanism
		for _, r := range ev.Verbs.Registrations {
			if !r.OK && (r.Path == node.PathDMABuf && mech != node.MechanismPeermem || r.Path == node.PathPeermem && mech == node.MechanismPeermem) {
				cause := ""
				if !c.Unlimited() {
					cause = " (cause: " + CauseMemlock + ")"
				}
				bad = append(bad, fmt.Sprintf("GPU %s -> %s: %s registration failed: %s; %s%s", r.GPU, r.NIC, r.Path, r.Error, ev.BAR1State(r.GPU), cause))
			}
		}
		suites.Note("mechanism here: %s", mech)
		Expect(bad).To(suites.HaveNoFindings())
	})
}

func envText(env map[string]string) string {
	var parts []string
	for _, k := range node.ContainerVariables {
		if v, ok := env[k]; ok {
			parts = append(parts, k+"="+v)
		} else {
			parts = append(parts, k+" unset")
		}
	}
	return strings.Join(parts, ", ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
