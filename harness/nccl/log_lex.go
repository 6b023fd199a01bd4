package nccl

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"unicode"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// The lexer of NCCL debug logs: it finds the NCCL prefix and level of a
// line, rejoins wrapped WARN lines, and scans connection lines by hand.

// line handles one line. raw is only valid during the call: anything kept
// is copied with keep() or keepField().
func (p *logParser) line(raw []byte) {
	if p.s.NCCLVersion == "" && bytes.Contains(raw, ncclVersionText) {
		if m := ncclVersionRe.FindSubmatch(raw); m != nil {
			p.s.NCCLVersion, p.s.CUDAVersion, p.found = keepField(m[1]), keepField(m[2]), true
		}
	}
	level, prefix, msg, ok := splitLogLine(raw)
	if !ok {
		if p.warn != nil && continuesWarn(string(raw)) {
			// A WARN wrapped by whoever copied the log: rejoin it.
			p.warn.Text += " " + keep(bytes.TrimSpace(raw))
		}
		p.flushWarn()
		return
	}
	p.found = true
	p.flushWarn()
	switch level {
	case levelWarn:
		p.otherHints(msg)
		p.warn = &Finding{Level: "WARN", Source: bounded.ClipString(warnSource(string(prefix)), maxField), Text: keep(msg), Line: p.lineNo}
		return
	case levelTrace:
		return
	}
	p.infoLines = true
	if isErrTrace(msg) {
		src, _, _ := bytes.Cut(msg, []byte(" "))
		p.finding(Finding{Level: "ERROR", Source: keepField(src), Text: keep(msg), Line: p.lineNo})
		return
	}
	p.otherHints(msg)
	p.info(prefix, msg)
}

// flushWarn records the held WARN, now that its text is complete.
func (p *logParser) flushWarn() {
	if p.warn != nil {
		p.finding(*p.warn)
		p.warn = nil
	}
}

// Message prefixes, as constants: hasPrefix compares them in a few
// loads, where bytes.HasPrefix calls memeqbody.
const (
	pfxChannel = "Channel "
	pfxRing    = "Ring " // the connection lines of NCCL before 2.5
	pfxCollNet = "CollNet "
	pfxNetwork = "Using network "
	pfxNET     = "NET/"
	pfxGPUGDR  = "GPU Direct RDMA "
	pfxDMABUF  = "DMA-BUF "
	pfxEnv     = "NCCL_"
)

// hasPrefix is bytes.HasPrefix for a constant prefix.
func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// Texts searched for, as bytes for the hot path.
var (
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

// Run only after cheaper checks: the byte tests of isErrTrace, and in
// continuesWarn the prefixes a wrapped WARN cannot start with.
var (
	errTraceRe = regexp.MustCompile(`^\S+\.(?:cc|cu|c|cpp|h):\d+ -> \d+`)
	rowLikeRe  = regexp.MustCompile(`^\s*\d+\s+\d+\s`)
)

// Log levels splitLogLine recognises.
const (
	levelInfo = iota + 1
	levelWarn
	levelTrace
)

var txtNCCL = []byte(" NCCL ")

// splitLogLine splits "host:pid:tid [dev] [file:line ]NCCL LEVEL msg" at
// the first " NCCL " followed by INFO, WARN or TRACE. msg is trimmed.
func splitLogLine(line []byte) (level int, prefix, msg []byte, ok bool) {
	// Most lines are "host:pid:tid [dev] NCCL INFO msg": their first
	// " NCCL " is right after "[dev]", and their prefix has no stamp.
	if at := plainPrefixEnd(line); at > 0 {
		if level, n := levelAt(line[at+len(txtNCCL):]); level != 0 {
			return level, line[:at], bytes.TrimSpace(line[at+len(txtNCCL)+n:]), true
		}
	}
	for off := 0; ; {
		i := bytes.Index(line[off:], txtNCCL)
		if i < 0 {
			return 0, nil, nil, false
		}
		at := off + i
		if level, n := levelAt(line[at+len(txtNCCL):]); level != 0 {
			return level, unstamped(line[:at]), bytes.TrimSpace(line[at+len(txtNCCL)+n:]), true
		}
		off = at + 1
	}
}

// levelAt is the level word rest starts with and its length; 0 if none.
func levelAt(rest []byte) (level, n int) {
	switch {
	case hasPrefix(rest, "INFO"):
		return levelInfo, len("INFO")
	case hasPrefix(rest, "WARN"):
		return levelWarn, len("WARN")
	case hasPrefix(rest, "TRACE"):
		return levelTrace, len("TRACE")
	}
	return 0, 0
}

// plainPrefixEnd is, for a line that starts "host:pid:tid [digits] NCCL ",
// the index of the space before "NCCL"; 0 for any other line. No " NCCL "
// can come before it, as neither field holds a space, and unstamped
// would return the prefix before it unchanged.
func plainPrefixEnd(line []byte) int {
	// isHostPidTid of the first field, in the same scan: the host ends
	// at the first ":", which must come before the first space.
	i := 0
	for i < len(line) && line[i] != ':' && line[i] != ' ' {
		i++
	}
	if i == 0 || i == len(line) || line[i] != ':' || line[0] == '[' {
		return 0
	}
	i, ok := digitsThen(line, i+1, ':')
	if !ok {
		return 0
	}
	if i, ok = digitsThen(line, i+1, ' '); !ok || !hasPrefix(line[i+1:], "[") {
		return 0
	}
	i, ok = digitsThen(line, i+2, ']')
	if !ok || !hasPrefix(line[i+1:], " NCCL ") {
		return 0
	}
	return i + 1
}

// unstamped drops what NCCL puts before "host:pid:tid" when asked for
// timestamps: "[2026-12-01 08:56:55] " by default (NCCL 2.26+ stamps WARN
// lines so unless told otherwise), in any NCCL_DEBUG_TIMESTAMP_FORMAT.
// The prefix then starts at its first host:pid:tid field.
func unstamped(prefix []byte) []byte {
	for off := 0; off < len(prefix); {
		for off < len(prefix) && prefix[off] == ' ' {
			off++
		}
		end := bytes.IndexByte(prefix[off:], ' ')
		if end < 0 {
			end = len(prefix) - off
		}
		if isHostPidTid(prefix[off : off+end]) {
			return prefix[off:]
		}
		off += end
	}
	return prefix
}

// isHostPidTid reports whether f looks like "host:1234:1234": a host not
// starting with "[", then two numbers, each after one ":". It scans by
// hand: it runs on every NCCL line.
func isHostPidTid(f []byte) bool {
	i := bytes.IndexByte(f, ':')
	if i <= 0 || f[0] == '[' {
		return false
	}
	i, ok := digitsThen(f, i+1, ':')
	if !ok {
		return false
	}
	i, ok = digitsThen(f, i+1, 0)
	return ok && i == len(f)
}

// digitsThen skips the digits of f from i, at least one, and says where
// they end and whether the byte there is end (0: f ends there).
func digitsThen(f []byte, i int, end byte) (int, bool) {
	start := i
	for i < len(f) && '0' <= f[i] && f[i] <= '9' {
		i++
	}
	if i == start {
		return i, false
	}
	if end == 0 {
		return i, i == len(f)
	}
	return i, i < len(f) && f[i] == end
}

// warnSource is the "file.cc:123" NCCL puts before "NCCL WARN".
func warnSource(prefix string) string {
	p := strings.TrimSpace(prefix)
	i := strings.LastIndexFunc(p, unicode.IsSpace)
	if i < 0 {
		return "" // one field: no source
	}
	last := p[i+1:]
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
	if sc.lit("Channel ") || sc.lit("Ring ") {
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
		// Before 2.5 a network connection named bare ranks: "Ring 00 :
		// 6 -> 2 [receive] via NET/IB/0".
		if c.From = sc.num(); c.From < 0 || !sc.optHexBracket() || !sc.lit(" -> ") {
			return Connection{}, nil, false
		}
		if c.To = sc.num(); c.To < 0 || !sc.optHexBracket() {
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

// optHexBracket consumes a "[hex]" if the line continues with one.
func (sc *scanner) optHexBracket() bool {
	if sc.i < len(sc.b) && sc.b[sc.i] == '[' {
		return sc.hexBracket()
	}
	return true
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

// isErrTrace reports whether msg is an error return trace such as
// "transport/net.cc:1134 -> 6", checking cheap bytes before the regexp.
func isErrTrace(msg []byte) bool {
	sp := bytes.IndexByte(msg, ' ')
	if sp <= 0 || !hasPrefix(msg[sp:], " -> ") {
		return false
	}
	field := msg[:sp]
	if bytes.IndexByte(field, ':') < 0 || bytes.IndexByte(field, '.') < 0 {
		return false
	}
	return errTraceRe.Match(msg)
}

// embeddedLineRe is an NCCL line's start, "host:pid:tid [dev] " and an
// optional "file.cc:NNN " before "NCCL LEVEL", inside another line.
var embeddedLineRe = regexp.MustCompile(`[A-Za-z0-9_.-]+:\d+:\d+ \[\d+\] (?:\S+:\d+ )?NCCL (?:INFO|WARN|TRACE) `)

// viaWords end a via segment ("NET/IB/0/GDRDMA", "P2P/IPC/read", "SHM"):
// a host glued to one is read after the word.
var viaWords = []string{"GDRDMA", "Shared", "read", "IPC", "CUMEM", "direct", "MNNVL", "SHM"}

// interleavedAt is where another process's NCCL line starts inside a
// connection's via text, or -1. A host glued to a via segment is read
// after it: "NET/IB/0h2:..." as "NET/IB/0" and "h2" (a host that starts
// with a digit right after the index is taken as the index's), and
// "NET/IB/0/GDRDMAh2:..." as "NET/IB/0/GDRDMA" and "h2".
func interleavedAt(via []byte) int {
	if !bytes.Contains(via, txtNCCL) {
		return -1
	}
	loc := embeddedLineRe.FindIndex(via)
	if loc == nil {
		return -1
	}
	k := loc[0]
	if k > 0 && via[k-1] == '/' {
		for k < len(via)-1 && via[k] >= '0' && via[k] <= '9' && via[k+1] != ':' {
			k++
		}
	}
	if k == 0 || via[k-1] == '/' {
		for _, w := range viaWords {
			if bytes.HasPrefix(via[k:], []byte(w)) && via[k+len(w)] != ':' {
				k += len(w)
				break
			}
		}
	}
	if k == 0 {
		return -1
	}
	return k
}
