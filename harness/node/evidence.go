package node

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Evidence is everything collected about one node, once per run. Suites
// read it and never go to the host themselves.
type Evidence struct {
	Host     HostFacts   `json:"host"`
	GPUs     []GPU       `json:"gpus"`
	NICs     []NIC       `json:"nics"`
	Paths    []Path      `json:"paths"`     // every GPU <-> NIC pair
	GPUPairs []GPUPair   `json:"gpu_pairs"` // every GPU <-> GPU pair, from NVML
	ACS      []ACS       `json:"acs"`       // bridges on GPU <-> preferred NIC paths
	IOMMU    IOMMU       `json:"iommu"`
	Kernel   KernelFacts `json:"kernel"`
	// CUDA and Verbs are filled by ProbeGPUDirect, only for the suites
	// that need them (Probed).
	Probed bool       `json:"probed"`
	CUDA   CUDAFacts  `json:"cuda"`
	Verbs  VerbsFacts `json:"verbs"`
	// Container is filled for the container suite: the view from the
	// process gdrcheck runs in.
	Container *ContainerFacts `json:"container,omitempty"`
	Problems  []Problem       `json:"problems,omitempty"`
}

// HostFacts names the node and its software.
type HostFacts struct {
	Hostname          string `json:"hostname"`                 // proc/sys/kernel/hostname
	Root              string `json:"root"`                     // the --host-root read
	Kernel            string `json:"kernel"`                   // proc/sys/kernel/osrelease
	DriverVersion     string `json:"driver_version,omitempty"` // NVML, else proc/driver/nvidia/version
	NVMLVersion       string `json:"nvml_version,omitempty"`
	CUDADriverVersion int    `json:"cuda_driver_version,omitempty"`
}

// Path is the PCIe path between one GPU and one NIC.
type Path struct {
	GPU       string    `json:"gpu"` // bus id
	GPUIndex  int       `json:"gpu_index"`
	NIC       string    `json:"nic"`
	NICBusID  string    `json:"nic_bus_id"`
	Class     PathClass `json:"path"`
	SameNUMA  bool      `json:"same_numa"`
	Preferred bool      `json:"preferred"` // the closest NIC of this GPU
	Bridges   []string  `json:"bridges,omitempty"`
}

// Problem is evidence that could not be collected. Fatal problems mean the
// node could not be evaluated (exit code 2); the others leave a gap that
// the specs needing it report.
type Problem struct {
	Source  string `json:"source"` // nvml, sysfs, rdmamap, acs...
	Message string `json:"message"`
	Fatal   bool   `json:"fatal"`
}

// Fatal joins the fatal problems into one error, or returns nil.
func (e *Evidence) Fatal() error {
	var msgs []string
	for _, p := range e.Problems {
		if p.Fatal {
			msgs = append(msgs, p.Message)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// Problem returns the first problem from source, if any.
func (e *Evidence) Problem(source string) (Problem, bool) {
	for _, p := range e.Problems {
		if p.Source == source {
			return p, true
		}
	}
	return Problem{}, false
}

func (e *Evidence) problem(source string, fatal bool, err error) {
	e.Problems = append(e.Problems, Problem{Source: source, Message: err.Error(), Fatal: fatal})
}

// Relabel names the host root as label in the evidence, for a root that is
// a temporary unpacking of an archive the user named.
func (e *Evidence) Relabel(label string) {
	root := e.Host.Root
	if label == "" || root == "" || root == label {
		return
	}
	for i := range e.Problems {
		e.Problems[i].Message = strings.ReplaceAll(e.Problems[i].Message, root, label)
	}
	e.CUDA.Error = strings.ReplaceAll(e.CUDA.Error, root, label)
	e.Verbs.Error = strings.ReplaceAll(e.Verbs.Error, root, label)
	e.Host.Root = label
}

// PreferredPath returns the path to the GPU's preferred NIC.
func (e *Evidence) PreferredPath(gpuBusID string) (Path, bool) {
	for _, p := range e.Paths {
		if p.GPU == gpuBusID && p.Preferred {
			return p, true
		}
	}
	return Path{}, false
}

// NIC returns the NIC with that name.
func (e *Evidence) NIC(name string) (NIC, bool) {
	for _, n := range e.NICs {
		if n.Name == name {
			return n, true
		}
	}
	return NIC{}, false
}

// Sources are the live libraries, or their recordings, the collector asks.
type Sources struct {
	// NVML answers GPU questions; nil means NVML is unavailable and the
	// reason is in NVMLErr.
	NVML    nvml.Interface
	NVMLErr error
	// GPUDirect probes libcuda and libibverbs; nil with the reason in
	// GPUDirectErr.
	GPUDirect    GPUDirectProbe
	GPUDirectErr error
}

// nvmlRecording is where snapshots keep NVML's answers.
const nvmlRecording = "gdrcheck/nvml.json"

// Collect reads the node once. It never panics on a broken host: what it
// cannot read becomes a Problem naming the file or library.
func Collect(h Host, src Sources) *Evidence {
	e := &Evidence{Host: HostFacts{Root: h.Root()}}
	e.Host.Hostname, _ = readString(h.proc("sys", "kernel", "hostname"))
	if k, err := readString(h.proc("sys", "kernel", "osrelease")); err == nil {
		e.Host.Kernel = k
	} else {
		e.problem("procfs", false, err)
	}

	pci, err := h.PCIDevices()
	if err != nil {
		e.problem("sysfs", true, err)
		return e
	}
	sysGPUs := map[string]PCIDevice{}
	for addr, d := range pci {
		if d.IsNVIDIAGPU() {
			sysGPUs[addr] = d
		}
	}

	var nf NVMLFacts
	nvmlOK := false
	switch {
	case src.NVML != nil:
		nf, err = CollectNVML(src.NVML)
		if err != nil {
			e.problem("nvml", true, err)
		} else {
			nvmlOK = true
		}
	case src.NVMLErr != nil:
		e.problem("nvml", true, src.NVMLErr)
	default:
		e.problem("nvml", true, fmt.Errorf("%w: no NVML source", ErrNVML))
	}
	e.Host.DriverVersion = nf.DriverVersion
	e.Host.NVMLVersion = nf.NVMLVersion
	e.Host.CUDADriverVersion = nf.CUDADriverVersion
	if e.Host.DriverVersion == "" {
		e.Host.DriverVersion = procDriverVersion(h)
	}

	e.GPUs, err = mergeGPUs(h, nf.GPUs, sysGPUs)
	if err != nil {
		e.problem("sysfs", true, err)
		return e
	}
	e.GPUPairs = nf.Pairs
	if len(e.GPUs) == 0 {
		e.problem("gpus", true, fmt.Errorf("no NVIDIA GPU found: no PCI device of vendor 0x10de with a display or 3D class under %q", h.sys("bus", "pci", "devices")))
	} else if !nvmlOK {
		e.problem("gpus", false, fmt.Errorf("%d NVIDIA GPU(s) found in sysfs (%s) but NVML did not answer", len(e.GPUs), gpuBusIDs(e.GPUs)))
	} else if hidden := sysfsOnly(e.GPUs); len(hidden) > 0 {
		e.problem("gpus", false, fmt.Errorf("GPU(s) %s are in sysfs but NVML does not see them (not given to this container, or failed)", gpuBusIDs(hidden)))
	}

	rm, err := h.RDMAMap()
	if err != nil {
		e.problem("rdmamap", false, err)
	}
	e.NICs, err = h.NICs(pci, rm)
	if err != nil && !errors.Is(err, ErrAbsent) {
		e.problem("sysfs", true, err)
		return e
	}

	e.Paths = paths(e.GPUs, e.NICs, pci)
	e.collectACS(h, pci)
	e.collectIOMMU(h)
	if e.Kernel, err = h.Kernel(); err != nil {
		e.problem("kernel", false, err)
	}
	return e
}

// mergeGPUs joins NVML's GPUs with sysfs's by bus id; sysfs adds NUMA, CPU
// list and link speed, and stands alone when NVML did not answer.
func mergeGPUs(h Host, nv []GPU, sys map[string]PCIDevice) ([]GPU, error) {
	var out []GPU
	seen := map[string]bool{}
	for _, g := range nv {
		if d, ok := sys[g.BusID]; ok {
			g.Source = "nvml+sysfs"
			g.NUMANode, g.CPUList, g.PCIe.Sysfs = d.NUMA, d.CPUList, d.Link
			seen[g.BusID] = true
		}
		out = append(out, g)
	}
	for _, addr := range slices.Sorted(maps.Keys(sys)) {
		if seen[addr] {
			continue
		}
		d := sys[addr]
		out = append(out, GPU{
			Index:       -1,
			BusID:       addr,
			PCIDeviceID: fmt.Sprintf("%#04x", d.Device),
			NUMANode:    d.NUMA,
			CPUList:     d.CPUList,
			PCIe:        GPUPCIe{Sysfs: d.Link},
			Source:      "sysfs",
		})
	}
	for i := range out {
		io, err := h.DeviceIOMMU(out[i].BusID)
		if err != nil {
			return nil, err
		}
		out[i].IOMMU = io
		if out[i].Minor == nil {
			out[i].Minor = h.procMinor(out[i].BusID)
		}
	}
	return out, nil
}

// procMinor reads a GPU's device minor from the driver's
// proc/driver/nvidia/gpus/<bus id>/information ("Device Minor: 1"), which
// names /dev/nvidiaN even where NVML cannot see the GPU (a container that
// was not given it).
func (h Host) procMinor(busID string) *int {
	s, err := readString(h.proc("driver", "nvidia", "gpus", busID, "information"))
	if err != nil {
		return nil
	}
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Device Minor:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return &n
			}
		}
	}
	return nil
}

func sysfsOnly(gs []GPU) []GPU {
	var out []GPU
	for _, g := range gs {
		if g.Source == "sysfs" {
			out = append(out, g)
		}
	}
	return out
}

func gpuBusIDs(gs []GPU) string {
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.BusID
	}
	return strings.Join(ids, ", ")
}

// paths classifies every GPU <-> NIC pair and marks each GPU's preferred
// NIC: the closest class, then the same NUMA node; GPUs that share equally
// close NICs (two GPUs and two NICs under one switch) take them in order,
// the way rails are cabled, rather than all piling onto the first.
func paths(gpus []GPU, nics []NIC, pci map[string]PCIDevice) []Path {
	var out []Path
	taken := map[string]int{}
	for _, g := range gpus {
		gd, ok := pci[g.BusID]
		if !ok {
			continue
		}
		first := len(out)
		for _, n := range nics {
			nd, ok := pci[n.BusID]
			if !ok {
				continue
			}
			class := Classify(gd, nd)
			if g.C2C && gd.NUMA == nd.NUMA && (class == PathPHB || class == PathNODE) {
				// Grace: the GPU reaches its CPU over C2C, not PCIe.
				class = PathP2C
			}
			out = append(out, Path{
				GPU: g.BusID, GPUIndex: g.Index, NIC: n.Name, NICBusID: n.BusID,
				Class:    class,
				SameNUMA: gd.NUMA == nd.NUMA,
				Bridges:  PathBridges(gd, nd),
			})
		}
		mine := out[first:]
		if len(mine) == 0 {
			continue
		}
		best := 0
		for i := range mine {
			if closer(mine[i], mine[best], taken) {
				best = i
			}
		}
		mine[best].Preferred = true
		taken[mine[best].NIC]++
	}
	return out
}

func closer(a, b Path, taken map[string]int) bool {
	if a.Class.Rank() != b.Class.Rank() {
		return a.Class.Rank() < b.Class.Rank()
	}
	if a.SameNUMA != b.SameNUMA {
		return a.SameNUMA
	}
	if taken[a.NIC] != taken[b.NIC] {
		return taken[a.NIC] < taken[b.NIC]
	}
	return a.NIC < b.NIC
}

// collectACS reads ACS on every bridge of every preferred path, once per
// bridge.
func (e *Evidence) collectACS(h Host, pci map[string]PCIDevice) {
	done := map[string]bool{}
	var bridges []string
	for _, p := range e.Paths {
		if !p.Preferred {
			continue
		}
		for _, b := range p.Bridges {
			if !done[b] {
				done[b] = true
				bridges = append(bridges, b)
			}
		}
	}
	sort.Strings(bridges)
	for _, b := range bridges {
		if _, ok := pci[b]; !ok {
			continue
		}
		a, err := h.BridgeACS(b)
		switch {
		case err == nil:
			e.ACS = append(e.ACS, a)
		case errors.Is(err, ErrAbsent):
			// No ACS capability: nothing can redirect here.
		default:
			e.problem("acs", false, err)
		}
	}
}

func (e *Evidence) collectIOMMU(h Host) {
	io, err := h.NodeIOMMU()
	if err != nil {
		e.problem("iommu", false, err)
	}
	io.Mode = IOMMUOff
	for _, g := range e.GPUs {
		io.Mode = worseIOMMU(io.Mode, g.IOMMU.Mode)
	}
	for _, n := range e.NICs {
		io.Mode = worseIOMMU(io.Mode, n.IOMMU.Mode)
	}
	e.IOMMU = io
}

// procDriverVersion reads the kernel module's version when NVML is silent:
// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ...".
func procDriverVersion(h Host) string {
	s, err := readString(h.proc("driver", "nvidia", "version"))
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	for i, w := range f {
		if strings.HasSuffix(w, "x86_64") || strings.HasSuffix(w, "aarch64") || strings.HasSuffix(w, "ppc64le") {
			if i+1 < len(f) {
				return f[i+1]
			}
		}
	}
	return ""
}

// DefaultSources picks NVML and the CUDA/verbs probe for the host: the
// live libraries on "/", the snapshot's recordings for a tree.
func DefaultSources(h Host) Sources {
	if h.Live() {
		return Sources{NVML: nvml.New(), GPUDirect: LiveGPUDirect{}}
	}
	gd, gdErr := h.recordedGPUDirect()
	b, err := os.ReadFile(h.path(nvmlRecording))
	if err != nil {
		return Sources{NVMLErr: fmt.Errorf("%w: no NVML recording for host root %q: %w", ErrNVML, h.Root(), err), GPUDirect: gd, GPUDirectErr: gdErr}
	}
	rec, err := ParseNVMLRecording(b)
	if err != nil {
		return Sources{NVMLErr: fmt.Errorf("%w: %q: %w", ErrNVML, h.path(nvmlRecording), err)}
	}
	return Sources{NVML: ReplayNVML(rec), GPUDirect: gd, GPUDirectErr: gdErr}
}
