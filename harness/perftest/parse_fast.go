package perftest

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// The hot path of Parse: rows, separators, empty lines and the lines
// line read before (the banner's, perftest's CUDA and address lines),
// most of an output, are read here as bytes, without a string each;
// every other line, and a line that is not ASCII where Parse's trimming
// and splitting would see Unicode spaces, goes to line as it is.

// lineBytes reads one line as line(string(b)) would.
func (p *parser) lineBytes(b []byte) {
	t := bounded.TrimASCII(b)
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
	if p.cols != nil && t[0] != '#' && mayBeRow(p.cols, t[0]) {
		switch p.rowBytes(t) {
		case rowYes:
			return
		case rowNotASCII:
			p.line(string(b))
			return
		}
	}
	if k := p.knownLine(t); k != nil {
		// line would take this line as it did before: all it tests
		// before its banner and its tail depends on the line alone,
		// but for the row, which rowBytes just refused.
		if k.banner {
			p.seen = true
			for _, kv := range k.kvs {
				p.setting(kv[0], kv[1])
			}
		} else {
			p.applyTail(k.s, k.c)
		}
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

// knownLine is a line line read before, after its trimming, and what it
// found: a banner line's settings (bannerPairs), or what its tail found
// in s (keepTail).
type knownLine struct {
	banner bool
	kvs    [][2]string
	s      string
	c      tailClass
	// next is the known line that came next the last time: outputs of
	// many runs or ranks print theirs in the same order, and one
	// comparison costs less than the map's hash.
	next *knownLine
}

// knownLine is the line t as kept, or nil.
func (p *parser) knownLine(t []byte) *knownLine {
	k := p.lastKnown
	if k == nil || k.next == nil || k.next.s != string(t) {
		k = p.known[string(t)]
		if k == nil {
			return nil
		}
		if p.lastKnown != nil {
			p.lastKnown.next = k
		}
	} else {
		k = k.next
	}
	p.lastKnown = k
	return k
}

// keep keeps a line line read, unless kept already.
func (p *parser) keep(k *knownLine) {
	if p.known == nil {
		p.known = map[string]*knownLine{}
	}
	if _, ok := p.known[k.s]; !ok {
		p.known[k.s] = k
	}
}

// keepTail keeps what line found at its tail in s, for the next time.
func (p *parser) keepTail(s string, c tailClass) {
	if p.tails < maxTails && len(s) <= maxTailLine {
		p.keep(&knownLine{s: s, c: c})
		p.tails++
	}
}

// mayBeRow is false for a line that starts with c where a row's first
// field is its size, an integer: [+-]?[0-9]+ (strconv.ParseInt).
func mayBeRow(cols []column, c byte) bool {
	return cols[0] != colBytes || isDigit(c) || c == '+' || c == '-'
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
		i = skipSpaces(t, i)
		switch {
		case i == len(t):
			continue
		case t[i] >= utf8.RuneSelf:
			return rowNotASCII
		case bounded.IsASCIISpace(t[i]):
			i++
			continue
		}
		start := i
		for {
			i = fieldEnd(t, i)
			if i == len(t) || bounded.IsASCIISpace(t[i]) {
				break
			}
			if t[i] >= utf8.RuneSelf {
				return rowNotASCII
			}
			i++ // a control byte, which strings.Fields keeps in a field
		}
		p.fieldsB = append(p.fieldsB, t[start:i])
	}
	r, ok := parseRow(p, p.fieldsB)
	if !ok {
		return rowNo
	}
	p.addRow(r)
	return rowYes
}

// A row is mostly runs of spaces and short fields of digits: skipSpaces
// and fieldEnd look at eight bytes at a time.
const (
	spaces = 0x2020202020202020 // "        "
	bang8  = 0x2121212121212121 // the first byte past the space, in each byte
	high8  = 0x8080808080808080
)

// skipSpaces is the index of the first byte from i that is not ' '.
func skipSpaces(t []byte, i int) int {
	for ; i+8 <= len(t); i += 8 {
		if y := binary.LittleEndian.Uint64(t[i:]) ^ spaces; y != 0 {
			return i + bits.TrailingZeros64(y)/8
		}
	}
	for i < len(t) && t[i] == ' ' {
		i++
	}
	return i
}

// fieldEnd is the index of the first byte from i that is a space, a
// control byte or past ASCII: not in '!'..'\x7f'.
func fieldEnd(t []byte, i int) int {
	for ; i+8 <= len(t); i += 8 {
		// A byte below '!' borrows and sets its high bit, as does one
		// past ASCII: the lowest byte flagged is the first such, exactly
		// (a borrow only flags bytes above it).
		x := binary.LittleEndian.Uint64(t[i:])
		if m := (x - bang8 | x) & high8; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(t) && t[i] > ' ' && t[i] < utf8.RuneSelf {
		i++
	}
	return i
}
