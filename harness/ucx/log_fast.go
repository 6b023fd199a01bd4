package ucx

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// The hot path of ParseLog. Most lines of a UCX log are its protocol
// tables' rows and borders, each behind UCX's "[time] [host:pid:tid]"
// and often a launcher's prefix: they are read here as bytes, without a
// string or a regexp each, and every other line goes to line as before.

// maxInterned bounds the distinct cells and names kept once (intern).
const maxInterned = 4096

// hotPath is what the hot path keeps between lines: the last prefixes and
// the rank they made, the cells of the row being read, and the strings
// kept once.
type hotPath struct {
	tag      bounded.Tag // the launcher's prefix of the last line
	launched string      // the rank it names (launcherRank)
	from     string      // the launcher's rank of the last UCX prefix
	proc     string      // and its "host:pid:tid"
	rank     string      // the rank the two made
	ranked   bool        // rank is made
	cells    [][]byte
	// headers are the table header lines read, after UCX's prefix, and
	// what each says: every process prints the same few.
	headers map[string]header
	spare   *Transfer // a table no longer open, to reuse
	slow    bool      // every line through line: the path the tests hold this one to
	// strs holds each cell, name and rank kept, once: many processes
	// print the same tables, and a kept string would otherwise be a
	// slice of its whole line.
	strs map[string]string
}

// launcher is launcherRank of the line last read, made anew only when
// its prefix changed.
func (p *logReader) launcher(lr *bounded.Lines) string {
	if !lr.TagIs(p.tag) {
		p.tag = lr.Tag()
		p.launched = p.intern(launcherRank(p.tag))
	}
	return p.launched
}

// rankOf is launched + processOf(proc), made anew only when either
// changed since the last line.
func (p *logReader) rankOf(launched string, proc []byte) string {
	if !p.ranked || launched != p.from || string(proc) != p.proc {
		p.from, p.proc, p.ranked = launched, string(proc), true
		p.rank = p.intern(launched + processOf(p.proc))
	}
	return p.rank
}

// intern is s, kept once while there is room.
func (p *logReader) intern(s string) string {
	if v, ok := p.strs[s]; ok {
		return v
	}
	if len(p.strs) < maxInterned && len(s) <= maxField {
		s = strings.Clone(s) // not a slice of its line
		p.strs[s] = s
	}
	return s
}

// Bounds of the header lines kept (keepHeader).
const (
	maxHeaders    = 256
	maxHeaderLine = 1 << 10
)

// keepHeader keeps what header line says, for the next time a process
// prints it.
func (p *logReader) keepHeader(line string, h header) {
	if p.headers == nil {
		p.headers = map[string]header{}
	}
	if len(p.headers) < maxHeaders && len(line) <= maxHeaderLine {
		p.headers[line] = h
	}
}

// internBytes is clip(string(b)), kept once while there is room.
func (p *logReader) internBytes(b []byte) string {
	if v, ok := p.strs[string(b)]; ok {
		return v
	}
	return p.intern(clip(string(b)))
}

// lineBytes reads line n: UCX's prefix off, then a table row or border
// here, anything else in line.
func (p *logReader) lineBytes(n int, launched string, b []byte) {
	rank, ucx := launched, true
	if end, proc, hasUCX, ok := matchUCXPrefixUCX(b); ok {
		rank, ucx = p.rankOf(launched, proc), hasUCX
		b = b[end:]
	}
	if p.slow || !p.tableLine(n, rank, b, ucx) {
		p.line(n, rank, string(b))
	}
}

// Texts a line handled by line may hold ("cfg": a table header or an
// endpoint line; "UCX", ".c:": an error); a table line that holds none
// is a row or a border.
var (
	txtCfg     = []byte("cfg")
	txtUCX     = []byte("UCX")
	txtSource  = []byte(".c:")
	txtMsgSize = []byte("Message size:")
)

// tableLine reads a table row or border, as line would; false when the
// line may be anything else, or is not plain ASCII at its ends (where
// line's strings.TrimSpace trims more than spaces).
//
// ucx is false where the line is known to hold no "UCX".
func (p *logReader) tableLine(n int, rank string, b []byte, ucx bool) bool {
	t := bounded.TrimASCII(b)
	if len(t) == 0 || t[len(t)-1] >= utf8.RuneSelf {
		return false
	}
	switch {
	case t[0] == '+':
		// A border holds nothing else line looks for.
		if isBorder(t) {
			p.border(rank)
			return true
		}
		return false
	case t[0] != '|':
		return false
	case bytes.Contains(b, txtCfg):
		if h, ok := p.headers[string(b)]; ok {
			p.header(n, rank, h)
			return true
		}
		return false
	case ucx && bytes.Contains(b, txtUCX) || bytes.Contains(b, txtSource) || bytes.Contains(b, txtMsgSize):
		return false
	case len(t) < 2 || t[len(t)-1] != '|':
		return true
	}
	cells, ok := p.splitCells(t[1 : len(t)-1])
	if !ok {
		return false
	}
	range0 := isRangeCell(cells[0])
	cur := p.open[rank]
	switch {
	case len(cells) >= 2 && range0 && cur != nil:
		switch {
		case len(cur.Rows) >= maxRows:
		case len(p.s.Transfers) >= maxEntries:
			// No table is kept any more (flush): only that the
			// table has rows counts, not what they say.
			cur.Rows = append(cur.Rows, Row{})
		default:
			cur.Rows = append(cur.Rows, p.newRowBytes(cells))
		}
	case len(cells) == 2 && !range0:
		return false // a header, maybe: line reads it
	}
	return true
}

// splitCells is tableRow's cells as bytes, into a slice it reuses; false
// where a cell is not plain ASCII at its ends.
func (p *logReader) splitCells(row []byte) ([][]byte, bool) {
	p.cells = p.cells[:0]
	for {
		i := bytes.IndexByte(row, '|')
		cell := row
		if i >= 0 {
			cell = row[:i]
		}
		c := bounded.TrimASCII(cell)
		if len(c) > 0 && (c[0] >= utf8.RuneSelf || c[len(c)-1] >= utf8.RuneSelf) {
			return nil, false
		}
		p.cells = append(p.cells, c)
		if i < 0 {
			return p.cells, true
		}
		row = row[i+1:]
	}
}

// newRowBytes is newRow of cells as bytes.
func (p *logReader) newRowBytes(cells [][]byte) Row {
	r := Row{Range: p.internBytes(cells[0]), Protocol: p.internBytes(cells[1])}
	if len(cells) > 2 {
		r.Lanes = p.internBytes(cells[2])
	}
	lo, hi, _ := bytes.Cut(cells[0], []byte(".."))
	r.Min, _ = parseSize(string(lo))
	r.Max = r.Min
	if string(hi) == "inf" {
		r.Max = maxSize
	} else if len(hi) > 0 {
		r.Max, _ = parseSize(string(hi))
	}
	return r
}
