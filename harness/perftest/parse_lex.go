package perftest

import (
	"bytes"
	"encoding/binary"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The line lexer of perftest output: table headers and rows, the banner's
// "key : value" settings, the echoed command line and the test name.

func (p *parser) line(raw string) {
	s := strings.TrimSpace(raw)
	if s == "" || isNCCLLine(s) {
		return
	}
	switch {
	case isSeparator(s):
		p.open = false // perftest closes every table with one
		return
	case strings.HasPrefix(s, "#bytes") && strings.Contains(s, "#iterations") && len(s) <= maxText:
		p.header(s)
		return
	case strings.HasPrefix(s, "#"):
		// perftest prints no other '#' lines worth reading ("#, usec"
		// histograms); our own fixtures use them as comments.
		return
	}
	// Rows are most of the output: try them first. The cheap string tests
	// in front of each regexp keep the parser fast on long inputs.
	if p.cols != nil && mayBeRow(p.cols, s[0]) && p.row(s) {
		return
	}
	if strings.Contains(s, "ib_") {
		if cmd, ok := matchCommand(s); ok {
			p.seen = true
			p.res.Command = clipText(cmd)
			p.memFromCommand(strings.Fields(p.res.Command)[1:], s)
			return
		}
	}
	if isTestName(s) {
		p.seen = true
		p.res.Test = clipField(s)
		switch {
		case strings.Contains(s, " BW "):
			p.res.Kind = KindBW
		case strings.Contains(s, " Latency "):
			p.res.Kind = KindLat
		}
		return
	}
	if key, _, ok := strings.Cut(s, ":"); ok && bannerKeys[strings.TrimSpace(key)] {
		p.seen = true
		for _, kv := range p.bannerPairs(s) {
			p.setting(kv[0], kv[1])
		}
		return
	}
	c := p.classifyTail(s)
	p.keepTail(s, c)
	p.applyTail(s, c)
}

// tailClass is what line finds in a line that is none of perftest's
// table, banner or command lines: the GPU it names, the memory it shows
// and whether it reports a failure. It depends on the line alone, so a
// line seen before is not looked at again (keepTail).
type tailClass struct {
	gpu    string
	hasGPU bool
	mem    Mem // MemCUDADMABuf, MemCUDA, or MemUnknown for neither
	failed bool
}

func (p *parser) classifyTail(s string) tailClass {
	var c tailClass
	c.gpu, c.hasGPU = gpuName(s)
	low := p.lower(s)
	// Failure lines count as evidence too: "DMA-BUF is not supported on
	// this GPU" says which path was asked for.
	switch {
	case bytes.Contains(low, txtDMABuf) || bytes.Contains(low, txtDMABuf2):
		c.mem = MemCUDADMABuf
	case bytes.Contains(low, txtCu) && hasCUDA(s):
		c.mem = MemCUDA
	}
	c.failed = isFailure(low)
	return c
}

func (p *parser) applyTail(s string, c tailClass) {
	if c.hasGPU {
		p.res.GPU = clipField(c.gpu)
	}
	if c.mem != MemUnknown {
		p.seen = p.seen || perftestGPURe.MatchString(s)
		p.mem(c.mem, s, true)
	}
	if c.failed || (len(p.failed) > 0 && counterRe.MatchString(s)) {
		// Any error line belongs to a perftest failure, but only one
		// that names perftest's things shows that this is perftest.
		p.seen = p.seen || perftestWords.MatchString(s)
		if len(p.failed) < maxFailureLines {
			p.failed = append(p.failed, clipText(s))
			p.failedAt = append(p.failedAt, p.n)
		} else {
			p.failedOmitted++
		}
	}
}

// perftestWords are the things perftest's error lines name (QPs, MRs,
// completions, CUDA calls ...), which a generic error line does not.
var perftestWords = regexp.MustCompile(`\b(?:CQ|QPs?|MR|PD|SRQ|IB|GID|LID|MTU)\b|\bcu[A-Z][A-Za-z]+(?:_v\d)?\(|` +
	`(?i:\b(?:rdma_cm|ibv_\w+|run_iter\w*|wr_id|syndrom|[rsc]cnt|infiniband|roce|cuda|gpu|dma-?buf)\b|` +
	`completion with error|failed status|couldn't connect to|listen to port|socket connection|between server and client)`)

// perftestGPURe matches the GPU lines perftest prints (cuda_memory.c),
// which other tools' CUDA lines ("Test CUDA failure ...") do not.
var perftestGPURe = regexp.MustCompile(`initializing CUDA|CUDA devices in system|CUDA device \d+: PCIe address|CUDA Ctx|CUDA device integrated|` +
	`GPU buffer|DMA-BUF is not supported on this GPU|CUDA tests with inline|ibv_reg_dmabuf_mr|\bcu[A-Z][A-Za-z]+(?:_v\d)?\(`)

// isNCCLLine reports whether s is NCCL's (a log line or its version line):
// NCCL logs speak of GPUs and DMA-BUF too, and are not perftest output.
func isNCCLLine(s string) bool {
	if !strings.Contains(s, " NCCL ") { // one scan for the three below
		return strings.HasPrefix(s, "NCCL version ")
	}
	return strings.Contains(s, " NCCL INFO ") || strings.Contains(s, " NCCL WARN ") ||
		strings.Contains(s, " NCCL TRACE ") || strings.HasPrefix(s, "NCCL version ")
}

// dashes is "--------", eight bytes of a separator.
const dashes = 0x2d2d2d2d2d2d2d2d

func isSeparator[T string | []byte](s T) bool {
	if len(s) < 20 {
		return false
	}
	i := 0
	if b, ok := any(s).([]byte); ok {
		for ; i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == dashes; i += 8 {
		}
	}
	for ; i < len(s); i++ {
		if s[i] != '-' {
			return false
		}
	}
	return true
}

type column int

const (
	colOther column = iota
	colBytes
	colIters
	colBWPeak
	colBWAvg
	colMsgRate
	colTMin
	colTMax
	colTTypical
	colTAvg
	colTStdev
	colP99
	colP999
	colTPS
	colCPU
)

var columnNames = map[string]column{
	"#bytes": colBytes, "#iterations": colIters,
	"BW_peak": colBWPeak, "BW_average": colBWAvg, "MsgRate": colMsgRate,
	"t_min": colTMin, "t_max": colTMax, "t_typical": colTTypical,
	"t_avg": colTAvg, "t_stdev": colTStdev,
	"99%_percentile": colP99, "99.9%_percentile": colP999,
	"tps_average": colTPS, "CPU_Util": colCPU,
}

// Some column titles contain spaces; join them so that a header splits on
// whitespace like its rows do.
var headerJoin = strings.NewReplacer(
	"BW peak", "BW_peak", "BW average", "BW_average",
	"BW Port", "BW_Port", "MsgRate Port", "MsgRate_Port",
	"% percentile", "%_percentile", "tps average", "tps_average",
)

// Banner keys perftest prints (ctx_print_test_info); a "key : value" line
// counts as banner only if its first key is one of these, which keeps
// "local address: LID ..." and "GID: 00:00:..." out.
var bannerKeys = map[string]bool{
	"Dual-port": true, "Device": true, "Number of qps": true, "Transport type": true,
	"Connection type": true, "Using SRQ": true, "PCIe relax order": true, "Lock-free": true,
	"ibv_wr* API": true, "Using DDP": true, "Using Enhanced Reorder": true,
	"TX depth": true, "RX depth": true, "CQ Moderation": true, "CQE Poll Batch": true,
	"Post List": true, "Recv Post List": true, "Mtu": true, "Link type": true,
	"Buffer size": true, "GID index": true, "GID index2": true, "Max inline data": true,
	"Outstand reads": true, "rdma_cm QPs": true, "Data ex. method": true,
	"Use ROCm memory": true, "Use MUSA memory": true, "NUMA node": true,
}

var (
	kvRe = regexp.MustCompile(`([^\s:][^:\t]*?)\s*:\s*(\S+)`)
)

// maxBannerLines is how many distinct banner lines bannerPairs keeps:
// perftest prints about 20, the same for every run and rank.
const maxBannerLines = 256

// bannerPairs is kvRe's "key : value" pairs of a banner line, clipped,
// each line's kept once: kvRe is the costliest regexp of a run, and an output of many
// runs, or of every rank, repeats the same banner.
func (p *parser) bannerPairs(s string) [][2]string {
	if k := p.known[s]; k != nil && k.banner {
		return k.kvs
	}
	var kvs [][2]string
	for _, kv := range kvRe.FindAllStringSubmatch(s, maxSettings) {
		kvs = append(kvs, [2]string{clipField(kv[1]), clipField(kv[2])})
	}
	if p.banners < maxBannerLines && len(s) <= maxText {
		p.keep(&knownLine{s: s, banner: true, kvs: kvs})
		p.banners++
	}
	return kvs
}

func (p *parser) header(s string) {
	p.seen, p.open = true, true
	h, ok := p.headers[s]
	if !ok {
		h = splitHeader(s)
		if len(p.headers) < maxHeaders {
			if p.headers == nil {
				p.headers = map[string]headerCols{}
			}
			p.headers[s] = h
		}
	}
	p.cols = h.cols
	p.bwScale = 1
	for i, c := range h.cols {
		switch unit := h.units[i]; c {
		case colBWPeak, colBWAvg:
			p.res.Unit, p.res.UnitSource = unit, "header"
			p.bwScale = toGbps(unit)
			if p.res.Kind == "" {
				p.res.Kind = KindBW
			}
		case colTMin, colTAvg:
			p.res.LatencyUnit = unit
			if p.res.Kind == "" {
				p.res.Kind = KindLat
			}
		}
	}
}

// maxHeaders is how many distinct table headers header keeps split: a run
// prints one, an output of many runs or ranks the same few.
const maxHeaders = 64

// headerCols is a table header split: each column and the unit its title
// names ("Gb/sec" of "BW peak[Gb/sec]"), clipped. cols is shared by every
// table of the header, and never written.
type headerCols struct {
	cols  []column
	units []string
}

func splitHeader(s string) headerCols {
	f := strings.Fields(headerJoin.Replace(s))
	h := headerCols{cols: make([]column, len(f)), units: make([]string, len(f))}
	for i, name := range f {
		unit := ""
		if j := strings.IndexByte(name, '['); j >= 0 {
			unit = strings.TrimSuffix(name[j+1:], "]")
			name = name[:j]
		}
		h.cols[i], h.units[i] = columnNames[name], clipField(unit)
	}
	return h
}

// toGbps is the factor from a printed BW unit to Gb/s. perftest divides by
// 0x100000 for MB/sec and MiB/sec, and by 125000000 (10^9 bits) for Gb/sec.
func toGbps(unit string) float64 {
	switch unit {
	case UnitMBps, UnitMiBps:
		return float64(0x100000) * 8 / 1e9
	default:
		return 1
	}
}

// row takes a table line; it returns false for a line that is not one.
func (p *parser) row(s string) bool {
	// perftest prints every field of its header on every row, so a
	// shorter line was cut or damaged: its numbers are not a result.
	if len(s) > maxText {
		return false // no row is this long
	}
	p.fields = appendFields(p.fields[:0], s) // rows are most lines: no slice each
	r, ok := parseRow(p, p.fields)
	if ok {
		p.addRow(r)
	}
	return ok
}

// parseRow reads a row's fields by the header's columns; false when they
// are not a row.
func parseRow[T string | []byte](p *parser, f []T) (Row, bool) {
	if len(f) < 2 || len(f) != len(p.cols) {
		return Row{}, false
	}
	var r Row
	for i, tok := range f {
		c := p.cols[i]
		if c == colBytes || c == colIters {
			n, ok := atoi(tok)
			if !ok || n < 0 {
				return Row{}, false
			}
			if c == colBytes {
				r.Bytes = n
			} else {
				r.Iterations = n
			}
			continue
		}
		v, err := atof(tok)
		if err != nil {
			return Row{}, false
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0 // perftest prints -nan/inf when a timer read 0; keep JSON valid
		}
		switch c {
		case colBWPeak:
			r.BWPeakGbps = v * p.bwScale
		case colBWAvg:
			r.BWAvgGbps = v * p.bwScale
		case colMsgRate:
			r.MsgRateMpps = v
		case colTMin:
			r.TMin = v
		case colTMax:
			r.TMax = v
		case colTTypical:
			r.TTypical = v
		case colTAvg:
			r.TAvg = v
		case colTStdev:
			r.TStdev = v
		case colP99:
			r.P99 = v
		case colP999:
			r.P999 = v
		case colTPS:
			r.TPSAvg = v
		case colCPU:
			r.CPUUtil = v
		}
	}
	return r, true
}

// addRow keeps a row, or counts it past maxRows.
func (p *parser) addRow(r Row) {
	if len(p.res.Rows) >= maxRows {
		if p.rowsOmitted == 0 {
			p.firstOmitted = p.n
		}
		p.rowsOmitted++
		return
	}
	p.res.Rows = append(p.res.Rows, r)
}

// addSetting keeps a banner or test_info setting, clipped, while there is
// room for a new one.
func (r *Result) addSetting(key, val string) (string, bool) {
	if r.Settings == nil {
		r.Settings = map[string]string{}
	}
	return r.putSetting(clipField(key), clipField(val))
}

// putSetting is addSetting of a key and value already clipped.
func (r *Result) putSetting(key, val string) (string, bool) {
	if r.Settings == nil {
		r.Settings = map[string]string{}
	}
	if len(r.Settings) < maxSettings {
		r.Settings[key] = val // one map operation, not two: every banner line of every run
		return val, true
	}
	if _, ok := r.Settings[key]; !ok {
		return val, false
	}
	r.Settings[key] = val
	return val, true
}

// setting takes a banner setting bannerPairs split and clipped.
func (p *parser) setting(key, val string) {
	val, ok := p.res.putSetting(key, val)
	if !ok {
		return
	}
	num := func() (int, bool) {
		n, err := strconv.Atoi(strings.TrimSuffix(val, "[B]"))
		return n, err == nil
	}
	switch key {
	case "Device":
		p.res.Device = val
	case "Link type":
		p.res.LinkType = val
	case "Transport type":
		p.res.Transport = val
	case "Connection type":
		p.res.Connection = val
	case "GID index":
		if n, ok := num(); ok {
			p.res.GIDIndex = &n
		}
	case "Number of qps":
		if n, ok := num(); ok {
			p.res.QPs = n
		}
	case "Mtu":
		if n, ok := num(); ok {
			p.res.MTU = n
		}
	}
}

// appendFields appends strings.Fields(s) to dst: the same fields, split
// around runs of unicode.IsSpace, into a slice the caller reuses.
func appendFields(dst []string, s string) []string {
	start := -1
	for i := 0; i < len(s); {
		c, size, space := s[i], 1, false
		if c < utf8.RuneSelf {
			space = c == ' ' || '\t' <= c && c <= '\r'
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
		}
		switch {
		case space && start >= 0:
			dst, start = append(dst, s[start:i]), -1
		case !space && start < 0:
			start = i
		}
		i += size
	}
	if start >= 0 {
		dst = append(dst, s[start:])
	}
	return dst
}
