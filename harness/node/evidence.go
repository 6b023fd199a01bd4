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
	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/stopwatch"
)

// Evidence is everything collected about one node, once per run. Suites
// read it and never go to the host themselves.
type Evidence struct {
	Host     HostFacts   `json:"host"`      // proc/sys/kernel, NVML, proc/driver/nvidia/version
	GPUs     []GPU       `json:"gpus"`      // NVML (or gdrcheck/nvml.json) joined with sys/bus/pci/devices
	NICs     []NIC       `json:"nics"`      // sys/class/infiniband, rdmamap (or gdrcheck/rdma.json)
	Paths    []Path      `json:"paths"`     // every GPU <-> NIC pair, from the sys/bus/pci/devices links
	GPUPairs []GPUPair   `json:"gpu_pairs"` // every GPU <-> GPU pair, from NVML (or gdrcheck/nvml.json)
	ACS      []ACS       `json:"acs"`       // sys/bus/pci/devices/<bridge>/config of the bridges on GPU <-> preferred NIC and GPU <-> GPU paths
	PCIe     PCIeFacts   `json:"pcie"`      // device control, AER, peer paths, platform (pci_paths.go)
	IOMMU    IOMMU       `json:"iommu"`     // sys/class/iommu, sys/kernel/iommu_groups, proc/cmdline
	Kernel   KernelFacts `json:"kernel"`    // sys/module, proc/driver/nvidia, the kernel log (kernel_facts.go)
	// CPUCores are the node's cores in hwloc's logical order (Slurm's
	// core indexes); empty where sysfs has no CPU topology.
	CPUCores []CPUCore `json:"cpu_cores,omitempty"` // sys/devices/system/cpu/cpu*/topology; optional
	// NCCL is the libnccl.so.2 the loader would give a program, by its
	// file name; nil when none was found.
	NCCL *NCCLLibrary `json:"nccl_library,omitempty"` // LD_LIBRARY_PATH and the library directories; optional
	// Overrides are the NCCL, UCX and MCA settings a job here inherits;
	// nil where there are none.
	Overrides *Overrides `json:"overrides,omitempty"` // the environment, etc/nccl.conf and the like (overrides.go); optional
	// CUDA and Verbs are filled by ProbeGPUDirect, only for the suites
	// that need them (Probed).
	Probed bool       `json:"probed"` // ProbeGPUDirect ran
	CUDA   CUDAFacts  `json:"cuda"`   // libcuda.so.1 live, gdrcheck/gpudirect.json recorded
	Verbs  VerbsFacts `json:"verbs"`  // libibverbs.so.1 live, gdrcheck/gpudirect.json recorded
	// Container is filled for the container suite: the view from the
	// process gdrcheck runs in.
	Container *ContainerFacts `json:"container,omitempty"` // this process, or gdrcheck/container.json; optional
	// NVMLOnly are the bus ids of GPUs NVML lists that sysfs does not
	// have: left out of GPUs, since no check can place them.
	NVMLOnly []string  `json:"nvml_only_gpus,omitempty"` // NVML's GPUs missing from sys/bus/pci/devices; optional
	Problems []Problem `json:"problems,omitempty"`       // every source above that failed; optional
	// Timings are the steps of reading the node, in order; results.json
	// carries them beside the node, not in its evidence.
	Timings *stopwatch.Watch `json:"-"`
}

// HostFacts names the node and its software.
type HostFacts struct {
	Hostname          string `json:"hostname"`                      // proc/sys/kernel/hostname
	Root              string `json:"root"`                          // the --host-root read, or the label Relabel gave it
	Kernel            string `json:"kernel"`                        // proc/sys/kernel/osrelease, else proc/version
	DriverVersion     string `json:"driver_version,omitempty"`      // NVML, else proc/driver/nvidia/version
	NVMLVersion       string `json:"nvml_version,omitempty"`        // nvmlSystemGetNVMLVersion; optional
	CUDADriverVersion int    `json:"cuda_driver_version,omitempty"` // nvmlSystemGetCudaDriverVersion; optional
}

// Path is the PCIe path between one GPU and one NIC.
type Path struct {
	GPU       string    `json:"gpu"`               // bus id, as GPU.BusID
	GPUIndex  int       `json:"gpu_index"`         // as GPU.Index
	NIC       string    `json:"nic"`               // as NIC.Name
	NICBusID  string    `json:"nic_bus_id"`        // as NIC.BusID
	Class     PathClass `json:"path"`              // Classify over both sys/bus/pci/devices links and numa_node
	SameNUMA  bool      `json:"same_numa"`         // sys/bus/pci/devices/<bus id>/numa_node of both
	Preferred bool      `json:"preferred"`         // the closest NIC of this GPU
	Bridges   []string  `json:"bridges,omitempty"` // PathBridges over both links; optional
}

// Problem is evidence that could not be collected. Fatal problems mean the
// node could not be evaluated at all: no spec runs. Incomplete ones mean
// it could not be fully evaluated: a source could not be used (NVML,
// libcuda, libibverbs) or two sources disagree; the specs judge what the
// others answered and the run exits 2. The rest leave a gap that the
// specs needing it report.
type Problem struct {
	Source     string `json:"source"`               // nvml, libcuda, libibverbs, gpus, sysfs, rdmamap, acs...
	Message    string `json:"message"`              // the source's error, naming its file or call
	Fatal      bool   `json:"fatal"`                // no spec can run
	Incomplete bool   `json:"incomplete,omitempty"` // the node is judged in part
	// Cause is the likely cause and what to do, where the error is a
	// known one.
	Cause string `json:"cause,omitempty"` // optional
}

// String is the message and, where known, its likely cause.
func (p Problem) String() string {
	if p.Cause == "" {
		return p.Message
	}
	return p.Message + ": " + p.Cause
}

// Fatal joins the fatal problems into one error, or returns nil.
func (e *Evidence) Fatal() error {
	return e.joined(func(p Problem) bool { return p.Fatal })
}

// Incomplete joins every problem that keeps the node from being fully
// evaluated, fatal or incomplete, with their causes, in the order they
// were met; nil when there is none.
func (e *Evidence) Incomplete() error {
	return e.joined(func(p Problem) bool { return p.Fatal || p.Incomplete })
}

func (e *Evidence) joined(keep func(Problem) bool) error {
	var msgs []string
	for _, p := range e.Problems {
		if keep(p) {
			msgs = append(msgs, p.String())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// Unusable returns the problem of a source that could not be used at all
// (nvml, libcuda, libibverbs), if it could not.
func (e *Evidence) Unusable(source string) (Problem, bool) {
	for _, p := range e.Problems {
		if p.Source == source && p.Incomplete {
			return p, true
		}
	}
	return Problem{}, false
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

// incomplete records a problem that keeps the node from being fully
// evaluated, with its likely cause.
func (e *Evidence) incomplete(source string, err error, cause string) {
	e.Problems = append(e.Problems, Problem{Source: source, Message: err.Error(), Incomplete: true, Cause: cause})
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
		e.Problems[i].Cause = strings.ReplaceAll(e.Problems[i].Cause, root, label)
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
	// NVMLLibrary is the libnvidia-ml file NVML was loaded from, where a
	// recording knows it; its name carries the library's version.
	NVMLLibrary string
	// GPUDirect probes libcuda and libibverbs; nil with the reason in
	// GPUDirectErr.
	GPUDirect    GPUDirectProbe
	GPUDirectErr error
	// Env is the environment a job inherits, for the override audit;
	// nil means this process's (os.Environ()), replaying a recording too:
	// the environment is the job's, not the node's.
	Env []string
}

// nvmlRecording is where snapshots keep NVML's answers.
const nvmlRecording = "gdrcheck/nvml.json"

// Collect reads the node once. It never panics on a broken host: what it
// cannot read becomes a Problem naming the file or library.
func Collect(h Host, src Sources) *Evidence {
	e := &Evidence{Host: HostFacts{Root: h.Root()}}
	clk := stopwatch.Start()
	e.Timings = clk
	nv := startNVML(h, src)
	// An early return still waits, so no NVML call outlives Collect.
	defer func() { <-nv.done }()
	e.Host.Hostname, _ = readString(h.proc("sys", "kernel", "hostname"))
	if k, err := h.kernelRelease(); err == nil {
		e.Host.Kernel = k
	} else {
		e.problem("procfs", false, err)
	}

	pci, err := h.PCIDevices()
	clk.Lap("procfs and sysfs: host and PCI devices")
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

	nf, nvmlOK := nv.join(e, clk)
	e.GPUs, e.NVMLOnly, err = mergeGPUs(h, nf.GPUs, sysGPUs)
	if err != nil {
		e.problem("sysfs", true, err)
		return e
	}
	e.GPUPairs = pairsWithout(nf.Pairs, e.NVMLOnly)
	if len(e.NVMLOnly) > 0 {
		e.incomplete(SourceGPUs, fmt.Errorf("NVML lists GPU(s) %s that sysfs does not have under %q", strings.Join(e.NVMLOnly, ", "), h.sys("bus", "pci", "devices")),
			"no check can place them, so they are left out: an NVML recording of another node, or a sysfs that misses devices")
	}
	if len(e.GPUs) == 0 {
		e.problem("gpus", true, fmt.Errorf("no NVIDIA GPU found: no PCI device of vendor 0x10de with a display or 3D class under %q", h.sys("bus", "pci", "devices")))
	} else if hidden := sysfsOnly(e.GPUs); nvmlOK && len(hidden) > 0 {
		e.incomplete(SourceGPUs, fmt.Errorf("sysfs has NVIDIA GPU(s) %s that NVML does not list", gpuBusIDs(hidden)), notListed)
	}

	clk.Lap("sysfs: GPUs")
	rm, err := h.RDMAMap()
	if err != nil {
		e.problem("rdmamap", false, err)
	}
	e.NICs, err = h.NICs(pci, rm)
	if err != nil && !errors.Is(err, ErrAbsent) {
		e.problem("sysfs", true, err)
		return e
	}

	clk.Lap("sysfs: RDMA NICs")
	e.Paths = paths(e.GPUs, e.NICs, pci)
	e.collectPCIe(h, pci)
	e.collectACS(h, pci)
	e.collectIOMMU(h)
	clk.Lap("sysfs: paths, PCIe, ACS, IOMMU")
	if e.Kernel, err = h.Kernel(); err != nil {
		e.problem("kernel", false, err)
	}
	clk.Lap("kernel: modules, driver, log")
	e.nameDriverCauses()
	// Only the scheduler's maps use the topology: where it is absent
	// they leave the cores out and say so.
	if e.CPUCores, err = h.CPUCores(); err != nil && !errors.Is(err, ErrAbsent) {
		e.problem("sysfs", false, err)
	}
	if e.NCCL, err = h.NCCLLibrary(); err != nil && !errors.Is(err, ErrAbsent) {
		e.problem("nccl", false, err)
	}
	env := src.Env
	if env == nil {
		env = os.Environ()
	}
	if o, err := h.Overrides(env); err != nil {
		e.problem("overrides", false, err)
	} else if len(o.Settings) > 0 || o.Topo != nil || len(o.Unreadable) > 0 {
		e.Overrides = &o
	}
	clk.Lap("cores, NCCL library, overrides")
	return e
}

// collectNVML reads NVML's facts and the versions it gives the host.
// NVML that cannot be used leaves the GPUs to sysfs: their links, NUMA
// nodes, paths, ACS and IOMMU are still judged; ok says it could be used.
func (e *Evidence) collectNVML(h Host, src Sources) (nf NVMLFacts, ok bool) {
	nvmlErr := src.NVMLErr
	switch {
	case src.NVML != nil:
		var err error
		if nf, err = CollectNVML(src.NVML); err == nil {
			ok = true
		} else {
			nvmlErr = err
		}
	case nvmlErr == nil:
		nvmlErr = fmt.Errorf("%w: no NVML source", ErrNVML)
	}
	e.Host.DriverVersion = nf.DriverVersion
	e.Host.NVMLVersion = nf.NVMLVersion
	e.Host.CUDADriverVersion = nf.CUDADriverVersion
	if e.Host.DriverVersion == "" {
		e.Host.DriverVersion = procDriverVersion(h)
	}
	if !ok {
		lib := src.NVMLLibrary
		if lib == "" && h.Live() {
			lib = loadedLibrary("libnvidia-ml.so")
		}
		e.incomplete(SourceNVML, nvmlErr, nvmlCause(nvmlErr, procDriverVersion(h), lib))
	}
	return nf, ok
}

// mergeGPUs joins NVML's GPUs with sysfs's by bus id; sysfs adds NUMA, CPU
// list and link speed, and stands alone when NVML did not answer. GPUs
// NVML lists and sysfs lacks are returned apart, by bus id.
func mergeGPUs(h Host, nv []GPU, sys map[string]PCIDevice) ([]GPU, []string, error) {
	var out []GPU
	var nvmlOnly []string
	seen := map[string]bool{}
	for _, g := range nv {
		d, ok := sys[g.BusID]
		if !ok {
			nvmlOnly = append(nvmlOnly, g.BusID)
			continue
		}
		g.Source = "nvml+sysfs"
		g.NUMANode, g.CPUList, g.PCIe.Sysfs = d.NUMA, d.CPUList, d.Link
		seen[g.BusID] = true
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
			return nil, nil, err
		}
		out[i].IOMMU = io
		out[i].Driver = h.pciDriver(out[i].BusID)
		if out[i].Minor == nil || out[i].Name == "" {
			minor, model := h.procInformation(out[i].BusID)
			if out[i].Minor == nil {
				out[i].Minor = minor
			}
			if out[i].Name == "" {
				out[i].Model = model
			}
		}
	}
	return out, nvmlOnly, nil
}

// pairsWithout drops the pairs that name one of the GPUs left out.
func pairsWithout(pairs []GPUPair, gone []string) []GPUPair {
	if len(gone) == 0 {
		return pairs
	}
	var out []GPUPair
	for _, p := range pairs {
		if !slices.Contains(gone, p.A) && !slices.Contains(gone, p.B) {
			out = append(out, p)
		}
	}
	return out
}

// procInformation reads a GPU's device minor ("Device Minor: 1") and
// model ("Model: NVIDIA H200") from the driver's
// proc/driver/nvidia/gpus/<bus id>/information, which names /dev/nvidiaN
// and the model even where NVML cannot see the GPU (a container that was
// not given it, a driver/library mismatch). Nil and "" where absent.
func (h Host) procInformation(busID string) (minor *int, model string) {
	s, err := readString(h.proc("driver", "nvidia", "gpus", busID, "information"))
	if err != nil {
		return nil, ""
	}
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Device Minor:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				minor = &n
			}
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Model:"); ok {
			model = strings.TrimSpace(v)
		}
	}
	return minor, model
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

// collectACS reads ACS on every bridge of every preferred path and of
// every GPU peer path, once per bridge.
func (e *Evidence) collectACS(h Host, pci map[string]PCIDevice) {
	done := map[string]bool{}
	var bridges []string
	add := func(bs []string) {
		for _, b := range bs {
			if !done[b] {
				done[b] = true
				bridges = append(bridges, b)
			}
		}
	}
	for _, p := range e.Paths {
		if p.Preferred {
			add(p.Bridges)
		}
	}
	for _, p := range e.PCIe.PeerPaths {
		add(p.Bridges)
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
	src := Sources{GPUDirect: gd, GPUDirectErr: gdErr}
	b, err := readRecording(h.path(nvmlRecording))
	if errors.Is(err, bounded.ErrTooLarge) {
		src.NVMLErr = fmt.Errorf("%w: %w", ErrNVML, err)
		return src
	}
	if err != nil {
		src.NVMLErr = fmt.Errorf("%w: no NVML recording for host root %q: %w", ErrNVML, h.Root(), err)
		return src
	}
	rec, err := ParseNVMLRecording(b)
	if err != nil {
		src.NVMLErr = fmt.Errorf("%w: %q: %w", ErrNVML, h.path(nvmlRecording), err)
		return src
	}
	src.NVML, src.NVMLLibrary = ReplayNVML(rec), rec.Library
	return src
}
