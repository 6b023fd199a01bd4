package nccl

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

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

// Caps on what ParseLog keeps, so its memory does not grow with the length
// of the log. Counts (Transports, TransportUse.Connections, Ranks, ...)
// always cover every line.
const (
	MaxConnections = 256  // LogSummary.Connections: the first connection lines
	MaxComms       = 1024 // LogSummary.Comms: the first communicator ranks
	MaxLinks       = 16   // TransportUse.Links: the first distinct rank pairs of a class
	maxKept        = 256  // NetDevices, GDRHCAs, GDRGPUs, DMABUFGPUs, Env keys, Findings
	maxChannel     = 255  // TransportUse.Channels holds channel numbers 0 to 255
	maxRepeated    = 1024 // message texts remembered to skip repeated NIC lines
	maxVias        = 1024 // "via" texts whose class is remembered
)

// LogSummary is what an NCCL_DEBUG=INFO log says about one run.
type LogSummary struct {
	NCCLVersion string            `json:"nccl_version"`           // "NCCL version 2.28.3+cuda13.0" -> "2.28.3"
	CUDAVersion string            `json:"cuda_version,omitempty"` // -> "13.0"
	Network     string            `json:"network"`                // first "Using network X": IB, Socket, or a plugin's name
	NetDevices  []NetDevice       `json:"net_devices"`            // "NET/IB : Using [0]mlx5_0:1/RoCE ..."; the first 256
	GDRHCAs     []GDRHCA          `json:"gdr_hcas"`               // "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'"; the first 256
	GDRGPUs     []GDRGPU          `json:"gdr_gpus"`               // "GPU Direct RDMA Enabled for GPU X / HCA Y ..."; the first 256
	DMABUFGPUs  []int             `json:"dmabuf_gpus"`            // "DMA-BUF is available on GPU device N"; the first 256
	Env         map[string]string `json:"env"`                    // "NCCL_X set by environment to V"; 256 names at most
	Ranks       int               `json:"ranks"`                  // largest nranks of any communicator; 0 if no comm line
	Nodes       int               `json:"nodes"`                  // largest nNodes (NCCL 2.19+ prints it); 0 if unknown
	LocalRanks  int               `json:"local_ranks"`            // largest localRanks; 0 if unknown
	Transports  map[string]int    `json:"transports"`             // transport class -> channel connection lines
	// Uses says, per transport class, on which channels and between which
	// ranks the connection lines were; sorted by class.
	Uses            []TransportUse `json:"transport_uses"`
	Findings        []Finding      `json:"findings"`                   // WARN lines and error return traces; the first 256 distinct
	FindingsOmitted int            `json:"findings_omitted,omitempty"` // lines of findings past the first 256

	// Outcome and Reasons are Verdict(Expectation{}), the judgement without
	// topology, so the summary marshals complete. A caller that knows the
	// topology can overwrite them with Verdict(exp).
	Outcome string   `json:"verdict"`
	Reasons []string `json:"reasons"`

	// Partial is set when the log does not cover a whole run, and
	// PartialReason says why in one or more short sentences joined by
	// "; ". ParseLog documents the rules.
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`

	// Connections holds the first MaxConnections connection lines and
	// Comms the first MaxComms communicator ranks, in log order: a bounded
	// sample for tests and debugging, not the whole log. They are left out
	// of the JSON; Transports, Uses and Ranks/Nodes carry what reports
	// need, counted over every line.
	Connections []Connection `json:"-"`
	Comms       []Comm       `json:"-"`
}

// TransportUse is where one transport class was used. It stays small
// however long the log: Channels has at most 256 entries and Links at most
// MaxLinks.
type TransportUse struct {
	Class       string `json:"class"`
	GDR         bool   `json:"gdr"`         // "/GDRDMA" on the lines; part of the class name for NET
	Connections int    `json:"connections"` // connection lines of this class
	Channels    []int  `json:"channels"`    // distinct channel numbers, ascending
	Links       []Link `json:"links"`       // the first MaxLinks distinct (host, from, to, via), in log order
	OtherLinks  int    `json:"other_links,omitempty"`

	chans [(maxChannel + 1) / 64]uint64 // Channels while parsing
}

// Link is one rank pair a transport class connected, as one host logged it.
type Link struct {
	Host        string `json:"host,omitempty"` // host of the log prefix
	From        int    `json:"from"`
	To          int    `json:"to"`  // -1 for CollNet
	Via         string `json:"via"` // the text after "via": "NET/IB/1", "SHM/direct/direct"
	Connections int    `json:"connections"`
}

// NetDevice is one entry of a "NET/<net> : Using [i]dev..." line.
type NetDevice struct {
	Net       string `json:"net"` // IB, Socket, IBext_v8, ...
	Index     int    `json:"index"`
	Name      string `json:"name"`                 // mlx5_0, eth0
	Port      int    `json:"port,omitempty"`       // IB port
	LinkLayer string `json:"link_layer,omitempty"` // IB or RoCE
	Addr      string `json:"addr,omitempty"`       // socket address
}

// GDRHCA is NCCL's per-NIC GPU Direct RDMA capability; printed only with
// NCCL_DEBUG_SUBSYS including NET.
type GDRHCA struct {
	Net     string `json:"net"`
	Index   int    `json:"index"`
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
}

// GDRGPU is NCCL's GDR decision for one GPU and NIC. GPU and HCA are kept as
// printed: NCCL 2.18 prints a bus ID and a device index, 2.28 a rank and a
// NIC id.
type GDRGPU struct {
	GPU     string `json:"gpu"`
	HCA     string `json:"hca"`
	Enabled bool   `json:"enabled"`
	Mode    string `json:"mode,omitempty"` // 2.28+: "mode PCI" and the like
}

// Finding is a WARN line or an error return trace ("net.cc:1134 -> 6"),
// counted once per distinct text.
type Finding struct {
	Level  string `json:"level"`            // WARN or ERROR
	Source string `json:"source,omitempty"` // "transport/net_ib.cc:1296"
	Text   string `json:"text"`
	Count  int    `json:"count"`
}

// Comm is one rank's view of a communicator, merged from its comm lines.
type Comm struct {
	Host       string // host of the log prefix
	ID         string // the comm pointer, unique within one host:pid
	Rank       int
	Ranks      int
	Nodes      int // 0 before NCCL printed nNodes
	LocalRanks int
	LocalRank  int
	CudaDev    int
	BusID      string
}

// Connection is one "Channel ... via ..." or "CollNet ... via ..." line.
type Connection struct {
	Host    string
	Channel int
	Index   int    // connIndex; -1 where the line has none (SHM)
	From    int    // sending rank
	To      int    // receiving rank; -1 for CollNet
	Dir     string // "send", "receive", or "" for P2P and SHM
	Via     string // the text after "via"
	Class   string
	GDR     bool // "/GDRDMA" on a NET or COLLNET line
}

var (
	networkRe  = regexp.MustCompile(`^Using network (.+?)\s*$`)
	netUsingRe = regexp.MustCompile(`^NET/(\S+?)\s*: Using (.*)$`)
	netDevRe   = regexp.MustCompile(`\[(\d+)\]([^\s\[;]+)`)
	netViaRe   = regexp.MustCompile(`^NET/(.+?)/(\d+)((?:/[A-Za-z]+)*)$`)
	parenRe    = regexp.MustCompile(`\([^)]*\)`)
	hcaRe      = regexp.MustCompile(`^NET/(\S+?)\s*: GPU Direct RDMA (Enabled|Disabled) for HCA (\d+) '([^']*)'`)
	gpuGDRRe   = regexp.MustCompile(`^GPU Direct RDMA (Enabled|Disabled) for GPU (\S+) / HCA (\S+)(?:.*? mode (\S+))?`)
	dmabufRe   = regexp.MustCompile(`^DMA-BUF is available on GPU device (\d+)`)
	envRe      = regexp.MustCompile(`^(NCCL_[A-Z0-9_]+) set by environment to (.*?)\.?\s*$`)
	commRe     = regexp.MustCompile(`comm (\S+) rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev \d+)? busId ([0-9a-fA-F]+)`)
	commTopoRe = regexp.MustCompile(`comm (\S+) rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank (\d+)`)
	errTraceRe = regexp.MustCompile(`^\S+\.(?:cc|cu|c|cpp|h):\d+ -> \d+`)
	rowLikeRe  = regexp.MustCompile(`^\s*\d+\s+\d+\s`)
)

// ParseLog reads an NCCL debug log; nccl-tests output with NCCL_DEBUG=INFO
// is one too. Lines NCCL did not write are skipped. It streams: memory
// stays bounded (see the Max constants) however long the log, and lines
// are matched by cheap prefix checks before any regexp.
//
// The summary is marked Partial, with the reason, when:
//   - the log ends mid-line: the cut line is not read, since a cut
//     "via NET/IB/0/GDRDMA" would read as host-staged;
//   - a line is longer than 1 MiB (binary garbage): it is skipped;
//   - there are INFO lines but no "Init COMPLETE" line: the log stops
//     during NCCL init, or is an excerpt (or NCCL_DEBUG_SUBSYS leaves out
//     INIT, which prints that line);
//   - more communicators logged "Init START" (NCCL 2.19+) than "Init
//     COMPLETE": the log stops during init;
//   - fewer communicators logged "Destroy COMPLETE" or "Abort COMPLETE"
//     than "Init COMPLETE": the log stops while NCCL was running, as when
//     a run is killed or the log is trimmed. nccl-tests destroys its
//     communicators before it prints its footer.
//
// So of the published excerpts in fixtures/corpus/nccl-debug, every one
// is partial (each was trimmed by its author), while the recorded
// nccl-tests runs in fixtures/nccl-tests are whole. An output with no
// NCCL INFO line but an "NCCL version" line is not partial.
//
// Input with no NCCL line at all is an error wrapping ErrNoData.
func ParseLog(r io.Reader) (*LogSummary, error) {
	p := newLogParser()
	lr := newLineReader(r)
	for {
		b, ok := lr.next()
		if !ok {
			break
		}
		p.line(b)
	}
	p.flushWarn()
	if lr.err != nil {
		return nil, fmt.Errorf("reading NCCL log: %w", lr.err)
	}
	if !p.found {
		return nil, fmt.Errorf("parsing NCCL log: %w", ErrNoData)
	}
	s := p.s
	slices.Sort(s.DMABUFGPUs)
	slices.SortFunc(s.Uses, func(a, b TransportUse) int {
		if c := strings.Compare(a.Class, b.Class); c != 0 {
			return c
		}
		return boolCmp(a.GDR, b.GDR)
	})
	for i := range s.Uses {
		s.Uses[i].Channels = s.Uses[i].channelList()
	}
	reasons := lr.partialReasons("log")
	switch {
	case p.infoLines && p.initDone == 0:
		reasons = append(reasons, "no communicator reached Init COMPLETE: the log stops during NCCL init or is an excerpt")
	case p.initStart > p.initDone:
		reasons = append(reasons, fmt.Sprintf("%d of %d communicators logged Init START without Init COMPLETE: the log stops during NCCL init", p.initStart-p.initDone, p.initStart))
	}
	if p.initDone > p.ended {
		reasons = append(reasons, fmt.Sprintf("%d of %d communicators that reached Init COMPLETE were not destroyed: the log stops while NCCL was running", p.initDone-p.ended, p.initDone))
	}
	if len(reasons) > 0 {
		s.Partial, s.PartialReason = true, strings.Join(reasons, "; ")
	}
	v := s.Verdict(Expectation{})
	s.Outcome, s.Reasons = v.Verdict, v.Reasons
	return s, nil
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// logParser carries the state ParseLog needs between lines; every map and
// slice in it is capped.
type logParser struct {
	s        *LogSummary
	comms    map[string]int  // host:pid + comm pointer -> index in s.Comms
	findings map[Finding]int // finding without Count -> index in s.Findings
	devices  map[NetDevice]bool
	hcas     map[GDRHCA]bool
	gpus     map[GDRGPU]bool
	repeated map[string]bool    // NIC and GDR message texts already handled; handling them again changes nothing
	vias     map[string]viaInfo // "via" text -> its class
	uses     map[viaInfo]int    // class -> index in s.Uses
	warn     *Finding           // the WARN of the previous line, held until its wrapped tail is known
	scratch  Comm               // written for comm lines past MaxComms

	found, infoLines           bool // an NCCL line; an INFO line
	initStart, initDone, ended int  // communicators: "Init START", "Init COMPLETE", "Destroy/Abort COMPLETE" lines
}

type viaInfo struct {
	class string
	gdr   bool
}

func newLogParser() *logParser {
	return &logParser{
		s: &LogSummary{
			NetDevices: []NetDevice{}, GDRHCAs: []GDRHCA{}, GDRGPUs: []GDRGPU{}, DMABUFGPUs: []int{},
			Env: map[string]string{}, Transports: map[string]int{}, Uses: []TransportUse{}, Findings: []Finding{},
		},
		comms: map[string]int{}, findings: map[Finding]int{},
		devices: map[NetDevice]bool{}, hcas: map[GDRHCA]bool{}, gpus: map[GDRGPU]bool{},
		repeated: map[string]bool{}, vias: map[string]viaInfo{}, uses: map[viaInfo]int{},
	}
}

// line handles one line. raw is only valid during the call: anything kept
// is copied with string().
func (p *logParser) line(raw []byte) {
	if p.s.NCCLVersion == "" && bytes.Contains(raw, ncclVersionText) {
		if m := ncclVersionRe.FindSubmatch(raw); m != nil {
			p.s.NCCLVersion, p.s.CUDAVersion, p.found = string(m[1]), string(m[2]), true
		}
	}
	level, prefix, msg, ok := splitLogLine(raw)
	if !ok {
		if p.warn != nil && continuesWarn(string(raw)) {
			// A WARN wrapped by whoever copied the log: rejoin it.
			p.warn.Text += " " + strings.TrimSpace(string(raw))
		}
		p.flushWarn()
		return
	}
	p.found = true
	p.flushWarn()
	switch level {
	case levelWarn:
		p.warn = &Finding{Level: "WARN", Source: warnSource(string(prefix)), Text: string(msg)}
		return
	case levelTrace:
		return
	}
	p.infoLines = true
	if isErrTrace(msg) {
		src, _, _ := bytes.Cut(msg, []byte(" "))
		p.finding(Finding{Level: "ERROR", Source: string(src), Text: string(msg)})
		return
	}
	p.info(prefix, msg)
}

// Message prefixes, as bytes for the hot path.
var (
	pfxChannel  = []byte("Channel ")
	pfxCollNet  = []byte("CollNet ")
	pfxNetwork  = []byte("Using network ")
	pfxNET      = []byte("NET/")
	pfxGPUGDR   = []byte("GPU Direct RDMA ")
	pfxDMABUF   = []byte("DMA-BUF ")
	pfxEnv      = []byte("NCCL_")
	txtGDR      = []byte("GPU Direct RDMA")
	txtUsing    = []byte(": Using ")
	txtComm     = []byte("comm ")
	txtRank     = []byte(" rank ")
	txtArrow    = []byte(" -> ")
	sfxInitDone = []byte("Init COMPLETE")
	sfxInitBeg  = []byte("Init START")
	sfxDestroy  = []byte("Destroy COMPLETE")
	sfxAbort    = []byte("Abort COMPLETE")
)

// info handles the message of one INFO line.
func (p *logParser) info(prefix, msg []byte) {
	s := p.s
	switch {
	case bytes.HasPrefix(msg, pfxChannel), bytes.HasPrefix(msg, pfxCollNet):
		if c, via, ok := parseConnection(msg); ok {
			p.connection(prefix, c, via)
		}
	case bytes.HasPrefix(msg, pfxNetwork):
		if s.Network == "" {
			if m := networkRe.FindSubmatch(msg); m != nil {
				s.Network = string(m[1])
			}
		}
	case bytes.HasPrefix(msg, pfxNET):
		if p.repeated[string(msg)] {
			return
		}
		if bytes.Contains(msg, txtGDR) {
			if m := hcaRe.FindSubmatch(msg); m != nil {
				h := GDRHCA{Net: string(m[1]), Index: atoi(string(m[3])), Name: string(m[4]), Enabled: string(m[2]) == "Enabled"}
				if !p.hcas[h] && len(s.GDRHCAs) < maxKept {
					p.hcas[h] = true
					s.GDRHCAs = append(s.GDRHCAs, h)
				}
				p.remember(msg)
			}
		} else if bytes.Contains(msg, txtUsing) {
			if m := netUsingRe.FindSubmatch(msg); m != nil {
				net := string(m[1])
				for _, d := range netDevRe.FindAllSubmatch(m[2], -1) {
					nd := parseNetDevice(net, atoi(string(d[1])), string(d[2]))
					if !p.devices[nd] && len(s.NetDevices) < maxKept {
						p.devices[nd] = true
						s.NetDevices = append(s.NetDevices, nd)
					}
				}
				p.remember(msg)
			}
		}
	case bytes.HasPrefix(msg, pfxGPUGDR):
		if p.repeated[string(msg)] {
			return
		}
		if m := gpuGDRRe.FindSubmatch(msg); m != nil {
			g := GDRGPU{GPU: string(m[2]), HCA: string(m[3]), Enabled: string(m[1]) == "Enabled", Mode: string(m[4])}
			if !p.gpus[g] && len(s.GDRGPUs) < maxKept {
				p.gpus[g] = true
				s.GDRGPUs = append(s.GDRGPUs, g)
			}
			p.remember(msg)
		}
	case bytes.HasPrefix(msg, pfxDMABUF):
		if m := dmabufRe.FindSubmatch(msg); m != nil {
			if n := atoi(string(m[1])); !slices.Contains(s.DMABUFGPUs, n) && len(s.DMABUFGPUs) < maxKept {
				s.DMABUFGPUs = append(s.DMABUFGPUs, n)
			}
		}
	case bytes.HasPrefix(msg, pfxEnv):
		if m := envRe.FindSubmatch(msg); m != nil {
			k := string(m[1])
			if _, ok := s.Env[k]; ok || len(s.Env) < maxKept {
				s.Env[k] = string(m[2])
			}
		}
	case bytes.Contains(msg, txtComm):
		p.commLine(prefix, msg)
	}
}

// remember marks an idempotent message as handled, while there is room.
func (p *logParser) remember(msg []byte) {
	if len(p.repeated) < maxRepeated {
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
	if m := commTopoRe.FindSubmatch(msg); m != nil {
		c := p.comm(prefix, m[1])
		c.Rank, c.Ranks, c.Nodes, c.LocalRanks, c.LocalRank = atoi(string(m[2])), atoi(string(m[3])), atoi(string(m[4])), atoi(string(m[5])), atoi(string(m[6]))
		s.Ranks, s.Nodes, s.LocalRanks = max(s.Ranks, c.Ranks), max(s.Nodes, c.Nodes), max(s.LocalRanks, c.LocalRanks)
	} else if m := commRe.FindSubmatch(msg); m != nil {
		c := p.comm(prefix, m[1])
		c.Rank, c.Ranks, c.CudaDev, c.BusID = atoi(string(m[2])), atoi(string(m[3])), atoi(string(m[4])), string(m[5])
		s.Ranks = max(s.Ranks, c.Ranks)
	}
}

// comm returns the communicator a comm line is about, adding it if new;
// past MaxComms it returns a scratch value that is not kept.
func (p *logParser) comm(prefix, id []byte) *Comm {
	key := string(pidKey(prefix)) + " " + string(id)
	i, ok := p.comms[key]
	if !ok {
		if len(p.s.Comms) >= MaxComms {
			p.scratch = Comm{}
			return &p.scratch
		}
		i = len(p.s.Comms)
		p.comms[key] = i
		p.s.Comms = append(p.s.Comms, Comm{Host: string(hostOf(prefix)), ID: string(id)})
	}
	return &p.s.Comms[i]
}

// connection counts one connection line under its class.
func (p *logParser) connection(prefix []byte, c Connection, via []byte) {
	vi, ok := p.vias[string(via)]
	if !ok {
		vi.class, vi.gdr = classify(string(via))
		if len(p.vias) < maxVias {
			p.vias[string(via)] = vi
		}
	}
	s := p.s
	s.Transports[vi.class]++
	i, ok := p.uses[vi]
	if !ok {
		i = len(s.Uses)
		p.uses[vi] = i
		s.Uses = append(s.Uses, TransportUse{Class: vi.class, GDR: vi.gdr, Links: []Link{}})
	}
	host := hostOf(prefix)
	s.Uses[i].add(host, c, via)
	if len(s.Connections) < MaxConnections {
		c.Host, c.Via, c.Class, c.GDR = string(host), string(via), vi.class, vi.gdr
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
		u.Links = append(u.Links, Link{Host: string(host), From: c.From, To: c.To, Via: string(via), Connections: 1})
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

// finding adds f or counts it again.
func (p *logParser) finding(f Finding) {
	if i, ok := p.findings[f]; ok {
		p.s.Findings[i].Count++
		return
	}
	if len(p.s.Findings) >= maxKept {
		p.s.FindingsOmitted++
		return
	}
	p.findings[f] = len(p.s.Findings)
	f.Count = 1
	p.s.Findings = append(p.s.Findings, f)
}

// flushWarn records the held WARN, now that its text is complete.
func (p *logParser) flushWarn() {
	if p.warn != nil {
		p.finding(*p.warn)
		p.warn = nil
	}
}

// isErrTrace reports whether msg is an error return trace such as
// "transport/net.cc:1134 -> 6", checking cheap bytes before the regexp.
func isErrTrace(msg []byte) bool {
	sp := bytes.IndexByte(msg, ' ')
	if sp <= 0 || !bytes.HasPrefix(msg[sp:], txtArrow) {
		return false
	}
	field := msg[:sp]
	if bytes.IndexByte(field, ':') < 0 || bytes.IndexByte(field, '.') < 0 {
		return false
	}
	return errTraceRe.Match(msg)
}

// Log levels splitLogLine recognises.
const (
	levelInfo = iota + 1
	levelWarn
	levelTrace
)

var (
	txtNCCL   = []byte(" NCCL ")
	txtInfo   = []byte("INFO")
	txtWarn   = []byte("WARN")
	txtTrace  = []byte("TRACE")
	logLevels = []struct {
		word  []byte
		level int
	}{{txtInfo, levelInfo}, {txtWarn, levelWarn}, {txtTrace, levelTrace}}
)

// splitLogLine splits "host:pid:tid [dev] [file:line ]NCCL LEVEL msg" at
// the first " NCCL " followed by INFO, WARN or TRACE. msg is trimmed.
func splitLogLine(line []byte) (level int, prefix, msg []byte, ok bool) {
	for off := 0; ; {
		i := bytes.Index(line[off:], txtNCCL)
		if i < 0 {
			return 0, nil, nil, false
		}
		at := off + i
		rest := line[at+len(txtNCCL):]
		for _, lv := range logLevels {
			if bytes.HasPrefix(rest, lv.word) {
				return lv.level, line[:at], bytes.TrimSpace(rest[len(lv.word):]), true
			}
		}
		off = at + 1
	}
}

// warnSource is the "file.cc:123" NCCL puts before "NCCL WARN".
func warnSource(prefix string) string {
	f := strings.Fields(prefix)
	if len(f) < 2 {
		return ""
	}
	last := f[len(f)-1]
	if strings.HasPrefix(last, "[") || !strings.Contains(last, ":") {
		return ""
	}
	return last
}

// hostOf is the host of the log prefix "host:pid:tid [dev]".
func hostOf(prefix []byte) []byte {
	h, _, _ := bytes.Cut(firstField(prefix), []byte(":"))
	return h
}

// pidKey is "host:pid" from the log prefix, which keeps comm pointers of
// different processes apart.
func pidKey(prefix []byte) []byte {
	f := firstField(prefix)
	i := bytes.IndexByte(f, ':')
	if i < 0 {
		return f
	}
	if j := bytes.IndexByte(f[i+1:], ':'); j >= 0 {
		return f[:i+1+j]
	}
	return f
}

// firstField is the first space-separated field of s.
func firstField(s []byte) []byte {
	s = bytes.TrimLeft(s, " \t")
	if i := bytes.IndexAny(s, " \t"); i >= 0 {
		return s[:i]
	}
	return s
}

// continuesWarn reports whether a line without an NCCL prefix is the wrapped
// tail of the WARN before it rather than nccl-tests output.
func continuesWarn(line string) bool {
	t := strings.TrimSpace(line)
	return t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "`") &&
		!rowLikeRe.MatchString(line) && !strings.Contains(t, "Test ") && !strings.Contains(t, "NCCL version")
}

// parseConnection reads one Channel or CollNet line by hand: it runs for
// every connection line, where a regexp costs more than the rest of the
// line's handling together. It accepts what these did (the tests keep them
// and fuzz one against the other):
//
//	^Channel (\d+)(?:/(\d+))? : (\d+)\[[0-9a-fA-Fx]*\] -> (\d+)\[[0-9a-fA-Fx]*\](?: \[(send|receive)\])? via (.+?)\s*$
//	^CollNet (\d+)/(\d+) : (\d+) \[(send|receive)\] via (.+?)\s*$
//
// The returned Connection has no Host, Via or Class yet; via aliases msg.
func parseConnection(msg []byte) (c Connection, via []byte, ok bool) {
	sc := scanner{b: msg}
	if sc.lit("Channel ") {
		c.Channel, c.Index = sc.num(), -1
		if c.Channel < 0 {
			return Connection{}, nil, false
		}
		if sc.lit("/") {
			if c.Index = sc.num(); c.Index < 0 {
				return Connection{}, nil, false
			}
		}
		if !sc.lit(" : ") {
			return Connection{}, nil, false
		}
		if c.From = sc.num(); c.From < 0 || !sc.hexBracket() || !sc.lit(" -> ") {
			return Connection{}, nil, false
		}
		if c.To = sc.num(); c.To < 0 || !sc.hexBracket() {
			return Connection{}, nil, false
		}
		c.Dir = sc.dir()
	} else if sc.lit("CollNet ") {
		c.Channel = sc.num()
		if c.Channel < 0 || !sc.lit("/") {
			return Connection{}, nil, false
		}
		if c.Index = sc.num(); c.Index < 0 || !sc.lit(" : ") {
			return Connection{}, nil, false
		}
		if c.From, c.To = sc.num(), -1; c.From < 0 {
			return Connection{}, nil, false
		}
		if c.Dir = sc.dir(); c.Dir == "" {
			return Connection{}, nil, false
		}
	} else {
		return Connection{}, nil, false
	}
	if !sc.lit(" via ") || sc.i >= len(msg) {
		return Connection{}, nil, false
	}
	rest := msg[sc.i:]
	via = bytes.TrimRight(rest, " \t\n\f\r")
	if len(via) == 0 {
		via = rest[:1] // (.+?) takes one character before \s*$ takes the rest
	}
	return c, via, true
}

// scanner walks a connection line.
type scanner struct {
	b []byte
	i int
}

// lit consumes s if the line continues with it.
func (sc *scanner) lit(s string) bool {
	if len(sc.b)-sc.i < len(s) || string(sc.b[sc.i:sc.i+len(s)]) != s {
		return false
	}
	sc.i += len(s)
	return true
}

// num consumes decimal digits and returns their value, as strconv.Atoi
// would (clamped to the int range), or -1 if there is none.
func (sc *scanner) num() int {
	start, n := sc.i, 0
	for sc.i < len(sc.b) && '0' <= sc.b[sc.i] && sc.b[sc.i] <= '9' {
		d := int(sc.b[sc.i] - '0')
		if n > (math.MaxInt-d)/10 {
			n = math.MaxInt
		} else {
			n = n*10 + d
		}
		sc.i++
	}
	if sc.i == start {
		return -1
	}
	return n
}

// hexBracket consumes "[" hex digits or x "]".
func (sc *scanner) hexBracket() bool {
	if !sc.lit("[") {
		return false
	}
	for sc.i < len(sc.b) {
		switch c := sc.b[sc.i]; {
		case c == ']':
			sc.i++
			return true
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F', c == 'x':
			sc.i++
		default:
			return false
		}
	}
	return false
}

// dir consumes " [send]" or " [receive]".
func (sc *scanner) dir() string {
	switch {
	case sc.lit(" [send]"):
		return "send"
	case sc.lit(" [receive]"):
		return "receive"
	}
	return ""
}

// classify maps the text after "via" to a transport class. Parenthesised
// parts are dropped first: "(PCI)" marks the GDR mode (2.26+) and "0(3)" a
// PXN proxy rank; neither changes the class.
func classify(via string) (class string, gdr bool) {
	v := parenRe.ReplaceAllString(via, "")
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
