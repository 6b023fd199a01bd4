// Package kernel holds the specs that decide which GPUDirect peer-memory
// path works on the node, DMA-BUF (the upstream path NCCL prefers) or the
// legacy nvidia_peermem module, and prove it: a dma-buf export of real GPU
// memory and, where NICs exist, a registration of that memory with each
// rail NIC; that its versions are in no known-bad combination
// (suites/knownbad); and that nothing keeps the NVIDIA modules off the GPUs:
// module signing refusing them is named where the mechanism fails for
// want of one, and nouveau or nova_core holding a GPU fails.
package kernel

import (
	"fmt"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
	"github.com/gdrcheck/gdrcheck/suites/knownbad"
)

// The running spec's inputs, set by BeforeEach. Ginkgo builds its tree
// once per process and runs one spec at a time, so the functions that
// register the specs share them, as one Describe closure's locals did.
var ev *node.Evidence

var _ = suites.Describe("kernel", func() {
	BeforeEach(func() {
		ev = suites.Evidence()
	})

	mechanismSpecs()
	driverSpecs()
})

// mechanismSpecs registers the specs of the peer-memory mechanism, proven:
// dma-buf export and registration.
func mechanismSpecs() {
	It("has a working GPUDirect peer-memory mechanism", func() {
		suites.Remedy(results.ActionReloadDriver, results.ScopeNode)
		v := ev.Mechanism()
		suites.Note("mechanism: %s (decided by %s)", v.Mechanism, v.DecidedBy)
		for _, f := range v.DMABuf {
			suites.Note("DMA-BUF %s", f)
		}
		for _, f := range v.Peermem {
			suites.Note("peermem %s", f)
		}
		for _, w := range v.Warnings {
			suites.Warn("%s", w)
		}
		signing := signingCause(ev.Kernel, missingModule(ev, v))
		if signing != "" {
			// Module signing refused it: a key to enrol or signed
			// modules, not a reload.
			suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		}
		Expect(v).To(suites.HaveAWorkingMechanism(signing))
	})

	It("exports the memory of every GPU as a dma-buf", func() {
		suites.Remedy(results.ActionReimage, results.ScopeNode)
		Expect(ev.CUDA).To(suites.HaveLibcuda("libcuda did not answer"))
		if ev.Kernel.DriverFlavour == node.FlavourProprietary {
			suites.NotApplicable("the proprietary NVIDIA kernel modules cannot export dma-bufs; the open modules (R515+) can")
		}
		var bad []string
		var r suites.Remedies
		for _, g := range ev.CUDA.GPUs {
			suites.Note("GPU %s: GPU_DIRECT_RDMA_SUPPORTED (116) %s, FLUSH_WRITES_OPTIONS (117) %s, WRITES_ORDERING (118) %s, DMA_BUF_SUPPORTED (124) %s",
				g.BusID, attr(g.GDRSupported), attr(g.FlushWritesOptions), attr(g.WritesOrdering), attr(g.DMABufSupported))
			switch {
			case g.DMABufSupported == nil || *g.DMABufSupported != 1:
				r.Add(results.ActionReimage, results.ScopeNode)
				bad = append(bad, fmt.Sprintf("GPU %s: DMA_BUF_SUPPORTED (124) is %s; expected 1", g.BusID, attr(g.DMABufSupported)))
			case !g.Export.OK:
				// The node can export (the attribute says so), this
				// GPU did not.
				r.Add(results.ActionResetGPU, results.ScopeGPU, g.BusID)
				bad = append(bad, fmt.Sprintf("GPU %s: dma-buf export failed: %s; %s", g.BusID, g.Export.Error, ev.BAR1State(g.BusID)))
			default:
				suites.Note("GPU %s: exported %d bytes of device memory as a dma-buf fd", g.BusID, g.Export.Bytes)
			}
		}
		if len(ev.CUDA.GPUs) == 0 {
			bad = append(bad, "libcuda found no GPU")
		}
		r.Declare()
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("registers GPU memory with every rail NIC", func() {
		suites.Remedy(results.ActionReloadDriver, results.ScopeNode)
		if len(ev.Verbs.Devices) == 0 && len(ev.NICs) == 0 {
			reason := "no RDMA devices"
			if !ev.Verbs.Available {
				reason += " (libibverbs: " + ev.Verbs.Error + ")"
			}
			suites.NotApplicable(reason + ": the registration proof needs a NIC")
		}
		Expect(ev.CUDA).To(suites.HaveLibcuda("no GPU buffer to register: libcuda did not answer"))
		Expect(ev.Verbs).To(suites.HaveAttemptedRegistrations())
		mech := ev.Mechanism().Mechanism
		want := node.PathDMABuf
		if mech == node.MechanismPeermem {
			want = node.PathPeermem
		}
		var bad []string
		for _, r := range ev.Verbs.Registrations {
			if r.OK {
				suites.Note("GPU %s -> %s: %s registration works", r.GPU, r.NIC, r.Path)
				continue
			}
			line := fmt.Sprintf("GPU %s -> %s: %s registration failed: %s; %s", r.GPU, r.NIC, r.Path, r.Error, ev.BAR1State(r.GPU))
			if r.Path == want || mech == node.MechanismNone {
				bad = append(bad, line)
			} else {
				suites.Note("%s", line)
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// driverSpecs registers the specs of versions, Xids and the modules around
// the driver.
func driverSpecs() {
	It("is in no known-bad combination of versions", func() {
		suites.Remedy(results.ActionReimage, results.ScopeNode)
		// nccl-tests ran before the specs: their NCCL is what ran, and
		// wins over the library the loader would pick.
		f := knownbad.FromEvidence(ev, suites.Current().NCCL.NCCLVersion())
		switch {
		case f.NCCL != "":
			suites.Note("NCCL %s (%s)", f.NCCL, f.NCCLFrom)
		case ev.NCCL != nil:
			suites.Note("NCCL version unknown: %s names none, so the cells over NCCL versions cannot match", ev.NCCL.Path)
		default:
			suites.Note("NCCL version unknown: no libnccl.so.2 in the loader's path and no nccl-tests run, so the cells over NCCL versions cannot match")
		}
		if l := ev.NCCL; l != nil && len(l.Found) > 1 {
			var paths []string
			for _, lf := range l.Found {
				paths = append(paths, lf.Path)
			}
			suites.Note("NCCL libraries found, in loader order: %s", strings.Join(paths, ", "))
		}
		hits := knownbad.Match(f)
		for _, h := range knownbad.Warning(hits) {
			suites.Warn("in a known-bad combination: %s", h)
		}
		Expect(hits).To(BeOutsideKnownBadCells())
	})

	// Xid 79 (a GPU fell off the bus: NVIDIA/NVSentinel#155,
	// leptonai/gpud#1209) and the NVLink Xids 74 and 144-149
	// (NVIDIA/open-gpu-kernel-modules#1355) leave GPUDirect broken until
	// the GPU is reset; NVML may still answer for the rest.
	It("logs no Xid that breaks the direct path (79, 74, 144-149)", func() {
		suites.Remedy(results.ActionResetGPU, results.ScopeGPU)
		k := ev.Kernel
		if !k.LogReadable {
			suites.CannotRun("kernel log not readable (/dev/kmsg needs root; a recording holds it only as gdrcheck/kmsg.txt, which snapshot writes as root): Xids were not checked")
		}
		var bad []string
		for _, l := range k.Xids {
			bad = append(bad, "kernel log: "+l+": "+xidFix(l))
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	// GDRCopy slows, never breaks, the direct path: a warning at most
	// (gdrcopy.go).
	It("has GDRCopy's gdrdrv loaded where UCX or MPI would use it", func() {
		c := suites.Current()
		if !c.UCXOrMPILooked {
			suites.CannotRun("UCX and MPI were not looked for in this run")
		}
		r := checkGDRCopy(ev.Kernel.GDRCopy, c.UCXOrMPI, ev.Overrides)
		for _, n := range r.notes {
			suites.Note("%s", n)
		}
		if r.skip != "" {
			suites.NotApplicable(r.skip)
		}
		for _, w := range r.warn {
			suites.Warn("%s", w)
		}
	})

	It("has no conflicting or failing peer-memory modules", func() {
		suites.Remedy(results.ActionReloadDriver, results.ScopeNode)
		k := ev.Kernel
		var bad []string
		if k.NvPeerMem && k.Peermem.Loaded {
			bad = append(bad, "nv_peer_mem and nvidia_peermem are both loaded; expected at most nvidia_peermem")
		}
		for _, l := range k.Log {
			bad = append(bad, "kernel log: "+l)
		}
		if !k.LogReadable {
			suites.Note("kernel log not readable (/dev/kmsg needs root; a recording holds it only as gdrcheck/kmsg.txt, which snapshot writes as root): peer-memory errors there were not checked")
		}
		if k.Peermem.Loaded && !k.Peermem.Registered {
			suites.Warn("nvidia_peermem is loaded but not registered with ib_core (no memory_peers/nv_mem)")
		}
		for _, l := range k.Load.Refused {
			suites.Note("kernel log: module signing refused a module (%s): %s", k.Load.SigningState(), l)
		}
		suites.Note("nvidia_peermem loaded: %t, registered: %t, nv_peer_mem loaded: %t, MOFED: %s", k.Peermem.Loaded, k.Peermem.Registered, k.NvPeerMem, orReason(k.MOFED))
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("has no GPU held by nouveau or nova_core", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		bad, notes := heldFindings(ev)
		for _, n := range notes {
			suites.Note("%s", n)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// xidFix says what an admin does about an Xid line xidTrouble kept.
func xidFix(line string) string {
	if strings.Contains(line, "): 79,") {
		return "the GPU fell off the bus; drain the node, reset or reseat the GPU (check its power and riser), and replace it if it falls off again"
	}
	return "an NVLink error; drain the node, check nvidia-smi nvlink -s and -e, reset the GPU, and have the link, bridge or switch tray serviced if it recurs"
}

func attr(v *int) string {
	if v == nil {
		return "unknown"
	}
	return strconv.Itoa(*v)
}

func orReason(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
