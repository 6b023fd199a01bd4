package nccl

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// The classifier of NCCL debug logs: what an INFO message says about the
// network, GDR, communicators and connections, the transport class of each
// connection, and the findings.

// Transport classes. Every channel connection NCCL logs is put in one of
// these, or in "NET/<plugin>" / "NET/<plugin>/GDRDMA" for other net plugins
// (IBext, OFI, gIB, ...), or "P2P/<mode>" for a P2P mode not listed here.
const (
	ClassP2PCUMEM    = "P2P/CUMEM"    // P2P through cuMem handles
	ClassP2PIPC      = "P2P/IPC"      // P2P through legacy CUDA IPC
	ClassP2PDirect   = "P2P/direct"   // "P2P/direct pointer": both GPUs in one process
	ClassP2PMNNVL    = "P2P/MNNVL"    // cuMem P2P across a multi-node NVLink domain
	ClassP2PIndirect = "P2P/indirect" // P2P relayed through an intermediate GPU
	ClassSHM         = "SHM"          // staged through host shared memory
	ClassNetIBGDR    = "NET/IB/GDRDMA"
	ClassNetIB       = "NET/IB" // IB or RoCE, staged through host memory (no GDRDMA)
	ClassNetSocket   = "NET/Socket"
	ClassCollNet     = "CollNet"
)

// Patterns of INFO messages, run only on a message whose prefix info or
// commLine has matched.
var (
	networkRe  = regexp.MustCompile(`^Using network (.+?)\s*$`)
	netUsingRe = regexp.MustCompile(`^NET/(\S+?)\s*: Using (.*)$`)
	netDevRe   = regexp.MustCompile(`\[(\d+)\]([^\s\[;]+)`)
	netViaRe   = regexp.MustCompile(`^NET/(.+?)/(\d+)((?:/[A-Za-z]+)*)$`)
	parenRe    = regexp.MustCompile(`\([^)]*\)`)
	hcaRe      = regexp.MustCompile(`^NET/(\S+?)\s*: GPU Direct RDMA (Enabled|Disabled) for HCA (\d+) '([^']*)'`)
	gpuGDRRe   = regexp.MustCompile(`^GPU Direct RDMA (Enabled|Disabled) for GPU (\S+) / HCA (\S+)(?:.*? mode (\S+))?`)
	dmabufRe   = regexp.MustCompile(`^DMA-BUF is available on GPU device (\d+)`)
	// NCCL_PARAM values print "set by environment to"; net_ib.cc prints
	// "NCCL_IB_HCA set to mlx5_0,mlx5_1".
	envRe = regexp.MustCompile(`^(NCCL_[A-Z0-9_]+) set (?:by environment )?to (.*?)\.?\s*$`)
	// The comm lines are matched by hand (log_comm.go).
)

// info handles the message of one INFO line: by the first byte of its
// message, a line starts with at most one of the prefixes (starts), else
// it may be a comm line.
func (p *logParser) info(prefix, msg []byte) {
	if len(msg) > 0 && starts[msg[0]] && p.prefixed(prefix, msg) {
		return
	}
	if bytes.Contains(msg, txtComm) {
		p.commLine(prefix, msg)
	}
}

// starts holds the first bytes of the prefixes prefixed looks for.
var starts = func() (t [256]bool) {
	for _, p := range []string{pfxChannel, pfxCollNet, pfxRing, pfxNetwork, pfxNET, pfxGPUGDR, pfxDMABUF, pfxEnv} {
		t[p[0]] = true
	}
	return t
}()

// prefixed handles a message that starts with one of the prefixes info
// knows, and says whether it did.
func (p *logParser) prefixed(prefix, msg []byte) bool {
	s := p.s
	switch {
	case hasPrefix(msg, pfxChannel), hasPrefix(msg, pfxCollNet), hasPrefix(msg, pfxRing):
		if c, via, ok := parseConnection(msg); ok {
			if k := interleavedAt(via); k > 0 {
				// Another process's line continues this one mid-line
				// (two writers on one stream): each is its own line, so
				// the second's GDRDMA is not read into the first's via.
				rest := via[k:]
				p.connection(prefix, c, via[:k])
				p.line(rest)
				return true
			}
			p.connection(prefix, c, via)
		}
	case hasPrefix(msg, pfxNetwork):
		if s.Network == "" {
			if m := networkRe.FindSubmatch(msg); m != nil {
				s.Network = keepField(m[1])
			}
		}
	case hasPrefix(msg, pfxNET):
		if bytes.Contains(msg, txtUsing) {
			// Each process's own list: before the repeat check,
			// since processes print the same list.
			p.nics.using(prefix, msg)
		}
		if p.repeated[string(msg)] {
			return true
		}
		if bytes.Contains(msg, txtGDR) {
			if m := hcaRe.FindSubmatch(msg); m != nil {
				h := GDRHCA{Net: keepField(m[1]), Index: atoi(string(m[3])), Name: keepField(m[4]), Enabled: string(m[2]) == "Enabled"}
				if !p.hcas[h] {
					// Sockets never carry GPU memory: only an RDMA NIC
					// without GDR says something is missing.
					if !h.Enabled && h.Net != "Socket" {
						kind := HintGDRDisabled
						if bytes.HasSuffix(msg, txtNoModule) {
							kind = HintNoPeermemModule
						}
						p.hint(kind, msg)
					}
					if len(s.GDRHCAs) < maxKept {
						p.hcas[h] = true
						s.GDRHCAs = append(s.GDRHCAs, h)
					}
				}
				p.remember(msg)
			}
		} else if bytes.Contains(msg, txtUsing) {
			if m := netUsingRe.FindSubmatch(msg); m != nil {
				net := keepField(m[1])
				for _, d := range netDevRe.FindAllSubmatch(m[2], maxKept) {
					nd := parseNetDevice(net, atoi(string(d[1])), keepField(d[2]))
					if !p.devices[nd] && len(s.NetDevices) < maxKept {
						p.devices[nd] = true
						s.NetDevices = append(s.NetDevices, nd)
					}
				}
				p.remember(msg)
			}
		}
	case hasPrefix(msg, pfxGPUGDR):
		if p.repeated[string(msg)] {
			return true
		}
		if m := gpuGDRRe.FindSubmatch(msg); m != nil {
			g := GDRGPU{GPU: keepField(m[2]), HCA: keepField(m[3]), Enabled: string(m[1]) == "Enabled", Mode: keepField(m[4])}
			if !p.gpus[g] && len(s.GDRGPUs) < maxKept {
				p.gpus[g] = true
				s.GDRGPUs = append(s.GDRGPUs, g)
			}
			p.remember(msg)
		}
	case hasPrefix(msg, pfxDMABUF):
		if m := dmabufRe.FindSubmatch(msg); m != nil {
			if n := atoi(string(m[1])); !slices.Contains(s.DMABUFGPUs, n) && len(s.DMABUFGPUs) < maxKept {
				s.DMABUFGPUs = append(s.DMABUFGPUs, n)
			}
		}
	case hasPrefix(msg, pfxEnv):
		if m := envRe.FindSubmatch(msg); m != nil {
			k := keepField(m[1])
			if _, ok := s.Env[k]; ok || len(s.Env) < maxKept {
				s.Env[k] = keep(m[2])
			}
		}
	default:
		return false
	}
	return true
}

// remember marks an idempotent message as handled, while there is room;
// a message too long to keep whole is handled again each time.
func (p *logParser) remember(msg []byte) {
	if len(p.repeated) < maxRepeated && len(msg) <= maxText {
		p.repeated[string(msg)] = true
	}
}

// commLine handles a line about a communicator: its shape, and the
// Init START / Init COMPLETE / Destroy COMPLETE steps that tell whether the
// log covers the whole run.
func (p *logParser) commLine(prefix, msg []byte) {
	switch {
	case bytes.HasSuffix(msg, sfxInitDone):
		p.initDone++
	case bytes.HasSuffix(msg, sfxInitBeg):
		p.initStart++
	case bytes.HasSuffix(msg, sfxDestroy), bytes.HasSuffix(msg, sfxAbort):
		p.ended++
	}
	if !bytes.Contains(msg, txtRank) {
		return
	}
	s := p.s
	if m, ok := matchCommTopo(msg); ok {
		c := p.comm(prefix, m.id)
		c.Rank, c.Ranks, c.Nodes, c.LocalRanks, c.LocalRank = atoi(string(m.nums[0])), atoi(string(m.nums[1])), atoi(string(m.nums[2])), atoi(string(m.nums[3])), atoi(string(m.nums[4]))
		s.Ranks, s.Nodes, s.LocalRanks = max(s.Ranks, c.Ranks), max(s.Nodes, c.Nodes), max(s.LocalRanks, c.LocalRanks)
	} else if m, ok := matchComm(msg); ok {
		c := p.comm(prefix, m.id)
		c.Rank, c.Ranks, c.CudaDev, c.BusID = atoi(string(m.nums[0])), atoi(string(m.nums[1])), atoi(string(m.nums[2])), keepField(m.busID)
		s.Ranks = max(s.Ranks, c.Ranks)
	}
}

// comm returns the communicator a comm line is about, adding it if new;
// past MaxComms it returns a scratch value that is not kept.
func (p *logParser) comm(prefix, id []byte) *Comm {
	key := keepField(pidKey(prefix)) + " " + keepField(id)
	i, ok := p.comms[key]
	if !ok {
		if len(p.s.Comms) >= MaxComms {
			p.scratch = Comm{}
			return &p.scratch
		}
		i = len(p.s.Comms)
		p.comms[key] = i
		p.s.Comms = append(p.s.Comms, Comm{Host: keepField(hostOf(prefix)), ID: keepField(id)})
	}
	return &p.s.Comms[i]
}

// connection counts one connection line under its class.
func (p *logParser) connection(prefix []byte, c Connection, via []byte) {
	vi, ok := p.vias[string(via)]
	if !ok {
		vi.class, vi.gdr = classify(string(via))
		vi.class = bounded.ClipString(vi.class, maxField)
		if len(p.vias) < maxVias && len(via) <= maxText {
			p.vias[string(via)] = vi
		}
	}
	s := p.s
	i, ok := p.uses[vi]
	if !ok && len(s.Uses) >= maxClasses && !knownClass[vi.class] {
		vi, p.lumped = lumpClass(vi), p.lumped+1
		i, ok = p.uses[vi]
	}
	s.Transports[vi.class]++
	if !ok {
		i = len(s.Uses)
		p.uses[vi] = i
		s.Uses = append(s.Uses, TransportUse{Class: vi.class, GDR: vi.gdr, Links: []Link{}})
	}
	host := hostOf(prefix)
	s.Uses[i].add(host, c, via)
	if strings.HasPrefix(vi.class, "NET/") {
		p.nics.connection(prefix, c, via)
	}
	if len(s.Connections) < MaxConnections {
		c.Host, c.Via, c.Class, c.GDR = keepField(host), keep(via), vi.class, vi.gdr
		s.Connections = append(s.Connections, c)
	}
}

// add counts one connection line of u's class.
func (u *TransportUse) add(host []byte, c Connection, via []byte) {
	u.Connections++
	if c.Channel >= 0 && c.Channel <= maxChannel {
		u.chans[c.Channel/64] |= 1 << (c.Channel % 64)
	}
	for i := range u.Links {
		l := &u.Links[i]
		if l.From == c.From && l.To == c.To && l.Host == string(host) && l.Via == string(via) {
			l.Connections++
			return
		}
	}
	if len(u.Links) < MaxLinks {
		u.Links = append(u.Links, Link{Host: keepField(host), From: c.From, To: c.To, Via: keep(via), Connections: 1})
		return
	}
	u.OtherLinks++
}

func (u *TransportUse) channelList() []int {
	ch := []int{}
	for i, w := range u.chans {
		for b := 0; w != 0; b, w = b+1, w>>1 {
			if w&1 != 0 {
				ch = append(ch, i*64+b)
			}
		}
	}
	return ch
}

// finding adds f or counts it again; a finding keeps the line it was
// first seen on.
func (p *logParser) finding(f Finding) {
	k := findingKey{f.Level, f.Source, f.Text}
	if i, ok := p.findings[k]; ok {
		p.s.Findings[i].Count++
		return
	}
	if len(p.s.Findings) >= maxKept {
		p.s.FindingsOmitted++
		return
	}
	p.findings[k] = len(p.s.Findings)
	f.Count = 1
	p.s.Findings = append(p.s.Findings, f)
}

var txtNoModule = []byte("(no module)")

// hint records NCCL's message msg as a hint of kind, or counts it again;
// it is called once per NIC.
func (p *logParser) hint(kind string, msg []byte) {
	if i, ok := p.hints[kind]; ok {
		p.s.Hints[i].Count++
		return
	}
	p.hints[kind] = len(p.s.Hints)
	p.s.Hints = append(p.s.Hints, Hint{Kind: kind, Text: keep(msg), Line: p.lineNo, Count: 1})
}

// The DMA-BUF path gdrcheck's kernel suite checks, as DESIGN.md lists it.
const dmabufNeeds = "the open GPU kernel modules R515+, kernel 5.12+ and rdma-core 34+"

// adviseHints writes each hint's advice, once the NCCL version is known.
func (p *logParser) adviseHints() {
	for i := range p.s.Hints {
		h := &p.s.Hints[i]
		switch h.Kind {
		case HintNoPeermemModule:
			h.Advice = "NCCL found no peer-memory module, so it stages network traffic through host memory instead of GPU Direct RDMA: " +
				"load nvidia_peermem (nv_peer_mem with older MLNX_OFED), or move to DMA-BUF, which needs NCCL 2.13+ " +
				"(NCCL prints \"(no module)\" only before 2.13, which has no DMA-BUF path) and " + dmabufNeeds
		case HintGDRDisabled:
			h.Advice = "NCCL can use neither a peer-memory module nor DMA-BUF with this NIC, so it stages network traffic through host memory instead of GPU Direct RDMA: " +
				"load nvidia_peermem, or enable DMA-BUF, which needs " + dmabufNeeds + "; `gdrcheck run --suites kernel` names what is missing"
			if before(p.s.NCCLVersion, 2, 23) {
				h.Advice += "; NCCL before 2.23 looks for the module only under /sys/kernel/mm/memory_peers/, not /sys/module/nvidia_peermem"
			}
		default:
			adviseOtherHints(h)
		}
	}
}

// before reports whether version "X.Y.Z" is older than major.minor; an
// unknown version is not.
func before(version string, major, minor int) bool {
	var x, y int
	if _, err := fmt.Sscanf(version, "%d.%d", &x, &y); err != nil {
		return false
	}
	return x < major || x == major && y < minor
}

// classify maps the text after "via" to a transport class. Parenthesised
// parts are dropped first: "(PCI)" marks the GDR mode (2.26+) and "0(3)" a
// PXN proxy rank; neither changes the class.
func classify(via string) (class string, gdr bool) {
	v := parenRe.ReplaceAllString(via, "")
	// NCCL 2.19-2.20 append the communicator: "via P2P/IPC comm 0x... nRanks 32".
	v, _, _ = strings.Cut(v, " comm ")
	if strings.HasPrefix(v, "direct shared memory") { // NCCL before 2.12
		return ClassSHM, false
	}
	head, rest, _ := strings.Cut(v, "/")
	switch head {
	case "P2P":
		mode, _, _ := strings.Cut(rest, "/")
		switch {
		case strings.HasPrefix(mode, "direct"):
			return ClassP2PDirect, false
		case mode == "":
			return "P2P", false
		}
		return "P2P/" + mode, false
	case "SHM":
		return ClassSHM, false
	case "COLLNET":
		return ClassCollNet, strings.Contains(v, "/GDRDMA")
	case "NET":
		m := netViaRe.FindStringSubmatch(v)
		if m == nil {
			name, _, _ := strings.Cut(rest, "/")
			gdr = strings.Contains(v, "/GDRDMA")
			return netClass(name, gdr), gdr
		}
		gdr = strings.Contains(m[3], "/GDRDMA")
		return netClass(m[1], gdr), gdr
	}
	return head, false
}

// knownClass holds the classes NCCL names itself, which are never lumped:
// judge treats some of them (SHM, NET/Socket, CollNet) apart.
var knownClass = map[string]bool{
	ClassP2PCUMEM: true, ClassP2PIPC: true, ClassP2PDirect: true, ClassP2PMNNVL: true, ClassP2PIndirect: true, "P2P": true,
	ClassSHM: true, ClassNetIBGDR: true, ClassNetIB: true, ClassNetSocket: true, ClassCollNet: true,
}

// lumpClass is the class a connection of a class NCCL does not name is
// counted under once maxClasses classes are known: one per way judge can
// take such a class (P2P, NET with or without GDRDMA, anything else), so
// the verdict stays what it would have been.
func lumpClass(vi viaInfo) viaInfo {
	switch {
	case strings.HasPrefix(vi.class, "P2P"):
		return viaInfo{class: "P2P/" + classOther}
	case strings.HasPrefix(vi.class, "NET/"):
		return viaInfo{class: netClass(classOther, vi.gdr), gdr: vi.gdr}
	}
	return viaInfo{class: classOther, gdr: vi.gdr}
}

func netClass(name string, gdr bool) string {
	if gdr {
		return "NET/" + name + "/GDRDMA"
	}
	return "NET/" + name
}

// parseNetDevice reads "mlx5_0:1/RoCE" (IB) or "eth0:10.0.0.4<0>" (Socket).
func parseNetDevice(net string, index int, s string) NetDevice {
	d := NetDevice{Net: net, Index: index, Name: s}
	name, rest, ok := strings.Cut(s, ":")
	if !ok {
		return d
	}
	d.Name = name
	if port, ll, ok := strings.Cut(rest, "/"); ok {
		if n, err := strconv.Atoi(port); err == nil {
			d.Port, d.LinkLayer = n, ll
			return d
		}
	}
	d.Addr, _, _ = strings.Cut(rest, "<")
	return d
}
