package ucx

import (
	"math"
	"strconv"
	"strings"
)

// The cells of a UCX_PROTO_INFO table (src/ucp/proto/proto_debug.c,
// ucp_proto_select_info_str and the range column ucs_memunits_range_str
// writes): a size range, "0", "1..22150", "256K..inf", with K, M, G, T
// in binary units.

const maxSize = math.MaxUint64 // "inf"

// memories are the memory types of a table's operation: the operation's
// own buffer (what it sends from, or, for a fetch or get, what it reads
// into) and the peer's, where the header names it.
func memories(op string) (local, remote string) {
	var from, to, into string
	memWords(op, func(word, w string) {
		switch {
		case word == "from" && from == "":
			from = w
		case word == "to" && to == "":
			to = w
		case word == "into" && into == "":
			into = w
		}
	})
	if into != "" {
		return into, from
	}
	return from, to
}

// newRow reads a row's cells: range, protocol, lanes.
func (p *logReader) newRow(cells []string) Row {
	r := Row{Range: p.intern(clip(cells[0])), Protocol: p.intern(clip(cells[1]))}
	if len(cells) > 2 {
		r.Lanes = p.intern(clip(cells[2]))
	}
	lo, hi, _ := strings.Cut(cells[0], "..")
	r.Min, _ = parseSize(lo)
	r.Max = r.Min
	if hi == "inf" {
		r.Max = maxSize
	} else if hi != "" {
		r.Max, _ = parseSize(hi)
	}
	return r
}

// parseSize reads "4194304" or "256K" (K = 1024).
func parseSize(s string) (uint64, bool) {
	mult := uint64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > maxSize/mult {
		return 0, false
	}
	return v * mult, true
}

// Covers says whether the row's range holds size.
func (r Row) Covers(size uint64) bool { return r.Min <= size && size <= r.Max }
