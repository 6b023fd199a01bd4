package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gdrcheck/gdrcheck/internal/filekind"
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
	Taken    time.Time `json:"taken"`              // the clock when the snapshot began
	Hostname string    `json:"hostname"`           // proc/sys/kernel/hostname
	Tool     string    `json:"tool"`               // "gdrcheck <version>"
	Problems []string  `json:"problems,omitempty"` // what could not be read or recorded; optional
}

// Snapshot records the parts of the host the collectors read into dst:
// sysfs and procfs files under dst/sys and dst/proc with their symlinks,
// device node names under dst/dev, the names of the NCCL libraries as
// empty files and links where they lie, and NVML's and rdmamap's answers and
// the container facts under dst/gdrcheck. `gdrcheck run --host-root dst`
// replays it on any machine. src.GPUDirect, when set, is run and its
// answers recorded too.
func (h Host) Snapshot(dst string, src Sources, tool string) (SnapshotMeta, error) {
	// /dev before NVML runs: it creates the device nodes it misses.
	var view DeviceView
	if h.Live() {
		view = ObserveDevices()
	}
	s := &snapshotter{h: h, w: NewSnapshotWriter(dst), done: map[string]bool{}}
	meta := SnapshotMeta{Taken: time.Now().UTC(), Tool: tool}
	meta.Hostname, _ = readString(h.proc("sys", "kernel", "hostname"))
	if err := s.pciDevices(); err != nil {
		return meta, err
	}
	s.rdmaClasses()
	s.iommu()
	s.modules()
	s.ncclFiles()
	s.procAndCPU()
	s.deviceNames()
	rec := s.nvml(src)
	s.rdmaMap()
	s.probed(src, rec, view)
	s.kernelLog()
	meta.Problems = s.problems
	s.w.JSON("gdrcheck/snapshot.json", meta)
	return meta, s.w.Err()
}

// pciDevices records every PCI function with the bridges above it.
func (s *snapshotter) pciDevices() error {
	dir := s.h.sys("bus", "pci", "devices")
	devs, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading %q: %w", dir, err)
	}
	for _, d := range devs {
		s.pciDevice(d.Name())
	}
	return nil
}

// rdmaClasses records the RDMA devices, their used GIDs, their verbs, MAD
// and CM nodes, and the network devices.
func (s *snapshotter) rdmaClasses() {
	s.globLinksAndTrees("sys/class/infiniband/*", 6)
	s.gidTables()
	s.globLinksAndTrees("sys/class/infiniband_verbs/*", 1)
	s.globLinksAndTrees("sys/class/infiniband_mad/*", 1)
	s.globLinksAndTrees("sys/class/infiniband_cm/*", 1)
	s.globLinksAndTrees("sys/class/net/*", 1)
}

// iommu records the IOMMUs and each group's type and devices.
func (s *snapshotter) iommu() {
	s.globLinksAndTrees("sys/class/iommu/*", 0)
	s.glob("sys/kernel/iommu_groups/*/type")
	s.globLinks("sys/kernel/iommu_groups/*/devices/*")
}

// modules records the modules of the direct path and those that displace
// them, the peer-memory clients, and what refuses the NVIDIA modules or
// tells a VM.
func (s *snapshotter) modules() {
	for _, m := range append([]string{"nvidia", "nvidia_peermem", "nv_peer_mem", "nvidia_uvm", "ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "gdrdrv"}, conflictingModules...) {
		s.glob("sys/module/" + m) // loaded, whatever files it has
		s.glob("sys/module/" + m + "/version")
		s.glob("sys/module/" + m + "/refcnt")
		s.glob("sys/module/" + m + "/parameters/*")
	}
	s.tree("sys/kernel/mm/memory_peers", 3)
	for _, f := range []string{lockdownFile, sigEnforceFile, secureBootVar, hypervisorFile, "proc/sys/kernel/numa_balancing"} {
		s.file(f)
	}
	s.dmi()
}

// ncclFiles records what a job's NCCL is told by: the library's file
// names (the libraries, hundreds of MB, are not recorded), the
// LD_LIBRARY_PATH searched first, the NCCL, UCX and MCA files a job would
// inherit settings from, and the topology file NCCL_TOPO_FILE names.
func (s *snapshotter) ncclFiles() {
	h := s.h
	for _, e := range h.ncclRecorded() {
		if e.target != "" {
			s.w.Symlink(e.rel, e.target)
		} else {
			s.w.WriteFile(e.rel, nil)
		}
	}
	if !h.Live() {
		s.file(ldLibraryPathRecording)
	} else if ld := os.Getenv("LD_LIBRARY_PATH"); ld != "" {
		s.w.WriteFile(ldLibraryPathRecording, []byte(ld+"\n"))
	}
	home := os.Getenv("HOME")
	if home == "" {
		home = "/root"
	}
	for _, f := range overrideFiles(home, os.Environ()) {
		s.file(f)
	}
	if name, real, ok := h.topoRecorded(os.Environ()); ok {
		if b, err := readBounded(h.path(real)); err == nil {
			s.w.WriteFile(name, b)
		}
	}
}

// procAndCPU records the procfs files the collectors read, the first
// CPU's cpuinfo (the CPU model and the hypervisor flag, kernel_platform.go;
// DMI and sys/hypervisor/type are recorded by modules) and each CPU's
// package and core, the core indexes of gres.conf.
func (s *snapshotter) procAndCPU() {
	for _, f := range []string{"sys/kernel/hostname", "sys/kernel/osrelease", "sys/kernel/version", "cmdline", "version", "stat", "meminfo", "devices", "misc", "driver/nvidia/version", "driver/nvidia/params"} {
		s.file("proc/" + f)
	}
	s.glob("proc/driver/nvidia/gpus/*/information")
	if block, err := s.h.firstCPUInfo(); err == nil {
		s.w.WriteFile("proc/cpuinfo", []byte(block))
	}
	s.glob("sys/devices/system/cpu/cpu*/topology/physical_package_id")
	s.glob("sys/devices/system/cpu/cpu*/topology/core_id")
}

// deviceNames records device nodes by name under dev/, where rdmamap
// looks for them; what each is (type, numbers) and whether it opened goes
// into the container recording.
func (s *snapshotter) deviceNames() {
	for _, pat := range []string{"dev/infiniband/*", "dev/nvidia*", "dev/gdrdrv"} {
		matches, _ := filepath.Glob(s.h.path(pat))
		for _, m := range matches {
			rel, _ := filepath.Rel(s.h.root, m)
			s.w.WriteFile(rel, nil)
		}
	}
}

// nvml records NVML's answers, or the return code it failed with, so the
// replay fails the same way.
func (s *snapshotter) nvml(src Sources) NVMLRecording {
	rec := NVMLRecording{Library: src.NVMLLibrary}
	f, err := CollectNVML(src.NVML)
	if rec.Library == "" && s.h.Live() {
		rec.Library = loadedLibrary("libnvidia-ml.so")
	}
	if err != nil {
		rec.InitError = returnName(nvml.ERROR_UNKNOWN)
		var ne *NVMLError
		if errors.As(err, &ne) {
			rec.InitError = returnName(ne.Ret)
		}
		s.problems = append(s.problems, err.Error())
	} else {
		rec.NVMLFacts = f
	}
	s.w.JSON(nvmlRecording, rec)
	return rec
}

// rdmaMap records rdmamap's answers.
func (s *snapshotter) rdmaMap() {
	rm, err := s.h.RDMAMap()
	if err != nil {
		s.problems = append(s.problems, err.Error())
	}
	s.w.JSON(rdmaRecording, rm)
}

// probed records the GPUDirect probe's answers and the container facts.
// The probe registers with each GPU's rail NIC and the container facts
// name each GPU's node, so both need the node's evidence first, collected
// over the NVML answers recorded (rec).
func (s *snapshotter) probed(src Sources, rec NVMLRecording, view DeviceView) {
	h := s.h
	ev := Collect(h, Sources{NVML: ReplayNVML(rec)})
	if src.GPUDirect != nil {
		ev.ProbeGPUDirect(src.GPUDirect, nil)
		s.w.JSON(gpudirectRecording, GPUDirectRecording{CUDA: ev.CUDA, Verbs: ev.Verbs})
	}
	if !h.Live() {
		s.file(containerRecording)
		return
	}
	c, err := h.CollectContainer(ev, view)
	if err != nil {
		s.problems = append(s.problems, err.Error())
		return
	}
	s.w.JSON(containerRecording, c)
}

// kernelLog keeps only the kernel log lines about peer memory, Xids and
// module loading: the rest of the log is none of the recipient's
// business.
func (s *snapshotter) kernelLog() {
	if lines, ok := s.h.kernelLog(); ok {
		s.w.WriteFile(kmsgRecording, []byte(strings.Join(lines, "\n")))
	}
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
	w        *SnapshotWriter
	done     map[string]bool
	problems []string
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
		s.w.Symlink(rel, t)
	case fi.Mode().IsRegular():
		b, err := readBounded(src)
		if err != nil {
			if !errors.Is(err, fs.ErrPermission) {
				s.problems = append(s.problems, err.Error())
			}
			return
		}
		s.w.WriteFile(rel, b)
	case fi.IsDir():
		s.w.Mkdir(rel)
	}
}

// readBounded reads a sysfs or procfs file, which reports a size of 4096
// or 0 whatever it holds, up to 1 MiB. It opens p O_NONBLOCK and reads
// it only if fstat says it is a regular file: a FIFO named by
// NCCL_TOPO_FILE must not block the snapshot.
func readBounded(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w: a %s, not read", errNotRegularFile, filekind.Of(fi.Mode()))}
	}
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
