package node

import (
	"fmt"
	"strconv"
	"strings"
)

// The peer-memory mechanisms GPUDirect RDMA can use.
const (
	MechanismDMABuf  = "dmabuf"  // the upstream path; NCCL prefers it
	MechanismPeermem = "peermem" // nvidia_peermem with MOFED's peer-memory API
	MechanismNone    = "none"
)

// Fact is one link in the chain behind a verdict: what was needed, what
// was found, and whether it holds.
type Fact struct {
	Name  string `json:"name"`
	Found string `json:"found"`
	Need  string `json:"need"`
	OK    bool   `json:"ok"`
}

func (f Fact) String() string {
	mark := "ok"
	if !f.OK {
		mark = "NO"
	}
	return fmt.Sprintf("[%s] %s: %s (need %s)", mark, f.Name, f.Found, f.Need)
}

// MechanismVerdict is which peer-memory path works and why.
type MechanismVerdict struct {
	Mechanism string `json:"mechanism"`
	// DecidedBy is "registration" when NICs proved a path by registering
	// GPU memory, else "compatibility" (the matrix and the export).
	DecidedBy string   `json:"decided_by"`
	DMABuf    []Fact   `json:"dmabuf"`
	Peermem   []Fact   `json:"peermem"`
	Warnings  []string `json:"warnings,omitempty"`
}

func allOK(fs []Fact) bool {
	for _, f := range fs {
		if !f.OK {
			return false
		}
	}
	return len(fs) > 0
}

// FirstFailure is the first fact that does not hold.
func FirstFailure(fs []Fact) (Fact, bool) {
	for _, f := range fs {
		if !f.OK {
			return f, true
		}
	}
	return Fact{}, false
}

// versionAtLeast compares dotted numeric versions ("580.159.04" >= "515.43").
func versionAtLeast(v string, want ...int) bool {
	parts := strings.Split(v, ".")
	for i, w := range want {
		if i >= len(parts) {
			return false
		}
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return false
		}
		if n != w {
			return n > w
		}
	}
	return true
}

// Mechanism decides the peer-memory path from the compatibility matrix of
// DESIGN.md and, where NICs exist, the registration proof, which outranks
// the matrix: a path that registers works, whatever the versions say.
func (e *Evidence) Mechanism() MechanismVerdict {
	v := MechanismVerdict{DMABuf: e.dmabufFacts(), Peermem: e.peermemFacts()}
	dmabuf, peermem := allOK(v.DMABuf), allOK(v.Peermem)
	v.DecidedBy = "compatibility"
	if e.registrationsTried() {
		v.DecidedBy = "registration"
		dmabuf, peermem = e.provenEverywhere(PathDMABuf), e.provenEverywhere(PathPeermem)
	}
	switch {
	case dmabuf:
		v.Mechanism = MechanismDMABuf
	case peermem:
		v.Mechanism = MechanismPeermem
		if f, ok := FirstFailure(v.DMABuf); ok {
			v.Warnings = append(v.Warnings, "DMA-BUF is unavailable, so GPUDirect rides on nvidia_peermem: "+f.String())
		} else {
			v.Warnings = append(v.Warnings, "DMA-BUF registration failed on a rail NIC, so GPUDirect rides on nvidia_peermem")
		}
	default:
		v.Mechanism = MechanismNone
	}
	k := e.Kernel
	if k.Peermem.Loaded && !k.Peermem.Registered && v.Mechanism != MechanismPeermem {
		v.Warnings = append(v.Warnings, "nvidia_peermem is loaded but not registered with ib_core (no memory_peers/nv_mem): NCCL reports GDR disabled on that path")
	}
	if k.NvPeerMem && k.Peermem.Loaded {
		v.Warnings = append(v.Warnings, "nv_peer_mem and nvidia_peermem are both loaded: they register the same peer-memory client")
	}
	return v
}

func (e *Evidence) dmabufFacts() []Fact {
	k := e.Kernel
	var fs []Fact
	fs = append(fs, Fact{Name: "NVIDIA kernel module flavour", Found: orNone(k.DriverFlavour), Need: "open", OK: k.DriverFlavour == FlavourOpen})
	drv := e.Host.DriverVersion
	if k.DriverVersion != "" {
		drv = k.DriverVersion
	}
	fs = append(fs, Fact{Name: "driver", Found: orNone(drv), Need: ">= 515.43", OK: versionAtLeast(drv, 515, 43)})
	cuda := e.CUDA.DriverVersion
	if cuda == 0 {
		cuda = e.Host.CUDADriverVersion
	}
	fs = append(fs, Fact{Name: "CUDA driver", Found: cudaVersion(cuda), Need: ">= 11.7", OK: cuda >= 11070})
	fs = append(fs, Fact{Name: "kernel", Found: orNone(k.Release), Need: ">= 5.12", OK: KernelAtLeast(k.Release, 5, 12)})
	rc := "none"
	if e.Verbs.Available {
		rc = fmt.Sprintf("rdma-core %d", e.Verbs.RDMACoreVersion)
		if !e.Verbs.HasRegDMABufMR {
			rc += " without ibv_reg_dmabuf_mr"
		}
	} else if e.Verbs.Error != "" {
		rc = e.Verbs.Error
	}
	fs = append(fs, Fact{Name: "libibverbs", Found: rc, Need: "rdma-core >= 34 with ibv_reg_dmabuf_mr", OK: e.Verbs.Available && e.Verbs.HasRegDMABufMR})
	if !e.CUDA.Available {
		fs = append(fs, Fact{Name: "libcuda", Found: orNone(e.CUDA.Error), Need: "libcuda.so.1 answering", OK: false})
		return fs
	}
	for _, g := range e.CUDA.GPUs {
		attr := "unknown"
		if g.DMABufSupported != nil {
			attr = strconv.Itoa(*g.DMABufSupported)
		}
		fs = append(fs, Fact{Name: "GPU " + g.BusID + " DMA_BUF_SUPPORTED (124)", Found: attr, Need: "1", OK: g.DMABufSupported != nil && *g.DMABufSupported == 1})
		found := "not tried"
		switch {
		case g.Export.OK:
			found = fmt.Sprintf("exported %d bytes as a dma-buf fd", g.Export.Bytes)
		case g.Export.Tried:
			found = g.Export.Error + "; " + e.BAR1State(g.BusID)
		}
		fs = append(fs, Fact{Name: "GPU " + g.BusID + " dma-buf export", Found: found, Need: "a dma-buf fd", OK: g.Export.OK})
	}
	if len(e.CUDA.GPUs) == 0 {
		fs = append(fs, Fact{Name: "CUDA devices", Found: "0", Need: ">= 1", OK: false})
	}
	return fs
}

func (e *Evidence) peermemFacts() []Fact {
	k := e.Kernel
	loaded := "not loaded"
	if k.Peermem.Loaded {
		loaded = "loaded"
		if k.Peermem.Version != "" {
			loaded += " " + k.Peermem.Version
		}
	}
	reg := "no memory_peers client"
	if k.Peermem.Registered {
		reg = "memory_peers/" + k.Peermem.Client
	}
	fs := []Fact{
		{Name: "nvidia_peermem", Found: loaded, Need: "loaded", OK: k.Peermem.Loaded},
		{Name: "peer-memory registration", Found: reg, Need: "memory_peers/nv_mem (MLNX_OFED/DOCA-OFED ib_core)", OK: k.Peermem.Registered},
	}
	conflict := "not loaded"
	if k.NvPeerMem {
		conflict = "loaded"
	}
	fs = append(fs, Fact{Name: "legacy nv_peer_mem", Found: conflict, Need: "not loaded", OK: !k.NvPeerMem})
	if len(k.Log) > 0 {
		fs = append(fs, Fact{Name: "kernel log", Found: k.Log[0], Need: "no peer-memory errors", OK: false})
	}
	return fs
}

func (e *Evidence) registrationsTried() bool {
	return len(e.Verbs.Registrations) > 0
}

// provenEverywhere says every GPU that was registered succeeded on path
// with at least one of its NICs.
func (e *Evidence) provenEverywhere(path string) bool {
	ok := map[string]bool{}
	for _, r := range e.Verbs.Registrations {
		if r.Path != path {
			continue
		}
		if _, seen := ok[r.GPU]; !seen {
			ok[r.GPU] = false
		}
		if r.OK {
			ok[r.GPU] = true
		}
	}
	if len(ok) == 0 {
		return false
	}
	for _, v := range ok {
		if !v {
			return false
		}
	}
	return true
}

// BAR1State is what every mapping or registration failure carries: the
// GPU's BAR1 aperture as NVML saw it.
func (e *Evidence) BAR1State(busID string) string {
	for _, g := range e.GPUs {
		if g.BusID == busID && g.BAR1 != nil {
			return fmt.Sprintf("BAR1 %d MiB used of %d MiB, %d MiB free", g.BAR1.UsedMiB, g.BAR1.TotalMiB, g.BAR1.FreeMiB)
		}
	}
	return "BAR1 unknown"
}

func cudaVersion(v int) string {
	if v == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
