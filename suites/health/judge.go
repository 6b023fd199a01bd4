package health

import (
	"fmt"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/version"
	"github.com/gdrcheck/gdrcheck/results"
)

// Input is what one health run judges: the node's cheap evidence, this
// run's counter reading, what the last run kept, and the deep result.
type Input struct {
	Node     string         // the node's name: the entity of node-scope findings
	Evidence *node.Evidence // node.Collect without the CUDA/verbs probe (or with, on a recording)
	// Counters is this run's reading of every NIC port; nil where it
	// failed (the counters check then has nothing to compare).
	Counters *node.FabricSample
	Prev     *Previous // the last run's readings; nil on a first run or a new boot
	Deep     DeepState
	// Unfinished names the work the run's own deadline cut short: the
	// node is then unevaluable, never unhealthy for it.
	Unfinished []string
}

// Previous is what the last run on this boot read, for the checks that
// judge what moved since.
type Previous struct {
	Counters *node.FabricSample // nil where the last run could not read them
	Xids     []string           // the Xid lines the last run had seen
}

// DeepState is the deep-result cache as the orchestrator read it.
type DeepState struct {
	Found  bool           // a deep result is cached
	Stale  string         // why it no longer speaks for the node; "" while it does
	Exit   int            // its exit code (results.ExitPassed: proven)
	Action results.Action // its action where it failed
	Check  string         // its first failing spec
	Cause  string         // and that spec's cause
	At     time.Time      // when the deep run ended
	Err    string         // the cache could not be read: why
}

// Judge folds the checks' findings into the node's verdict.
func Judge(in Input) Verdict {
	var fs []Finding
	for _, u := range in.Unfinished {
		fs = append(fs, evaluate(in.Node, "deadline hit before "+u+" finished"))
	}
	ev := in.Evidence
	if ev == nil {
		if len(fs) == 0 {
			fs = append(fs, evaluate(in.Node, "no evidence was collected"))
		}
		return verdictOf(fs)
	}
	if err := ev.Fatal(); err != nil {
		fs = append(fs, evaluate(in.Node, err.Error()))
		return verdictOf(fs)
	}
	if p, ok := ev.Unusable(node.SourceNVML); ok {
		// Without NVML the GPU links and the versions are half known:
		// fail open rather than judge on half (issue 33, "NVML missing").
		fs = append(fs, evaluate(in.Node, "NVML: "+p.Message))
	}
	fs = append(fs, peerMemory(in.Node, ev)...)
	fs = append(fs, gpuLinks(ev)...)
	fs = append(fs, nicLinks(ev)...)
	fs = append(fs, railPorts(ev)...)
	fs = append(fs, counters(in)...)
	fs = append(fs, xids(in)...)
	fs = append(fs, knownBad(in.Node, ev)...)
	fs = append(fs, deep(in.Node, in.Deep)...)
	return verdictOf(fs)
}

// NewXids are the Xid lines of the evidence the last run had not seen:
// every one on a first run, since the state file starts with the boot.
func NewXids(ev *node.Evidence, prev *Previous) []string {
	seen := map[string]bool{}
	if prev != nil {
		for _, x := range prev.Xids {
			seen[x] = true
		}
	}
	var out []string
	for _, x := range ev.Kernel.Xids {
		if !seen[x] {
			out = append(out, x)
		}
	}
	return out
}

func evaluate(entity, cause string) Finding {
	return Finding{Check: CheckEvaluate, State: StateUnevaluable, Cause: oneLine(cause), Action: results.ActionRerun, Scope: results.ScopeNode, Entity: entity}
}

func unhealthy(check, cause string, a results.Action, s results.Scope, entity string) Finding {
	return Finding{Check: check, State: StateUnhealthy, Cause: oneLine(cause), Action: a, Scope: s, Entity: entity}
}

// oneLine keeps a cause to one line: it goes into a drain reason and a
// label, and its parts come from the node.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// dmabufDriver is the first driver that exports GPU memory as dma-bufs
// (DESIGN.md's compatibility matrix).
var dmabufDriver = version.MustParseRange(">=515.43")

// peerMemory judges the mechanism from the module and the DMA-BUF facts
// the kernel shows; a recording with the probe's answers is judged on
// those (Evidence.Mechanism), since they outrank the matrix.
func peerMemory(name string, ev *node.Evidence) []Finding {
	if len(ev.NICs) == 0 {
		return nil // no RDMA NIC: no GPUDirect RDMA to keep working
	}
	k := ev.Kernel
	if len(k.Log) > 0 {
		return []Finding{unhealthy(CheckPeerMemory, "kernel log: "+k.Log[0], results.ActionReloadDriver, results.ScopeNode, name)}
	}
	if ev.Probed {
		v := ev.Mechanism()
		if v.Mechanism != node.MechanismNone {
			return nil
		}
		cause := "no peer-memory path"
		if f, ok := node.FirstFailure(v.DMABuf); ok {
			cause += ": DMA-BUF " + f.Name + " " + f.Found
		}
		if f, ok := node.FirstFailure(v.Peermem); ok {
			cause += "; " + f.Name + " " + f.Found
		}
		return []Finding{unhealthy(CheckPeerMemory, cause, peermemAction, results.ScopeNode, name)}
	}
	dmabuf, why := dmabufPossible(ev)
	peermem := k.Peermem.Loaded && k.Peermem.Registered && !k.NvPeerMem
	if dmabuf || peermem {
		return nil
	}
	cause := "no peer-memory path: DMA-BUF " + why + "; " + peermemState(k)
	return []Finding{unhealthy(CheckPeerMemory, cause, peermemAction, results.ScopeNode, name)}
}

// dmabufPossible is the DMA-BUF half of DESIGN.md's matrix that the
// kernel shows without a CUDA context: the open modules, a driver of
// 515.43 or later, a kernel of 5.12 or later.
func dmabufPossible(ev *node.Evidence) (bool, string) {
	k := ev.Kernel
	if k.DriverFlavour != node.FlavourOpen {
		return false, "needs the open kernel modules, found " + orNone(k.DriverFlavour)
	}
	drv := k.DriverVersion
	if drv == "" {
		drv = ev.Host.DriverVersion
	}
	if v, err := version.ParseFact(drv); err != nil || !dmabufDriver.Contains(v) {
		return false, "needs driver >= 515.43, found " + orNone(drv)
	}
	if !node.KernelAtLeast(k.Release, 5, 12) {
		return false, "needs kernel >= 5.12, found " + orNone(k.Release)
	}
	return true, ""
}

func peermemState(k node.KernelFacts) string {
	switch {
	case k.NvPeerMem && k.Peermem.Loaded:
		return "nv_peer_mem and nvidia_peermem are both loaded"
	case !k.Peermem.Loaded:
		return "nvidia_peermem not loaded"
	case !k.Peermem.Registered:
		return "nvidia_peermem loaded but not registered with ib_core (no memory_peers client)"
	}
	return "nvidia_peermem registered"
}

// peermemAction: each way the peer-memory path is missing here is
// mended by loading the modules again in the right order (nvidia_peermem
// after MOFED's ib_core, without nv_peer_mem), short of a reimage.
const peermemAction = results.ActionReloadDriver

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// gpuLinks: a GPU's PCIe link below its maximum width (or generation
// while busy: idle GPUs lower it to save power, GPU.Downtrained). A
// link retrains at reset; one that trains low again needs a reseat.
func gpuLinks(ev *node.Evidence) []Finding {
	var fs []Finding
	for _, g := range ev.GPUs {
		bad, what := g.Downtrained()
		if !bad {
			continue
		}
		p := g.PCIe
		cause := fmt.Sprintf("GPU %s PCIe link runs at gen%d x%d, its maximum gen%d x%d (%s)", g.BusID, p.CurGen, p.CurWidth, p.MaxGen, p.MaxWidth, what)
		if p.CurWidth == 0 && p.Sysfs != nil {
			cause = fmt.Sprintf("GPU %s PCIe link is x%d of x%d (sysfs)", g.BusID, p.Sysfs.CurWidth, p.Sysfs.MaxWidth)
		}
		fs = append(fs, unhealthy(CheckGPULink, cause, results.ActionResetGPU, results.ScopeLink, g.BusID))
	}
	return fs
}

// nicLinks: a rail NIC's PCIe link below its maximum width or speed, as
// sysfs shows it. NICs keep their link at full speed when idle, so a
// lower speed counts too. Rebooting retrains it.
func nicLinks(ev *node.Evidence) []Finding {
	var fs []Finding
	for _, n := range ev.NICs {
		l := n.Link
		if l == nil || !rail(ev, n.Name) {
			continue
		}
		width := l.MaxWidth > 0 && l.CurWidth > 0 && l.CurWidth < l.MaxWidth
		speed := l.MaxSpeedGTs > 0 && l.CurSpeedGTs > 0 && l.CurSpeedGTs+1e-6 < l.MaxSpeedGTs
		if !width && !speed {
			continue
		}
		cause := fmt.Sprintf("NIC %s (%s) PCIe link runs at %g GT/s x%d, its maximum %g GT/s x%d", n.Name, n.BusID, l.CurSpeedGTs, l.CurWidth, l.MaxSpeedGTs, l.MaxWidth)
		fs = append(fs, unhealthy(CheckNICLink, cause, results.ActionReboot, results.ScopeLink, n.BusID))
	}
	return fs
}

// rail says whether the NIC is some GPU's preferred NIC: the one its
// GPUDirect traffic takes. A storage or management NIC is not judged.
func rail(ev *node.Evidence, nic string) bool {
	for _, p := range ev.Paths {
		if p.Preferred && p.NIC == nic {
			return true
		}
	}
	return false
}

// railPorts: every port of a rail NIC must be ACTIVE/LinkUp, and run at
// the fastest rate of the node's rail ports (rails are cabled alike, so
// one slower port is a bad cable or transceiver, not the design).
func railPorts(ev *node.Evidence) []Finding {
	var best float64
	for _, n := range ev.NICs {
		if !rail(ev, n.Name) {
			continue
		}
		for _, p := range n.Ports {
			if p.Active() && p.RateGbps > best {
				best = p.RateGbps
			}
		}
	}
	var fs []Finding
	for _, n := range ev.NICs {
		if !rail(ev, n.Name) {
			continue
		}
		for _, p := range n.Ports {
			c := node.CheckPort(n.Name, p, best)
			if c.OK() {
				continue
			}
			entity := fmt.Sprintf("%s/%d", n.Name, p.Port)
			fs = append(fs, unhealthy(CheckRailPort, c.Problems[0], results.ActionCheckCable, results.ScopePort, entity))
		}
	}
	return fs
}
