package nccl

import (
	"fmt"
	"io"
	"slices"
	"strings"
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
	maxClasses     = 64   // transport classes told apart; a real log has fewer than 10
)

// classOther names the classes past maxClasses: "other", "P2P/other",
// "NET/other", "NET/other/GDRDMA".
const classOther = "other"

// LogSummary is what an NCCL_DEBUG=INFO log says about one run.
type LogSummary struct {
	NCCLVersion string            `json:"nccl_version"`           // "NCCL version 2.28.3+cuda13.0" -> "2.28.3"
	CUDAVersion string            `json:"cuda_version,omitempty"` // -> "13.0"
	Network     string            `json:"network"`                // first "Using network X": IB, Socket, or a plugin's name
	NetDevices  []NetDevice       `json:"net_devices"`            // "NET/IB : Using [0]mlx5_0:1/RoCE ..."; the first 256
	GDRHCAs     []GDRHCA          `json:"gdr_hcas"`               // "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'"; the first 256
	GDRGPUs     []GDRGPU          `json:"gdr_gpus"`               // "GPU Direct RDMA Enabled for GPU X / HCA Y ..."; the first 256
	DMABUFGPUs  []int             `json:"dmabuf_gpus"`            // "DMA-BUF is available on GPU device N"; the first 256
	Env         map[string]string `json:"env"`                    // "NCCL_X set by environment to V" (or "set to V"); 256 names at most
	Ranks       int               `json:"ranks"`                  // largest nranks of any communicator; 0 if no comm line
	Nodes       int               `json:"nodes"`                  // largest nNodes (NCCL 2.19+ prints it); 0 if unknown
	LocalRanks  int               `json:"local_ranks"`            // largest localRanks; 0 if unknown
	Transports  map[string]int    `json:"transports"`             // transport class -> channel connection lines
	// Uses says, per transport class, on which channels and between which
	// ranks the connection lines were; sorted by class.
	Uses []TransportUse `json:"transport_uses"`
	// NICs says which NET device each rank's connections went through,
	// with the rank's GPU where its comm line names it (log_nics.go);
	// the first maxNICUses, NICUsesOmitted counts the lines past them.
	NICs            []NICUse  `json:"nic_uses,omitempty"`
	NICUsesOmitted  int       `json:"nic_uses_omitted,omitempty"`
	Findings        []Finding `json:"findings"`                   // WARN lines and error return traces; the first 256 distinct
	FindingsOmitted int       `json:"findings_omitted,omitempty"` // lines of findings past the first 256
	// Hints are the lines in which NCCL says why it will not take the
	// direct path, each kind once, with what to do about it.
	Hints []Hint `json:"hints"`

	// Outcome and Reasons are Verdict(Expectation{}), the judgement without
	// topology, so the summary marshals complete. A caller that knows the
	// topology can overwrite them with Verdict(exp).
	Outcome string   `json:"verdict"`
	Reasons []string `json:"reasons"`

	// Partial is set when the log does not cover a whole run, and
	// PartialReason says why in one or more short sentences joined by
	// "; ". ParseLog documents the rules.
	// Prefix is the launcher or collector prefix the log's lines had
	// (bounded.Prefix*: mpirun, ray, srun, torchrun, pdsh, kubectl,
	// compose), stripped before parsing; "" when none.
	Prefix        string `json:"prefix,omitempty"`
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
	Line   int    `json:"line"` // the input line of its first occurrence (1-based)
}

// findingKey is what makes two findings the same: not their count or line.
type findingKey struct{ level, source, text string }

// Hint kinds.
const (
	// HintNoPeermemModule: "NET/IB : GPU Direct RDMA Disabled for HCA 0
	// 'mlx5_0' (no module)", which NCCL 2.5.6 to 2.12 print when
	// /sys/kernel/mm/memory_peers holds no peer-memory client
	// (transport/net_ib.cc, ncclIbGetProperties). Those versions have no
	// DMA-BUF path.
	HintNoPeermemModule = "no-peermem-module"
	// HintGDRDisabled: the same line without "(no module)", which NCCL
	// 2.13 and later print (graph/topo.cc) when the NIC supports neither
	// a peer-memory module nor DMA-BUF registration.
	HintGDRDisabled = "gdr-disabled"
)

// Hint is NCCL saying why it will not use GPU Direct RDMA, and what to do.
type Hint struct {
	Kind   string `json:"kind"`   // HintNoPeermemModule or HintGDRDisabled
	Text   string `json:"text"`   // NCCL's message on the first line that said it
	Line   int    `json:"line"`   // that line in the input (1-based)
	Count  int    `json:"count"`  // distinct messages that said it: one per NIC
	Advice string `json:"advice"` // what to do about it
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

// ParseLog reads an NCCL debug log; nccl-tests output with NCCL_DEBUG=INFO
// is one too. Lines NCCL did not write are skipped. It streams: memory
// stays bounded (see the Max constants) however long the log, and lines
// are matched by cheap prefix checks before any regexp.
//
// Findings and Hints carry the number of the line they were first seen
// on. The summary is marked Partial, with the reason, when:
//   - r stopped before its end (a bounded.Reader at its total cap, or
//     interrupted): the lines before stand, the one it fell in is not read;
//   - the log ends mid-line: the cut line is not read, since a cut
//     "via NET/IB/0/GDRDMA" would read as host-staged;
//   - a line is longer than 1 MiB (binary garbage): it is skipped;
//   - the connection lines name more than 64 transport classes: those
//     past them that NCCL does not name itself (a plugin, a P2P mode) are
//     counted under "other" classes, judged as they would be (lumpClass);
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
	lr := newLines(r)
	for {
		b, ok := lr.Next()
		if !ok {
			break
		}
		p.lineNo = lr.N()
		p.line(b)
	}
	p.flushWarn()
	if err := lr.Err(); err != nil {
		return nil, fmt.Errorf("reading NCCL log: %w", err)
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
	p.finishHints()
	p.adviseHints()
	p.nics.finish(s)
	reasons := partialReasons(lr, "log", "")
	switch {
	case p.infoLines && p.initDone == 0:
		reasons = append(reasons, "no communicator reached Init COMPLETE: the log stops during NCCL init or is an excerpt")
	case p.initStart > p.initDone:
		reasons = append(reasons, fmt.Sprintf("%d of %d communicators logged Init START without Init COMPLETE: the log stops during NCCL init", p.initStart-p.initDone, p.initStart))
	}
	if p.lumped > 0 {
		reasons = append(reasons, fmt.Sprintf("the log names more than %d transport classes: %d connection lines past them are counted under %q classes", maxClasses, p.lumped, classOther))
	}
	if p.initDone > p.ended {
		reasons = append(reasons, fmt.Sprintf("%d of %d communicators that reached Init COMPLETE were not destroyed: the log stops while NCCL was running", p.initDone-p.ended, p.initDone))
	}
	if len(reasons) > 0 {
		s.Partial, s.PartialReason = true, strings.Join(reasons, "; ")
	}
	v := s.Verdict(Expectation{})
	s.Outcome, s.Reasons = v.Verdict, v.Reasons
	s.Prefix = lr.Prefix()
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
	comms    map[string]int     // host:pid + comm pointer -> index in s.Comms
	findings map[findingKey]int // -> index in s.Findings
	hints    map[string]int     // hint kind -> index in s.Hints
	lineNo   int                // the number of the line being read
	devices  map[NetDevice]bool
	hcas     map[GDRHCA]bool
	gpus     map[GDRGPU]bool
	repeated map[string]bool    // NIC and GDR message texts already handled; handling them again changes nothing
	vias     map[string]viaInfo // "via" text -> its class
	uses     map[viaInfo]int    // class -> index in s.Uses
	warn     *Finding           // the WARN of the previous line, held until its wrapped tail is known
	scratch  Comm               // written for comm lines past MaxComms
	nics     *nicUses           // which NIC each rank's connections used

	lumped                     int  // connection lines counted under a classOther class
	found, infoLines           bool // an NCCL line; an INFO line
	initStart, initDone, ended int  // communicators: "Init START", "Init COMPLETE", "Destroy/Abort COMPLETE" lines

	ibNoDevice     []byte // "NET/IB : No device found.", held until the network is known
	ibNoDeviceLine int
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
			Hints: []Hint{},
		},
		comms: map[string]int{}, findings: map[findingKey]int{}, hints: map[string]int{},
		devices: map[NetDevice]bool{}, hcas: map[GDRHCA]bool{}, gpus: map[GDRGPU]bool{},
		repeated: map[string]bool{}, vias: map[string]viaInfo{}, uses: map[viaInfo]int{},
		nics: newNICUses(),
	}
}
