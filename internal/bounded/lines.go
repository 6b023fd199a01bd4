package bounded

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the line length the text parsers read up to. The longest
// line of every real output in fixtures/ is NCCL's own: 1023 bytes, where
// NCCL's 1024-byte debug buffer cuts a "Trees" line; perftest's and
// nccl-tests' lines are under 200. A line a thousand times that long is
// binary garbage or a run of progress bars without a newline, and is
// skipped, not held.
const MaxLine = 1 << 20

const readBufSize = 64 << 10 // bytes read at a time

// Lines yields the lines of a text without their "\n" or "\r\n", reusing
// its buffers, so a line is only valid until the next call. It holds at
// most one line of up to max bytes, skips longer ones (counted, with the
// number of the first), ends at a *StopError from r as at the input's end
// (Stopped says so), and does not yield a last line that lacks its
// newline: that line was cut, and a cut line ("via NET/IB/0/GDR", a cut
// table row) can read as something else. Cut says where it was.
type Lines struct {
	br        *bufio.Reader
	max       int
	long      []byte // a line longer than the read buffer, assembled
	over      bool   // the line being read is over max and is dropped
	cut       bool   // the input ended without a newline after its last line
	tail      []byte // that last line, when not over max
	skipped   int    // lines over max
	firstSkip int    // the number of the first of them
	n         int    // the number of the line last returned (1-based), skipped lines counted
	err       error  // a read error other than io.EOF
	stopped   error  // the *StopError that ended the input before its end
	pfx       prefixes
}

// NewLines reads r a line at a time, lines up to max bytes.
func NewLines(r io.Reader, max int) *Lines {
	return &Lines{br: bufio.NewReaderSize(r, readBufSize), max: max}
}

// Next returns the next line, or false at the end of the input or on a
// read error (then in Err).
func (l *Lines) Next() ([]byte, bool) {
	for {
		b, err := l.br.ReadSlice('\n')
		switch err {
		case nil:
			l.n++
			if l.over {
				l.skip()
				continue
			}
			if len(l.long) > 0 {
				b = append(l.long, b...)
				l.long = b[:0]
			}
			if len(b)-1 > l.max {
				l.skip()
				continue
			}
			b = b[:len(b)-1]
			if n := len(b); n > 0 && b[n-1] == '\r' {
				b = b[:n-1]
			}
			return l.strip(b), true
		case bufio.ErrBufferFull:
			switch {
			case l.over:
			case len(l.long)+len(b) > l.max:
				l.over, l.long = true, nil
			default:
				l.long = append(l.long, b...)
			}
			continue
		case io.EOF:
			if len(b) > 0 || len(l.long) > 0 || l.over {
				l.cut = true
				if !l.over && len(l.long)+len(b) <= l.max {
					l.tail = append(l.long, b...)
				}
			}
		default:
			// A stop is an end, not a broken read: the lines before it
			// stand, the one it fell in is not read (see Stopped).
			if stop := (*StopError)(nil); errors.As(err, &stop) {
				l.stopped = stop
			} else {
				l.err = err
			}
		}
		l.long = nil
		return nil, false
	}
}

// skip counts the line just ended as over max.
func (l *Lines) skip() {
	if l.skipped == 0 {
		l.firstSkip = l.n
	}
	l.over, l.skipped, l.long = false, l.skipped+1, l.long[:0]
}

// N is the number of the line last returned (1-based), skipped lines
// counted.
func (l *Lines) N() int { return l.n }

// Err is the read error that ended the input, other than io.EOF.
func (l *Lines) Err() error { return l.err }

// Stopped is the *StopError that ended the input before its end (the
// total cap of a Reader, or its context), or nil; the line it fell in is
// not read.
func (l *Lines) Stopped() error { return l.stopped }

// Cut reports whether the input ended mid-line, with that line's number
// and its text when it was not over the limit (nil if it was).
func (l *Lines) Cut() (line int, tail []byte, cut bool) {
	return l.n + 1, l.tail, l.cut
}

// Skipped says, for a partial reason, which lines were over the limit
// and skipped; "" when none was.
func (l *Lines) Skipped() string {
	switch {
	case l.skipped == 1:
		return fmt.Sprintf("1 line longer than %s was skipped (line %d)", Size(int64(l.max)), l.firstSkip)
	case l.skipped > 1:
		return fmt.Sprintf("%d lines longer than %s were skipped (the first is line %d)", l.skipped, Size(int64(l.max)), l.firstSkip)
	}
	return ""
}

// TrimASCII is b without the ASCII spaces bytes.TrimSpace trims at its
// ends: the parsers' hot paths read a line's ends as bytes, and leave a
// line ending in another byte to their slow path, where TrimSpace trims
// Unicode spaces too.
func TrimASCII(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && IsASCIISpace(b[i]) {
		i++
	}
	for j > i && IsASCIISpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

// IsASCIISpace is c one of the ASCII spaces unicode.IsSpace holds (' ',
// '\t', '\n', '\v', '\f', '\r').
func IsASCIISpace(c byte) bool { return c == ' ' || '\t' <= c && c <= '\r' }
