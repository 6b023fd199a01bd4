package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The attributes of a PCI function the collectors read. Only these are
// recorded: a whole sysfs copy is large and holds files that block or
// change the device when read (rom, reset).
var pciAttrs = []string{
	"class", "vendor", "device", "subsystem_vendor", "subsystem_device", "revision",
	"numa_node", "local_cpulist", "local_cpus", "current_link_speed", "current_link_width",
	"max_link_speed", "max_link_width", "config", "iommu_group", "driver",
	"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal",
}

// SnapshotMeta is gdrcheck/snapshot.json: when and by what a recording was
// made.
type SnapshotMeta struct {
	Taken    time.Time `json:"taken"`
	Hostname string    `json:"hostname"`
	Tool     string    `json:"tool"`
	Problems []string  `json:"problems,omitempty"`
}

// Snapshot records the parts of the host the collectors read into dst:
// sysfs and procfs files under dst/sys and dst/proc with their symlinks,
// device node names under dst/dev, the names of the NCCL libraries as
// empty files and links where they lie, and NVML's and rdmamap's answers and
// the container facts under dst/gdrcheck. `gdrcheck run --host-root dst`
// replays it on any machine. src.GPUDirect, when set, is run and its
// answers recorded too.
func (h Host) Snapshot(dst string, src Sources, tool string) (SnapshotMeta, error) {
	lib := src.NVML
	// /dev before NVML runs: it creates the device nodes it misses.
	var view DeviceView
	if h.Live() {
		view = ObserveDevices()
	}
	s := &snapshotter{h: h, dst: dst, done: map[string]bool{}}
	meta := SnapshotMeta{Taken: time.Now().UTC(), Tool: tool}
	meta.Hostname, _ = readString(h.proc("sys", "kernel", "hostname"))

	devs, err := os.ReadDir(h.sys("bus", "pci", "devices"))
	if err != nil {
		return meta, fmt.Errorf("reading %q: %w", h.sys("bus", "pci", "devices"), err)
	}
	for _, d := range devs {
		s.pciDevice(d.Name())
	}
	s.globLinksAndTrees("sys/class/infiniband/*", 6)
	s.gidTables()
	s.globLinksAndTrees("sys/class/infiniband_verbs/*", 1)
	s.globLinksAndTrees("sys/class/infiniband_mad/*", 1)
	s.globLinksAndTrees("sys/class/infiniband_cm/*", 1)
	s.globLinksAndTrees("sys/class/net/*", 1)
	s.globLinksAndTrees("sys/class/iommu/*", 0)
	s.glob("sys/kernel/iommu_groups/*/type")
	s.globLinks("sys/kernel/iommu_groups/*/devices/*")
	for _, m := range append([]string{"nvidia", "nvidia_peermem", "nv_peer_mem", "nvidia_uvm", "ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "gdrdrv"}, conflictingModules...) {
		s.glob("sys/module/" + m) // loaded, whatever files it has
		s.glob("sys/module/" + m + "/version")
		s.glob("sys/module/" + m + "/refcnt")
		s.glob("sys/module/" + m + "/parameters/*")
	}
	s.tree("sys/kernel/mm/memory_peers", 3)
	// What refuses or displaces the NVIDIA modules, and tells a VM.
	for _, f := range []string{lockdownFile, sigEnforceFile, secureBootVar, hypervisorFile, "proc/sys/kernel/numa_balancing"} {
		s.file(f)
	}
	s.dmi()
	// NCCL is told by its file names: they are recorded, the libraries
	// (hundreds of MB) are not; so is the LD_LIBRARY_PATH searched first.
	for _, e := range h.ncclRecorded() {
		if e.target != "" {
			s.symlink(e.rel, e.target)
		} else {
			s.writeFile(e.rel, nil, 0o644)
		}
	}
	if !h.Live() {
		s.file(ldLibraryPathRecording)
	} else if ld := os.Getenv("LD_LIBRARY_PATH"); ld != "" {
		s.writeFile(ldLibraryPathRecording, []byte(ld+"\n"), 0o644)
	}
	// The NCCL, UCX and MCA files a job would inherit settings from.
	home := os.Getenv("HOME")
	if home == "" {
		home = "/root"
	}
	for _, f := range overrideFiles(home, os.Environ()) {
		s.file(f)
	}
	if name, real, ok := h.topoRecorded(os.Environ()); ok {
		if b, err := readBounded(h.path(real)); err == nil {
			s.writeFile(name, b, 0o644)
		}
	}
	for _, f := range []string{"sys/kernel/hostname", "sys/kernel/osrelease", "sys/kernel/version", "cmdline", "version", "stat", "meminfo", "devices", "misc", "driver/nvidia/version", "driver/nvidia/params"} {
		s.file("proc/" + f)
	}
	s.glob("proc/driver/nvidia/gpus/*/information")
	// The CPU model and the hypervisor flag (kernel_platform.go): the first
	// CPU's cpuinfo; DMI and sys/hypervisor/type are recorded above.
	if block, err := h.firstCPUInfo(); err == nil {
		s.writeFile("proc/cpuinfo", []byte(block), 0o644)
	}
	// Each CPU's package and core: the core indexes of gres.conf.
	s.glob("sys/devices/system/cpu/cpu*/topology/physical_package_id")
	s.glob("sys/devices/system/cpu/cpu*/topology/core_id")
	// Device nodes are recorded by name under dev/, where rdmamap looks
	// for them; what each is (type, numbers) and whether it opened goes
	// into the container recording.
	for _, pat := range []string{"dev/infiniband/*", "dev/nvidia*", "dev/gdrdrv"} {
		matches, _ := filepath.Glob(h.path(pat))
		for _, m := range matches {
			rel, _ := filepath.Rel(h.root, m)
			s.writeFile(rel, nil, 0o644)
		}
	}

	rec := NVMLRecording{Library: src.NVMLLibrary}
	f, err := CollectNVML(lib)
	if rec.Library == "" && h.Live() {
		rec.Library = loadedLibrary("libnvidia-ml.so")
	}
	if err != nil {
		// Record the return code, so the replay fails the same way.
		rec.InitError = returnName(nvml.ERROR_UNKNOWN)
		var ne *NVMLError
		if errors.As(err, &ne) {
			rec.InitError = returnName(ne.Ret)
		}
		s.problems = append(s.problems, err.Error())
	} else {
		rec.NVMLFacts = f
	}
	s.json(nvmlRecording, rec)
	rm, err := h.RDMAMap()
	if err != nil {
		s.problems = append(s.problems, err.Error())
	}
	s.json(rdmaRecording, rm)
	// The probe registers with each GPU's rail NIC and the container facts
	// name each GPU's node, so both need the node's evidence first.
	ev := Collect(h, Sources{NVML: ReplayNVML(rec)})
	if src.GPUDirect != nil {
		ev.ProbeGPUDirect(src.GPUDirect, nil)
		s.json(gpudirectRecording, GPUDirectRecording{CUDA: ev.CUDA, Verbs: ev.Verbs})
	}
	if h.Live() {
		c, err := h.CollectContainer(ev, view)
		if err != nil {
			s.problems = append(s.problems, err.Error())
		} else {
			s.json(containerRecording, c)
		}
	} else {
		s.file(containerRecording)
	}
	// Only the kernel log lines about peer memory, Xids and module
	// loading are kept: the rest of the log is none of the recipient's
	// business.
	if lines, ok := h.kernelLog(); ok {
		s.writeFile(kmsgRecording, []byte(strings.Join(lines, "\n")), 0o644)
	}
	meta.Problems = s.problems
	s.json("gdrcheck/snapshot.json", meta)
	if s.err != nil {
		return meta, s.err
	}
	return meta, nil
}

// gidTables records the used entries of every port's GID table, with
// their types and netdevs (rdma_roce.go reads them): the other entries of the
// 256 are zeros whose attributes the kernel refuses to read.
func (s *snapshotter) gidTables() {
	ports, _ := filepath.Glob(s.h.path("sys/class/infiniband/*/ports/*"))
	for _, p := range ports {
		rel, _ := filepath.Rel(s.h.root, p)
		real, ok := s.realRel(rel)
		if !ok {
			continue
		}
		ents, err := os.ReadDir(s.h.path(real, "gids"))
		if err != nil || len(ents) > maxGIDs {
			continue
		}
		for _, e := range ents {
			if g, err := readSmall(s.h.path(real, "gids", e.Name())); err != nil || zeroGID(g) {
				continue
			}
			s.file(real + "/gids/" + e.Name())
			s.file(real + "/gid_attrs/types/" + e.Name())
			s.file(real + "/gid_attrs/ndevs/" + e.Name())
		}
	}
}

// dmi records the DMI vendor and product, which tell a virtual machine,
// and nothing else of the DMI table (serial numbers, asset tags).
func (s *snapshotter) dmi() {
	s.file(dmiDir)
	if real, ok := s.realRel(dmiDir); ok {
		s.file(real)
		s.file(real + "/sys_vendor")
		s.file(real + "/product_name")
	}
}

// skipDirs are sysfs directories that are large and unread: 256 GID
// entries per port, P_Keys, network queues, power management.
var skipDirs = map[string]bool{"gids": true, "gid_attrs": true, "pkeys": true, "queues": true, "power": true, "subsystem": true, "msi_irqs": true}

type snapshotter struct {
	h        Host
	dst      string
	done     map[string]bool
	problems []string
	err      error // first write error: the recording is then unusable
}

func (s *snapshotter) writeFile(rel string, b []byte, mode fs.FileMode) {
	p := filepath.Join(s.dst, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil && s.err == nil {
		s.err = err
	}
	if err := os.WriteFile(p, b, mode); err != nil && s.err == nil {
		s.err = err
	}
}

// symlink recreates a link at rel pointing to target.
func (s *snapshotter) symlink(rel, target string) {
	p := filepath.Join(s.dst, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil && s.err == nil {
		s.err = err
	}
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil && s.err == nil {
		s.err = err
	}
}

func (s *snapshotter) json(rel string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil && s.err == nil {
		s.err = err
	}
	s.writeFile(rel, append(b, '\n'), 0o644)
}

// file copies one file, or recreates one symlink, relative to the root.
// Unreadable files are noted, not fatal: sysfs has write-only attributes.
func (s *snapshotter) file(rel string) {
	if s.done[rel] {
		return
	}
	s.done[rel] = true
	src := s.h.path(rel)
	fi, err := os.Lstat(src)
	if err != nil {
		return
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(src)
		if err != nil {
			s.problems = append(s.problems, err.Error())
			return
		}
		s.symlink(rel, t)
	case fi.Mode().IsRegular():
		b, err := readBounded(src)
		if err != nil {
			if !errors.Is(err, fs.ErrPermission) {
				s.problems = append(s.problems, err.Error())
			}
			return
		}
		s.writeFile(rel, b, 0o644)
	case fi.IsDir():
		if err := os.MkdirAll(filepath.Join(s.dst, rel), 0o755); err != nil && s.err == nil {
			s.err = err
		}
	}
}

// readBounded reads a sysfs or procfs file, which reports a size of 4096
// or 0 whatever it holds, up to 1 MiB.
func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, 4096)
	buf := make([]byte, 4096)
	for len(b) < 1<<20 {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil || n == 0 {
			break
		}
	}
	return b, nil
}

// realRel resolves a path under the root to its real location, relative
// to the root.
func (s *snapshotter) realRel(rel string) (string, bool) {
	p, err := filepath.EvalSymlinks(s.h.path(rel))
	if err != nil {
		return "", false
	}
	r, err := filepath.Rel(s.h.root, p)
	if err != nil || strings.HasPrefix(r, "..") {
		return "", false
	}
	return r, true
}

// pciDevice records a bus/pci/devices link, the device's attributes and
// those of every bridge above it up to the host bridge.
func (s *snapshotter) pciDevice(name string) {
	link := "sys/bus/pci/devices/" + name
	s.file(link)
	real, ok := s.realRel(link)
	if !ok {
		return
	}
	for dir := real; strings.HasPrefix(dir, "sys/devices/pci"); dir = filepath.Dir(dir) {
		s.file(dir)
		for _, a := range pciAttrs {
			s.file(dir + "/" + a)
		}
	}
}

func (s *snapshotter) glob(pat string) {
	matches, _ := filepath.Glob(s.h.path(pat))
	for _, m := range matches {
		rel, _ := filepath.Rel(s.h.root, m)
		s.file(rel)
	}
}

func (s *snapshotter) globLinks(pat string) { s.glob(pat) }

// globLinksAndTrees records class links and the directories they point to,
// depth levels deep.
func (s *snapshotter) globLinksAndTrees(pat string, depth int) {
	matches, _ := filepath.Glob(s.h.path(pat))
	for _, m := range matches {
		rel, _ := filepath.Rel(s.h.root, m)
		s.file(rel)
		if real, ok := s.realRel(rel); ok {
			s.tree(real, depth)
		}
	}
}

// tree records a directory's files and links, descending depth levels
// into real subdirectories (not through links, which leave the device).
func (s *snapshotter) tree(rel string, depth int) {
	s.file(rel)
	ents, err := os.ReadDir(s.h.path(rel))
	if err != nil {
		return
	}
	for _, e := range ents {
		child := rel + "/" + e.Name()
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			s.file(child)
		case e.IsDir():
			if depth > 0 && !skipDirs[e.Name()] {
				s.tree(child, depth-1)
			}
		default:
			s.file(child)
		}
	}
}
