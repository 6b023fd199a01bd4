package nccl

import (
	"bufio"
	"fmt"
	"io"
)

// Line reading, shared by ParseTests and ParseLog.
const (
	readBufSize = 64 << 10 // bytes read at a time
	maxLineLen  = 1 << 20  // longer lines are skipped, not held
)

// lineReader yields lines without their "\n" or "\r\n", reusing its
// buffers, so a line is only valid until the next call. It holds at most
// one line of up to maxLineLen bytes, skips longer ones, and does not yield
// a last line that lacks its newline: that line was cut, and a cut line
// ("via NET/IB/0/GDR") can read as something else.
type lineReader struct {
	br      *bufio.Reader
	long    []byte // a line longer than the read buffer, assembled
	over    bool   // the line being read is over maxLineLen and is dropped
	cut     bool   // the input ended without a newline after its last line
	skipped int    // lines over maxLineLen
	n       int    // the number of the line last returned (1-based), skipped lines counted
	err     error  // a read error other than io.EOF
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readBufSize)}
}

// next returns the next line, or false at the end of the input or on a
// read error (then in err).
func (l *lineReader) next() ([]byte, bool) {
	for {
		b, err := l.br.ReadSlice('\n')
		switch err {
		case nil:
			l.n++
			if l.over {
				l.over, l.skipped = false, l.skipped+1
				continue
			}
			if len(l.long) > 0 {
				b = append(l.long, b...)
				l.long = b[:0]
			}
			b = b[:len(b)-1]
			if n := len(b); n > 0 && b[n-1] == '\r' {
				b = b[:n-1]
			}
			return b, true
		case bufio.ErrBufferFull:
			switch {
			case l.over:
			case len(l.long)+len(b) > maxLineLen:
				l.over, l.long = true, nil
			default:
				l.long = append(l.long, b...)
			}
			continue
		case io.EOF:
			l.cut = l.cut || len(b) > 0 || len(l.long) > 0 || l.over
		default:
			l.err = err
		}
		l.long = nil
		return nil, false
	}
}

// partialReasons says what the reader could not read. what names the
// input ("log", "output"); last, when not empty, names the last thing
// read before a cut ("the 2 KiB row"), since that is where the cut input
// stops being evidence.
func (l *lineReader) partialReasons(what, last string) []string {
	var r []string
	if l.cut {
		after := ""
		if last != "" {
			after = " after " + last
		}
		r = append(r, fmt.Sprintf("the %s ends mid-line%s; the cut line (line %d) was not read", what, after, l.n+1))
	}
	switch {
	case l.skipped == 1:
		r = append(r, "1 line longer than 1 MiB was skipped")
	case l.skipped > 1:
		r = append(r, fmt.Sprintf("%d lines longer than 1 MiB were skipped", l.skipped))
	}
	return r
}
