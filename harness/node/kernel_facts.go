package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// Module flavours of the NVIDIA kernel driver. Only the open modules
// (R515+) export GPU memory as dma-buf.
const (
	FlavourOpen        = "open"
	FlavourProprietary = "proprietary"
)

// KernelFacts are the kernel-side facts of the peer-memory paths.
type KernelFacts struct {
	Release       string      `json:"release"`        // proc/sys/kernel/osrelease
	DriverFlavour string      `json:"driver_flavour"` // proc/driver/nvidia/version: open or proprietary
	DriverVersion string      `json:"driver_version"` // proc/driver/nvidia/version: the module's version
	Peermem       PeermemInfo `json:"peermem"`        // sys/module/nvidia_peermem, sys/kernel/mm/memory_peers
	// NvPeerMem is the legacy Mellanox nv_peer_mem module; loaded next to
	// nvidia_peermem the two fight over the same peer-memory client.
	NvPeerMem bool `json:"nv_peer_mem_loaded"` // sys/module/nv_peer_mem exists
	// MOFED is the version of a MLNX_OFED/DOCA-OFED mlx5_core (its
	// sys/module/mlx5_core/version); inbox drivers have none.
	MOFED string `json:"mofed,omitempty"` // sys/module/mlx5_core/version; optional
	// PeerClients are the peer-memory clients registered with ib_core
	// (sys/kernel/mm/memory_peers/<name>/version), which exist only with
	// MOFED's peer-memory API.
	PeerClients map[string]string `json:"peer_clients,omitempty"` // sys/kernel/mm/memory_peers/*/version; optional
	// Log holds kernel log lines about peer memory going wrong (unknown
	// symbols, invalid context); LogReadable says whether the log could be
	// read at all.
	Log         []string `json:"log,omitempty"` // /dev/kmsg live, gdrcheck/kmsg.txt recorded
	LogReadable bool     `json:"log_readable"`  // /dev/kmsg or gdrcheck/kmsg.txt opened
	// Xids are the kernel log's NVRM Xid lines that break the direct
	// path (xidTrouble): a GPU off the bus, NVLink errors.
	Xids []string `json:"xids,omitempty"` // /dev/kmsg or gdrcheck/kmsg.txt
	// GDRCopy is the gdrdrv module (kernel_gdrcopy.go).
	GDRCopy GDRCopy `json:"gdrcopy"` // sys/module/gdrdrv, proc/devices, dev/gdrdrv
	// Load is what keeps the NVIDIA modules from loading or from
	// driving the GPUs: module signing, nouveau or nova_core.
	Load ModuleLoad `json:"module_load"` // sys/module, sys/kernel/security, efivars, the kernel log
	// NUMABalancing is proc/sys/kernel/numa_balancing (0 off; 1, 2 or 3
	// on); nil where the kernel has no automatic NUMA balancing.
	NUMABalancing *int `json:"numa_balancing,omitempty"` // proc/sys/kernel/numa_balancing; optional
}

// PeermemInfo is the nvidia_peermem module.
type PeermemInfo struct {
	Loaded     bool              `json:"loaded"`            // sys/module/nvidia_peermem exists
	Version    string            `json:"version,omitempty"` // sys/module/nvidia_peermem/version
	Params     map[string]string `json:"params,omitempty"`  // sys/module/nvidia_peermem/parameters/*
	Registered bool              `json:"registered"`        // a sys/kernel/mm/memory_peers client for it exists
	Client     string            `json:"client,omitempty"`  // the sys/kernel/mm/memory_peers entry (nv_mem)
}

// KernelAtLeast compares a dotted kernel release ("6.8.0-60-generic") with
// major.minor.
func KernelAtLeast(release string, major, minor int) bool {
	m := regexp.MustCompile(`^(\d+)\.(\d+)`).FindStringSubmatch(release)
	if m == nil {
		return false
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	return a > major || a == major && b >= minor
}

// Kernel reads the kernel facts. Absent modules are facts (false), not
// errors; an unreadable file that exists is an error.
func (h Host) Kernel() (KernelFacts, error) {
	var k KernelFacts
	var err error
	if k.Release, err = h.kernelRelease(); err != nil && !errors.Is(err, ErrAbsent) {
		return k, err
	}
	if v, err := readString(h.proc("driver", "nvidia", "version")); err == nil {
		k.DriverFlavour, k.DriverVersion = parseDriverVersion(v)
	} else if !errors.Is(err, ErrAbsent) {
		return k, err
	}
	if k.Load, err = h.moduleLoad(k.DriverFlavour != ""); err != nil {
		return k, err
	}
	if v, err := readString(h.proc("sys", "kernel", "numa_balancing")); err == nil {
		if n, err := strconv.Atoi(v); err == nil {
			k.NUMABalancing = &n
		}
	}
	if k.Peermem, err = h.peermem(); err != nil {
		return k, err
	}
	if _, err := os.Stat(h.sys("module", "nv_peer_mem")); err == nil {
		k.NvPeerMem = true
	}
	if v, err := readString(h.sys("module", "mlx5_core", "version")); err == nil {
		k.MOFED = v
	}
	clients, err := h.peerClients()
	if err != nil {
		return k, err
	}
	k.PeerClients = clients
	// nvidia_peermem registers as "nv_mem"; so did nv_peer_mem.
	if _, ok := clients["nv_mem"]; ok && k.Peermem.Loaded {
		k.Peermem.Registered, k.Peermem.Client = true, "nv_mem"
	}
	k.GDRCopy = h.GDRCopy()
	lines, readable := h.kernelLog()
	k.LogReadable = readable
	for _, l := range lines {
		switch {
		case xidTrouble.MatchString(l):
			k.Xids = append(k.Xids, l)
		case moduleRefusal.MatchString(l):
			k.Load.Refused = append(k.Load.Refused, l)
		case boundElsewhere.MatchString(l):
			k.Load.Bound = append(k.Load.Bound, l)
		default:
			k.Log = append(k.Log, l)
		}
	}
	return k, nil
}

// kernelRelease reads proc/sys/kernel/osrelease ("6.8.0-60-generic"), or,
// where a tree has only proc/version, its third word ("Linux version
// 6.8.0-60-generic (buildd@...) ..."). Both absent is ErrAbsent.
func (h Host) kernelRelease() (string, error) {
	rel, err := readString(h.proc("sys", "kernel", "osrelease"))
	if !errors.Is(err, ErrAbsent) {
		return rel, err
	}
	v, verr := readString(h.proc("version"))
	if verr != nil {
		return "", fmt.Errorf("%w; %w", err, verr)
	}
	f := strings.Fields(v)
	if len(f) < 3 || f[0] != "Linux" || f[1] != "version" {
		return "", fmt.Errorf("reading %q: %q is not \"Linux version RELEASE ...\"", h.proc("version"), firstLine(v))
	}
	return f[2], nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// parseDriverVersion reads the first line of /proc/driver/nvidia/version:
// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ..."
// or, proprietary, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.60.13 ...".
func parseDriverVersion(s string) (flavour, version string) {
	line, _, _ := strings.Cut(s, "\n")
	flavour = FlavourProprietary
	if strings.Contains(line, "Open Kernel Module") {
		flavour = FlavourOpen
	}
	if m := regexp.MustCompile(`\s(\d+\.\d+(?:\.\d+)?)\s`).FindStringSubmatch(line + " "); m != nil {
		version = m[1]
	}
	return flavour, version
}

func (h Host) peermem() (PeermemInfo, error) {
	var p PeermemInfo
	dir := h.sys("module", "nvidia_peermem")
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return p, nil
		}
		return p, fmt.Errorf("reading %q: %w", dir, err)
	}
	p.Loaded = true
	if v, err := readString(filepath.Join(dir, "version")); err == nil {
		p.Version = v
	}
	params, _ := filepath.Glob(filepath.Join(dir, "parameters", "*"))
	for _, f := range params {
		if v, err := readString(f); err == nil {
			if p.Params == nil {
				p.Params = map[string]string{}
			}
			p.Params[filepath.Base(f)] = v
		}
	}
	return p, nil
}

func (h Host) peerClients() (map[string]string, error) {
	dir := h.sys("kernel", "mm", "memory_peers")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %q: %w", dir, err)
	}
	out := map[string]string{}
	for _, e := range ents {
		v, _ := readString(filepath.Join(dir, e.Name(), "version"))
		out[e.Name()] = v
	}
	return out, nil
}

// peerTrouble matches kernel log lines that signal a broken legacy path:
// a module built against another kernel or OFED ("Unknown symbol",
// "disagrees about version of symbol"), or nvidia_peermem's own errors.
var peerTrouble = regexp.MustCompile(`(?i)(nvidia_peermem|nv_peer_mem|nv_mem|peer_mem|ib_register_peer_memory_client).*(unknown symbol|disagrees about version|invalid context|error|fail)|(unknown symbol|disagrees about version).*(peer_mem|peermem|ib_register_peer_memory_client)`)

// xidTrouble matches the NVRM Xid records that break GPUDirect: 79, the
// GPU fell off the bus (NVIDIA/NVSentinel#155, leptonai/gpud#1209); 74
// and 144-149, NVLink errors (NVIDIA/open-gpu-kernel-modules#1355,
// leptonai/gpud#1160). "NVRM: Xid (PCI:0000:18:00): 79, pid=..., ...".
var xidTrouble = regexp.MustCompile(`NVRM: Xid \(PCI:[0-9A-Fa-f:.]+\): (79|74|14[4-9]),`)

// kmsgRecording is where snapshots keep the kernel log.
const kmsgRecording = "gdrcheck/kmsg.txt"

// kernelLog reads the kernel log without consuming it (/dev/kmsg, needs
// root) on the live host, or the snapshot's copy, and keeps the trouble.
// The copy is read a line at a time, however large.
func (h Host) kernelLog() ([]string, bool) {
	if h.Live() {
		b, err := readKmsg()
		if err != nil {
			return nil, false
		}
		return filterLogFrom(bytes.NewReader(b)), true
	}
	f, err := os.Open(h.path(kmsgRecording))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	return filterLogFrom(f), true
}

func filterLog(text string) []string { return filterLogFrom(strings.NewReader(text)) }

// filterLogFrom keeps the distinct trouble lines of a kernel log, sorted:
// the first maxLogLines of each kind (peer memory, Xid, module loading),
// each clipped to maxLogLine bytes. A line over maxKmsgLine is no kernel
// record and is skipped.
func filterLogFrom(r io.Reader) []string {
	var out []string
	seen := map[string]bool{}
	peer, xid, load := 0, 0, 0
	take := func(b []byte) {
		// /dev/kmsg records are "prio,seq,usec,flags;message".
		if i := bytes.IndexByte(b, ';'); i >= 0 && bytes.Count(b[:i], []byte(",")) >= 3 {
			b = b[i+1:]
		}
		b = bytes.TrimSpace(b)
		n := &peer
		switch {
		case xidTrouble.Match(b):
			n = &xid
		case moduleRefusal.Match(b) || boundElsewhere.Match(b):
			n = &load
		case !peerTrouble.Match(b) || taintOnly.Match(b):
			return
		}
		if *n < maxLogLines {
			if l := bounded.Clip(b, maxLogLine); !seen[l] {
				seen[l] = true
				*n++
				out = append(out, l)
			}
		}
	}
	lr := bounded.NewLines(r, maxKmsgLine)
	for {
		b, ok := lr.Next()
		if !ok {
			break
		}
		take(b)
	}
	if _, tail, cut := lr.Cut(); cut {
		take(tail) // a record copied without its newline is still one
	}
	sort.Strings(out)
	return out
}
