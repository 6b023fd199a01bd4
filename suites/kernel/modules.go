package kernel

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// What keeps the NVIDIA modules from loading or from driving the GPUs,
// named where the node shows it rather than left to its symptom (no
// mechanism, NVML's "driver not loaded").

// missingModule is the NVIDIA module the node needs and lacks for the
// mechanism verdict v: nvidia itself, else nvidia_peermem where DMA-BUF
// gives no path either; "" where none is missing.
func missingModule(ev *node.Evidence, v node.MechanismVerdict) string {
	switch {
	case v.Mechanism != node.MechanismNone:
		return ""
	case !ev.Kernel.Load.NVIDIA:
		return "nvidia"
	case !ev.Kernel.Peermem.Loaded:
		return "nvidia_peermem"
	}
	return ""
}

// signingCause names module signing as why module is missing: the kernel
// log shows it refusing a module (it names the program, not the module),
// or, where the log was not readable, the kernel refuses unsigned modules
// (bottlerocket-os/bottlerocket#4218, NVIDIA/gpu-driver-container#44,
// systemd/systemd#29166). "" where the node shows neither.
func signingCause(k node.KernelFacts, module string) string {
	l := k.Load
	switch {
	case module == "":
		return ""
	case len(l.Refused) > 0:
		return fmt.Sprintf("%s is not loaded and module signing refused a module (kernel log: %s; %s): %s", module, l.Refused[0], l.SigningState(), node.SigningFix)
	case l.LockedDown() && !k.LogReadable:
		return fmt.Sprintf("%s is not loaded and the kernel refuses unsigned modules (%s; the kernel log, which would say so, was not readable): if modprobe %s says \"Key was rejected by service\", %s", module, l.SigningState(), module, node.SigningFix)
	}
	return ""
}

// heldFindings are the GPUs an in-tree driver holds (nouveau, or
// nova_core on 7.x kernels, registered as NovaCore: beclab/Olares#3963,
// kubernetes-sigs/image-builder#1468, negativo17/nvidia-driver#73), from
// each GPU's driver link, the nvidia driver's "already bound" lines, and,
// where no GPU is bound, a holder loaded while nvidia is not.
func heldFindings(ev *node.Evidence) (bad, notes []string) {
	l := ev.Kernel.Load
	held := map[string]bool{}
	byBus := map[string]node.GPU{}
	for _, g := range ev.GPUs {
		byBus[g.BusID] = g
		if node.IsConflictingDriver(g.Driver) {
			held[g.BusID] = true
			bad = append(bad, fmt.Sprintf("%s is bound to %s, not nvidia: NVML, CUDA and GPUDirect cannot use it; %s", suites.GPUName(g), g.Driver, node.BlacklistFix(g.Driver)))
		}
	}
	for _, line := range l.Bound {
		bus, driver, ok := node.ParseBound(line)
		g, known := byBus[bus]
		switch {
		case !ok || held[bus]:
		case known && (g.Driver == "nvidia" || g.Driver == "" && g.Source != "sysfs"):
			// NVML lists only the GPUs nvidia drives.
			notes = append(notes, fmt.Sprintf("kernel log: %s; %s is on nvidia now", line, suites.GPUName(g)))
		case node.IsConflictingDriver(driver):
			held[bus] = true
			bad = append(bad, fmt.Sprintf("kernel log: %s: nvidia could not take the GPU; %s", line, node.BlacklistFix(driver)))
		default:
			notes = append(notes, "kernel log: "+line)
		}
	}
	h := l.Holder()
	switch {
	case len(bad) > 0 || h == "":
	case !l.NVIDIA:
		bad = append(bad, fmt.Sprintf("the nvidia module is not loaded and %s is: %s claims NVIDIA GPUs at boot, before nvidia can; %s", h, h, node.BlacklistFix(h)))
	default:
		notes = append(notes, fmt.Sprintf("%s is loaded but holds none of these GPUs", h))
	}
	return bad, notes
}
