package ucx

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// ErrNoData: the input holds no UCX protocol table, endpoint line or
// UCX error line.
var ErrNoData = errors.New("no UCX protocol table, endpoint configuration line or UCX error")

// Transfer is one UCX_PROTO_INFO table: an operation on a peer class
// (self, intra-node, inter-node) of one process, its memory types, and
// its rows, smallest sizes first. Range, Protocol and Lanes are its last
// row's: the bulk sizes, which carry the bandwidth.
type Transfer struct {
	Line      int    `json:"line"`
	Rank      string `json:"rank,omitempty"`   // "host:pid" of UCX's prefix, after the launcher's ("srun 0 ")
	Config    string `json:"config"`           // "ucp_context_0 inter-node cfg#2", "mpi ep_cfg[3]"
	Peer      string `json:"peer,omitempty"`   // self, intra-node, inter-node
	Operation string `json:"operation"`        // "tagged message by ucp_tag_send*(multi) from cuda/GPU0"
	Local     string `json:"local,omitempty"`  // memory of the operation's own buffer: host, cuda, cuda-managed, rocm
	Remote    string `json:"remote,omitempty"` // memory of the peer's buffer, where the header names it
	// GPU: the operation's own buffer is GPU memory (it sends from it or
	// fetches into it). A table of host memory, even one written into a
	// peer's GPU memory, is not: UCX prints such tables for its own
	// control traffic in runs that never use them.
	GPU   bool   `json:"gpu"`
	Rows  []Row  `json:"rows"`
	Range string `json:"range"`
	// Protocol and Lanes of the last row.
	Protocol string `json:"protocol"`
	Lanes    string `json:"lanes"`
	// Complete: the rows reach the largest sizes ("..inf"), or UCX closed
	// the table with its border line. A table cut before its bulk row
	// says nothing of the sizes it lacks.
	Complete bool `json:"complete"`
	closed   bool
}

// Row is one size range of a table and the protocol UCX chose for it.
type Row struct {
	Range    string `json:"range"` // "0..8K", "22151..inf", "0"
	Protocol string `json:"protocol"`
	Lanes    string `json:"lanes,omitempty"`
	Min      uint64 `json:"-"`
	Max      uint64 `json:"-"` // math.MaxUint64 for "inf"
}

// EPConfig is a UCX_LOG_LEVEL=info endpoint configuration line. It names
// lanes but not memory types, so it is shown, not judged.
type EPConfig struct {
	Line   int    `json:"line"`
	Rank   string `json:"rank,omitempty"`
	Config string `json:"config"`
	Lanes  string `json:"lanes"`
}

// LogError is a line UCX printed at ERROR, DIAG, FATAL or WARN level, or
// the transport error of its error handler ("[host:pid:tid:tid]
// ib_mlx5_log.c:177  Local protection on mlx5_0:1/IB ..."), as printed.
// What it means is judged in suites/mpi.
type LogError struct {
	Line   int    `json:"line"`
	Rank   string `json:"rank,omitempty"`
	Level  string `json:"level"`            // ERROR, DIAG, FATAL, WARN
	Source string `json:"source,omitempty"` // "ib_mlx5_log.c:177"
	Text   string `json:"text"`
}

// LogSummary is what a UCX log says about the paths UCX chose: its
// tables and endpoint lines as printed, the errors it printed, the
// message sizes a ucx_perftest header names, and the `ucx_info -d` lines
// a pasted log may hold. Which path each table is, and whether that is
// the direct one, is judged in suites/mpi.
type LogSummary struct {
	Transfers []Transfer `json:"transfers"`
	EPConfigs []EPConfig `json:"ep_configs"`
	Errors    []LogError `json:"errors,omitempty"`
	// ErrorLines counts every error line, past the first maxErrors kept.
	ErrorLines int `json:"error_lines,omitempty"`
	// MessageSizes are the sizes ucx_perftest's header says it moved
	// ("| Message size: 4194304 |"); nil where the log has no header.
	MessageSizes  []uint64 `json:"message_sizes,omitempty"`
	Partial       bool     `json:"partial"`
	PartialReason string   `json:"partial_reason,omitempty"`
	// Info is what `ucx_info -d` lines in the log say; nil without any.
	Info *Info `json:"ucx_info,omitempty"`
}

const (
	maxField   = 200  // characters kept of a cell from the log
	maxEntries = 4096 // tables and endpoint lines kept
	maxErrors  = 256  // error lines kept
	maxRows    = 64   // rows kept of one table
	maxOpen    = 1024 // processes with a table open at once
)

// msgSize is ucx_perftest's header line of the sizes it moves, read only
// on a line that holds "Message size:" (one a run).
var msgSize = regexp.MustCompile(`^\|\s*Message size:\s*([0-9][0-9, ]*?)\s*\|$`)

// ParseLog reads a UCX log (any program's output with UCX_PROTO_INFO=y or
// UCX_LOG_LEVEL=info), through launcher prefixes. Each process's tables
// are read apart (UCX's "[host:pid:tid]" and the launcher's rank), so
// two ranks' interleaved lines make two tables. It is partial when the
// input was stopped or ends mid-line. No table, endpoint line or error:
// an error wrapping ErrNoData.
func ParseLog(r io.Reader) (*LogSummary, error) { return parseLog(r, false) }

// parseLog is ParseLog; slow sends every line through line, the path the
// hot one (tableLine) is held to.
func parseLog(r io.Reader, slow bool) (*LogSummary, error) {
	lr := bounded.NewLines(r, bounded.MaxLine)
	lr.StripPrefixes()
	p := &logReader{s: &LogSummary{}, open: map[string]*Transfer{}, hotPath: hotPath{strs: map[string]string{}, slow: slow}}
	for {
		b, ok := lr.Next()
		if !ok {
			break
		}
		p.lineBytes(lr.N(), p.launcher(lr), b)
	}
	p.flushAll()
	s := p.s
	if err := lr.Err(); err != nil {
		return nil, fmt.Errorf("reading UCX log: %w", err)
	}
	if len(s.Transfers) == 0 && len(s.EPConfigs) == 0 && len(s.Errors) == 0 {
		return nil, fmt.Errorf("parsing UCX log: %w", ErrNoData)
	}
	slices.SortStableFunc(s.Transfers, func(a, b Transfer) int { return a.Line - b.Line })
	var reasons []string
	if err := lr.Stopped(); err != nil {
		reasons = append(reasons, err.Error())
	}
	if n, _, cut := lr.Cut(); cut {
		reasons = append(reasons, fmt.Sprintf("the log ends mid-line at line %d, which is not read", n))
	}
	if len(reasons) > 0 {
		s.Partial, s.PartialReason = true, strings.Join(reasons, "; ")
	}
	if i := p.info.done(); len(i.Domains) > 0 {
		s.Info = &i
	}
	return s, nil
}

// launcherRank names the rank or host a launcher's prefix gave a line.
func launcherRank(t bounded.Tag) string {
	switch {
	case t.Rank != "":
		return t.Family + " " + t.Rank + " "
	case t.Host != "":
		return t.Family + " " + t.Host + " "
	}
	return ""
}

// matchIf is re's submatches of s, found only when s holds text, which
// every match of re does.
func matchIf(s, text string, re *regexp.Regexp) []string {
	if !strings.Contains(s, text) {
		return nil
	}
	return re.FindStringSubmatch(s)
}

// logReader holds the tables being read, one per process.
type logReader struct {
	s     *LogSummary
	info  infoReader
	open  map[string]*Transfer // by rank: the table whose rows come next
	order []string             // ranks of open tables, first opened first
	hotPath
}

// line reads a line after UCX's prefix, which lineBytes took off: a line
// that is neither a table row nor a border (log_fast.go).
func (p *logReader) line(n int, rank, line string) {
	p.info.add(line)
	if p.logError(n, rank, line) {
		return
	}
	// Each matcher below only after a text its every match holds.
	t := strings.TrimSpace(line)
	if strings.Contains(t, "cfg") {
		if config, lanes, ok := matchEPLine(t); ok {
			if len(p.s.EPConfigs) < maxEntries {
				p.s.EPConfigs = append(p.s.EPConfigs, EPConfig{Line: n, Rank: rank, Config: clip(config), Lanes: clip(lanes)})
			}
			return
		}
	}
	if m := matchIf(t, "Message size:", msgSize); m != nil {
		p.sizes(m[1])
		return
	}
	if isBorder(t) {
		p.border(rank)
		return
	}
	cells, ok := tableRow(t)
	if !ok {
		return
	}
	cur := p.open[rank]
	switch {
	case len(cells) >= 2 && isRangeCell(cells[0]) && cur != nil:
		if len(cur.Rows) < maxRows {
			cur.Rows = append(cur.Rows, p.newRow(cells))
		}
	case len(cells) == 2 && !isRangeCell(cells[0]) &&
		(strings.Contains(cells[1], " by ") || isConfigCell(cells[0])):
		h := header{Config: p.intern(clip(cells[0])), Peer: findPeer(cells[0]), Operation: p.intern(clip(cells[1]))}
		h.Local, h.Remote = memories(cells[1])
		h.Local, h.Remote = p.intern(h.Local), p.intern(h.Remote)
		h.GPU = h.Local != "" && h.Local != "host"
		p.keepHeader(line, h)
		p.header(n, rank, h)
	}
}

// header is what a table's header line says: a Transfer without its
// line, rank and rows.
type header struct {
	Config, Peer, Operation, Local, Remote string
	GPU                                    bool
}

// header opens the rank's table of header h, at line n.
func (p *logReader) header(n int, rank string, h header) {
	p.flush(rank)
	x := p.spare
	if x == nil {
		x = &Transfer{}
	}
	p.spare = nil
	*x = Transfer{Line: n, Rank: rank, Config: h.Config, Peer: h.Peer, Operation: h.Operation,
		Local: h.Local, Remote: h.Remote, GPU: h.GPU, Rows: x.Rows[:0]}
	p.opened(rank, x)
}

// border closes the rank's open table, if it has rows.
func (p *logReader) border(rank string) {
	if cur := p.open[rank]; cur != nil && len(cur.Rows) > 0 {
		cur.closed = true
		p.flush(rank)
	}
}

// opened makes x the rank's open table. Open tables are bounded: past
// maxOpen processes at once (a hostile log), all are closed first.
func (p *logReader) opened(rank string, x *Transfer) {
	if len(p.open) >= maxOpen {
		p.flushAll()
	}
	p.open[rank] = x
	p.order = append(p.order, rank)
	if len(p.order) > 2*maxOpen {
		// A rank that opens table after table is in order once per
		// table: keep only its first entry, where flushAll flushes it,
		// so that order shrinks to the open ranks and this runs once
		// per maxOpen tables, not on every table after the first 2048.
		first := make(map[string]bool, len(p.open))
		p.order = slices.DeleteFunc(p.order, func(r string) bool {
			if p.open[r] == nil || first[r] {
				return true
			}
			first[r] = true
			return false
		})
	}
}

// processOf is "host:pid" of UCX's "host:pid:tid" or its error
// handler's "host:pid:tid:tid" ("h:1 :0" -> "h:1").
func processOf(s string) string {
	parts := strings.SplitN(strings.ReplaceAll(s, " ", ""), ":", 3)
	if len(parts) >= 2 {
		return bounded.ClipString(parts[0]+":"+parts[1], 64)
	}
	return bounded.ClipString(parts[0], 64)
}

// flush keeps a rank's open table, if it has rows.
func (p *logReader) flush(rank string) {
	cur := p.open[rank]
	if cur == nil {
		return
	}
	delete(p.open, rank)
	p.spare = cur // for the next table; its rows too, unless kept
	if len(cur.Rows) == 0 || len(p.s.Transfers) >= maxEntries {
		return
	}
	last := cur.Rows[len(cur.Rows)-1]
	cur.Range, cur.Protocol, cur.Lanes = last.Range, last.Protocol, last.Lanes
	cur.Complete = cur.closed || last.Max == maxSize
	p.s.Transfers = append(p.s.Transfers, *cur)
	cur.Rows = nil
}

func (p *logReader) flushAll() {
	for _, r := range p.order {
		p.flush(r)
	}
	p.order = nil
}

// sizes adds the sizes of a "Message size:" cell ("4194304", or the
// iov list "1024,2048").
func (p *logReader) sizes(cell string) {
	for _, f := range strings.FieldsFunc(cell, func(r rune) bool { return r == ',' || r == ' ' }) {
		if v, ok := parseSize(f); ok && len(p.s.MessageSizes) < 64 && !slices.Contains(p.s.MessageSizes, v) {
			p.s.MessageSizes = append(p.s.MessageSizes, v)
		}
	}
}

// tableRow splits "| a | b | c |" into its trimmed cells.
func tableRow(t string) ([]string, bool) {
	if len(t) < 2 || t[0] != '|' || t[len(t)-1] != '|' {
		return nil, false
	}
	parts := strings.Split(t[1:len(t)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts, true
}

func clip(s string) string { return bounded.ClipString(s, maxField) }
