package nccl

import (
	"fmt"
	"io"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// What ParseTests and ParseLog keep of a line. NCCL writes at most 1023
// bytes a line (its debug buffer is 1024 bytes), and no text nccl-tests
// prints is longer, so maxText never clips what they wrote; it only keeps
// a long garbage line from being kept whole, once per capped entry.
const (
	maxText  = 1 << 10 // a message, a finding, a "via" text, an unparsed row
	maxField = 256     // a host name, a bus ID, a GPU name, a type
)

// keep copies at most maxText bytes of b; see bounded.Clip.
func keep(b []byte) string { return bounded.Clip(b, maxText) }

// keepField copies at most maxField bytes of b.
func keepField(b []byte) string { return bounded.Clip(b, maxField) }

// clipText copies at most maxText bytes of s.
func clipText(s string) string { return bounded.ClipString(s, maxText) }

// clipField copies at most maxField bytes of s.
func clipField(s string) string { return bounded.ClipString(s, maxField) }

// newLines reads the lines ParseTests and ParseLog parse: up to
// bounded.MaxLine bytes each.
func newLines(r io.Reader) *bounded.Lines {
	l := bounded.NewLines(r, bounded.MaxLine)
	l.StripPrefixes() // output captured through mpirun, Ray, srun, kubectl...
	return l
}

// partialReasons says what the reader could not read. what names the
// input ("log", "output"); last, when not empty, names the last thing
// read before a cut ("the 2 KiB row"), since that is where the cut input
// stops being evidence.
func partialReasons(l *bounded.Lines, what, last string) []string {
	var r []string
	if err := l.Stopped(); err != nil {
		r = append(r, fmt.Sprintf("the %s was not read to its end: %v", what, err))
	}
	if line, _, cut := l.Cut(); cut {
		after := ""
		if last != "" {
			after = " after " + last
		}
		r = append(r, fmt.Sprintf("the %s ends mid-line%s; the cut line (line %d) was not read", what, after, line))
	}
	if s := l.Skipped(); s != "" {
		r = append(r, s)
	}
	return r
}
