package nccl

import (
	"bufio"
	"fmt"
	"io"
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

// LogSummary is what an NCCL_DEBUG=INFO log says about one run.
type LogSummary struct {
	NCCLVersion string            `json:"nccl_version"`           // "NCCL version 2.28.3+cuda13.0" -> "2.28.3"
	CUDAVersion string            `json:"cuda_version,omitempty"` // -> "13.0"
	Network     string            `json:"network"`                // first "Using network X": IB, Socket, or a plugin's name
	NetDevices  []NetDevice       `json:"net_devices"`            // "NET/IB : Using [0]mlx5_0:1/RoCE ..."
	GDRHCAs     []GDRHCA          `json:"gdr_hcas"`               // "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'"
	GDRGPUs     []GDRGPU          `json:"gdr_gpus"`               // "GPU Direct RDMA Enabled for GPU X / HCA Y ..."
	DMABUFGPUs  []int             `json:"dmabuf_gpus"`            // "DMA-BUF is available on GPU device N"
	Env         map[string]string `json:"env"`                    // "NCCL_X set by environment to V"
	Ranks       int               `json:"ranks"`                  // largest nranks of any communicator; 0 if no comm line
	Nodes       int               `json:"nodes"`                  // largest nNodes (NCCL 2.19+ prints it); 0 if unknown
	LocalRanks  int               `json:"local_ranks"`            // largest localRanks; 0 if unknown
	Transports  map[string]int    `json:"transports"`             // transport class -> channel connection lines
	Findings    []Finding         `json:"findings"`               // WARN lines and error return traces

	// Outcome and Reasons are Verdict(Expectation{}), the judgement without
	// topology, so the summary marshals complete. A caller that knows the
	// topology can overwrite them with Verdict(exp).
	Outcome string   `json:"verdict"`
	Reasons []string `json:"reasons"`

	// Connections and Comms hold one entry per line and per rank; they are
	// left out of the JSON because a 1000-rank log makes them huge, and
	// Transports and Ranks/Nodes carry what reports need.
	Connections []Connection `json:"-"`
	Comms       []Comm       `json:"-"`
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
	channelRe  = regexp.MustCompile(`^Channel (\d+)(?:/(\d+))? : (\d+)\[[0-9a-fA-Fx]*\] -> (\d+)\[[0-9a-fA-Fx]*\](?: \[(send|receive)\])? via (.+?)\s*$`)
	collNetRe  = regexp.MustCompile(`^CollNet (\d+)/(\d+) : (\d+) \[(send|receive)\] via (.+?)\s*$`)
	netViaRe   = regexp.MustCompile(`^NET/(.+?)/(\d+)((?:/[A-Za-z]+)*)$`)
	parenRe    = regexp.MustCompile(`\([^)]*\)`)
	networkRe  = regexp.MustCompile(`^Using network (.+?)\s*$`)
	netUsingRe = regexp.MustCompile(`^NET/(\S+?)\s*: Using (.*)$`)
	netDevRe   = regexp.MustCompile(`\[(\d+)\]([^\s\[;]+)`)
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
// is one too. Lines NCCL did not write are skipped.
func ParseLog(r io.Reader) (*LogSummary, error) {
	s := &LogSummary{
		NetDevices: []NetDevice{}, GDRHCAs: []GDRHCA{}, GDRGPUs: []GDRGPU{}, DMABUFGPUs: []int{},
		Env: map[string]string{}, Transports: map[string]int{}, Findings: []Finding{},
	}
	p := logParser{s: s, comms: map[string]int{}, findings: map[Finding]int{}, seen: map[string]bool{}}
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if p.line(sc.Text()) {
			found = true
		}
	}
	p.flushWarn()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading NCCL log: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("parsing NCCL log: %w", ErrNoData)
	}
	for _, c := range s.Comms {
		s.Ranks, s.Nodes, s.LocalRanks = max(s.Ranks, c.Ranks), max(s.Nodes, c.Nodes), max(s.LocalRanks, c.LocalRanks)
	}
	slices.Sort(s.DMABUFGPUs)
	v := s.Verdict(Expectation{})
	s.Outcome, s.Reasons = v.Verdict, v.Reasons
	return s, nil
}

// logParser carries the state ParseLog needs between lines.
type logParser struct {
	s        *LogSummary
	comms    map[string]int  // host:pid + comm pointer -> index in s.Comms
	findings map[Finding]int // finding without Count -> index in s.Findings
	seen     map[string]bool // device, HCA and GPU entries already kept
	warn     *Finding        // the WARN of the previous line, held until its wrapped tail is known
}

// line handles one line and reports whether NCCL wrote it.
func (p *logParser) line(raw string) bool {
	version := ncclVersionRe.FindStringSubmatch(raw)
	if version != nil && p.s.NCCLVersion == "" {
		p.s.NCCLVersion, p.s.CUDAVersion = version[1], version[2]
	}
	level, prefix, msg, ok := splitLogLine(raw)
	if !ok {
		if p.warn != nil && continuesWarn(raw) {
			// A WARN wrapped by whoever copied the log: rejoin it.
			p.warn.Text += " " + strings.TrimSpace(raw)
		}
		p.flushWarn()
		return version != nil
	}
	p.flushWarn()
	host, _, _ := strings.Cut(firstField(prefix), ":")
	switch level {
	case "WARN":
		p.warn = &Finding{Level: "WARN", Source: warnSource(prefix), Text: msg}
		return true
	case "TRACE":
		return true
	}
	if errTraceRe.MatchString(msg) {
		src, _, _ := strings.Cut(msg, " ")
		p.finding(Finding{Level: "ERROR", Source: src, Text: msg})
		return true
	}
	p.info(host, pidKey(prefix), msg)
	return true
}

// info handles the message of one INFO line.
func (p *logParser) info(host, pid, msg string) {
	s := p.s
	switch {
	case strings.HasPrefix(msg, "Channel "), strings.HasPrefix(msg, "CollNet "):
		if c, ok := parseConnection(msg); ok {
			c.Host = host
			s.Connections = append(s.Connections, c)
			s.Transports[c.Class]++
		}
	case strings.HasPrefix(msg, "Using network "):
		if m := networkRe.FindStringSubmatch(msg); m != nil && s.Network == "" {
			s.Network = m[1]
		}
	case strings.HasPrefix(msg, "NET/"):
		if m := hcaRe.FindStringSubmatch(msg); m != nil {
			h := GDRHCA{Net: m[1], Index: atoi(m[3]), Name: m[4], Enabled: m[2] == "Enabled"}
			if p.once(fmt.Sprintf("%T %v", h, h)) {
				s.GDRHCAs = append(s.GDRHCAs, h)
			}
		} else if m := netUsingRe.FindStringSubmatch(msg); m != nil {
			for _, d := range netDevRe.FindAllStringSubmatch(m[2], -1) {
				nd := parseNetDevice(m[1], atoi(d[1]), d[2])
				if p.once(fmt.Sprintf("%T %v", nd, nd)) {
					s.NetDevices = append(s.NetDevices, nd)
				}
			}
		}
	case strings.HasPrefix(msg, "GPU Direct RDMA "):
		if m := gpuGDRRe.FindStringSubmatch(msg); m != nil {
			g := GDRGPU{GPU: m[2], HCA: m[3], Enabled: m[1] == "Enabled", Mode: m[4]}
			if p.once(fmt.Sprintf("%T %v", g, g)) {
				s.GDRGPUs = append(s.GDRGPUs, g)
			}
		}
	case strings.HasPrefix(msg, "DMA-BUF "):
		if m := dmabufRe.FindStringSubmatch(msg); m != nil {
			if n := atoi(m[1]); !slices.Contains(s.DMABUFGPUs, n) {
				s.DMABUFGPUs = append(s.DMABUFGPUs, n)
			}
		}
	case strings.HasPrefix(msg, "NCCL_"):
		if m := envRe.FindStringSubmatch(msg); m != nil {
			s.Env[m[1]] = m[2]
		}
	case strings.Contains(msg, "comm "):
		if m := commTopoRe.FindStringSubmatch(msg); m != nil {
			c := p.comm(host, pid, m[1])
			c.Rank, c.Ranks, c.Nodes, c.LocalRanks, c.LocalRank = atoi(m[2]), atoi(m[3]), atoi(m[4]), atoi(m[5]), atoi(m[6])
		} else if m := commRe.FindStringSubmatch(msg); m != nil {
			c := p.comm(host, pid, m[1])
			c.Rank, c.Ranks, c.CudaDev, c.BusID = atoi(m[2]), atoi(m[3]), atoi(m[4]), m[5]
		}
	}
}

// comm returns the communicator a comm line is about, adding it if new.
func (p *logParser) comm(host, pid, id string) *Comm {
	key := pid + " " + id
	i, ok := p.comms[key]
	if !ok {
		i = len(p.s.Comms)
		p.comms[key] = i
		p.s.Comms = append(p.s.Comms, Comm{Host: host, ID: id})
	}
	return &p.s.Comms[i]
}

// finding adds f or counts it again.
func (p *logParser) finding(f Finding) {
	if i, ok := p.findings[f]; ok {
		p.s.Findings[i].Count++
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

// once reports whether key is new; every rank repeats the NIC lines.
func (p *logParser) once(key string) bool {
	if p.seen[key] {
		return false
	}
	p.seen[key] = true
	return true
}

// splitLogLine splits "host:pid:tid [dev] [file:line ]NCCL LEVEL msg".
func splitLogLine(line string) (level, prefix, msg string, ok bool) {
	for _, lv := range []string{"INFO", "WARN", "TRACE"} {
		if i := strings.Index(line, " NCCL "+lv); i >= 0 {
			rest := line[i+len(" NCCL ")+len(lv):]
			return lv, line[:i], strings.TrimSpace(rest), true
		}
	}
	return "", "", "", false
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

// pidKey is "host:pid" from the log prefix, which keeps comm pointers of
// different processes apart.
func pidKey(prefix string) string {
	parts := strings.SplitN(firstField(prefix), ":", 3)
	if len(parts) < 2 {
		return parts[0]
	}
	return parts[0] + ":" + parts[1]
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// continuesWarn reports whether a line without an NCCL prefix is the wrapped
// tail of the WARN before it rather than nccl-tests output.
func continuesWarn(line string) bool {
	t := strings.TrimSpace(line)
	return t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "`") &&
		!rowLikeRe.MatchString(line) && !strings.Contains(t, "Test ") && !strings.Contains(t, "NCCL version")
}

// parseConnection reads one Channel or CollNet line.
func parseConnection(msg string) (Connection, bool) {
	if m := channelRe.FindStringSubmatch(msg); m != nil {
		c := Connection{Channel: atoi(m[1]), Index: -1, From: atoi(m[3]), To: atoi(m[4]), Dir: m[5], Via: m[6]}
		if m[2] != "" {
			c.Index = atoi(m[2])
		}
		c.Class, c.GDR = classify(c.Via)
		return c, true
	}
	if m := collNetRe.FindStringSubmatch(msg); m != nil {
		c := Connection{Channel: atoi(m[1]), Index: atoi(m[2]), From: atoi(m[3]), To: -1, Dir: m[4], Via: m[5]}
		c.Class, c.GDR = classify(c.Via)
		return c, true
	}
	return Connection{}, false
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
