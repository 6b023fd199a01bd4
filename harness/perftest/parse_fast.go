package perftest

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// The hot path of Parse: rows, separators, empty lines and the banner's
// settings, most of an output, are read here as bytes, without a string
// each; every other line, and a line that is not ASCII where Parse's
// trimming and splitting would see Unicode spaces, goes to line as it is.

// lineBytes reads one line as line(string(b)) would.
func (p *parser) lineBytes(b []byte) {
	t := trimASCII(b)
	if len(t) == 0 {
		return
	}
	if t[0] >= utf8.RuneSelf || t[len(t)-1] >= utf8.RuneSelf || p.slow {
		p.line(string(b))
		return
	}
	if t[0] == '-' && isSeparator(t) {
		p.open = false // perftest closes every table with one
		return
	}
	if p.cols != nil && t[0] != '#' && (p.cols[0] != colBytes || isDigit(t[0]) || t[0] == '+' || t[0] == '-') {
		// A row's first field is its size, an integer: a line that
		// starts otherwise is not one.
		switch p.rowBytes(t) {
		case rowYes:
			return
		case rowNotASCII:
			p.line(string(b))
			return
		}
	}
	if p.bannerKnown(t) {
		return
	}
	if e, ok := p.tails[string(t)]; ok {
		// line would reach its tail with this line again: all it
		// tests before depends on the line alone, but for the row,
		// which rowBytes just refused.
		p.applyTail(e.s, e.c)
		return
	}
	p.line(string(b))
}

// Bounds of the lines keepTail keeps: perftest prints a few dozen that
// are not rows or banner, the same for every run and rank but for the
// addresses some name.
const (
	maxTails    = 1024
	maxTailLine = 512
)

// tailEntry is a line line read to its tail, and what it found there.
type tailEntry struct {
	s string
	c tailClass
}

// keepTail keeps what line found at its tail in s, for the next time.
func (p *parser) keepTail(s string, c tailClass) {
	if p.tails == nil {
		p.tails = map[string]tailEntry{}
	}
	if len(p.tails) < maxTails && len(s) <= maxTailLine {
		p.tails[s] = tailEntry{s, c}
	}
}

type rowResult int

const (
	rowNo rowResult = iota
	rowYes
	rowNotASCII // a byte past ASCII: line splits it as strings.Fields would
)

// rowBytes is row on bytes, for a line row would get from line: it is
// not a separator, a header, a comment, or NCCL's (a row's fields are
// numbers).
func (p *parser) rowBytes(t []byte) rowResult {
	if len(t) > maxText {
		return rowNo
	}
	p.fieldsB = p.fieldsB[:0]
	for i := 0; i < len(t); {
		// A row is mostly runs of spaces: eight at a time.
		for i+8 <= len(t) && binary.LittleEndian.Uint64(t[i:]) == spaces {
			i += 8
		}
		for i < len(t) && byteClass[t[i]] == classSpace {
			i++
		}
		start := i
		for i < len(t) && byteClass[t[i]] == classField {
			i++
		}
		if i < len(t) && byteClass[t[i]] == classOther {
			return rowNotASCII
		}
		if i > start {
			p.fieldsB = append(p.fieldsB, t[start:i])
		}
	}
	r, ok := parseRow(p, p.fieldsB)
	if !ok {
		return rowNo
	}
	p.addRow(r)
	return rowYes
}

const spaces = 0x2020202020202020 // "        "

// The bytes of a row as rowBytes splits it: a field's, an ASCII space
// (strings.Fields' in ASCII), or past ASCII.
const (
	classField = iota
	classSpace
	classOther
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = classOther
		case asciiSpace(byte(c)):
			t[c] = classSpace
		}
	}
	return t
}()

var (
	txtNCCL        = []byte(" NCCL ")
	txtNCCLVersion = []byte("NCCL version ")
	txtIB          = []byte("ib_")
	txtTest        = []byte("Test")
)

// bannerKnown reads a banner line whose settings bannerPairs already
// split, as line would; false for any other line. A line that is not a
// row (rowBytes) reaches line's banner case unless it is NCCL's, a
// comment or a header, a command line ("ib_") or a banner's title.
func (p *parser) bannerKnown(t []byte) bool {
	key, _, ok := bytes.Cut(t, []byte(":"))
	if !ok || !bannerKeys[string(trimASCII(key))] || t[0] == '#' ||
		bytes.Contains(t, txtNCCL) || bytes.HasPrefix(t, txtNCCLVersion) || bytes.Contains(t, txtIB) || bytes.HasSuffix(t, txtTest) {
		return false
	}
	kvs, ok := p.banners[string(t)]
	if !ok {
		return false
	}
	p.seen = true
	for _, kv := range kvs {
		p.setting(kv[0], kv[1])
	}
	return true
}

// trimASCII is b without the ASCII spaces strings.TrimSpace trims.
func trimASCII(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && asciiSpace(b[i]) {
		i++
	}
	for j > i && asciiSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

func asciiSpace(c byte) bool { return c == ' ' || '\t' <= c && c <= '\r' }
