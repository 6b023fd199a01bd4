package overrides

import (
	"math"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/version"
)

// This file is NCCL's grammar for the values of its variables, as
// NCCL 2.30 (NVIDIA/nccl master, 2026) reads them; where it changed the
// version it changed in is named. Line numbers are of that source.

// cNumber is what C's strtoll(s, NULL, 0) makes of s, as NCCL's integer
// parameters read it (src/misc/param.cc:95, ncclLoadParam): leading
// space skipped, an optional sign, 0x for hex, 0 for octal, then as many
// digits as fit; what follows is ignored ("1 # comment" is 1, "08" is 0).
// digits says whether any digit was read; overflow is ERANGE, for which
// NCCL keeps the default (:96-98).
type cNumber struct {
	value    int64
	digits   bool
	overflow bool
	rest     string // what strtoll left unread
}

func strtoll(s string) cNumber {
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	base := uint64(10)
	switch {
	case i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && hexDigit(s[i+2]) >= 0:
		base, i = 16, i+2
	case i < len(s) && s[i] == '0':
		base = 8
	}
	var n cNumber
	var u uint64
	for ; i < len(s); i++ {
		d := hexDigit(s[i])
		if d < 0 || uint64(d) >= base {
			break
		}
		n.digits = true
		if u > (math.MaxUint64-uint64(d))/base {
			n.overflow = true
			continue
		}
		u = u*base + uint64(d)
	}
	switch {
	case !neg && u > math.MaxInt64, neg && u > 1<<63:
		n.overflow = true
	case neg:
		n.value = -int64(u-1) - 1
	default:
		n.value = int64(u)
	}
	n.rest = s[i:]
	return n
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// intParam is the value an NCCL_PARAM integer takes from s, and whether
// NCCL reads s at all: an empty value or one out of range leaves the
// default (src/misc/param.cc:93-98). glibc's strtoll sets no errno for a
// value with no digits, so "yes" reads as 0.
func intParam(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	n := strtoll(s)
	if n.overflow {
		return 0, false
	}
	return n.value, true
}

// NCCL path types in its order (src/graph/topo.cc:34 topoPathTypeStr),
// of which NCCL_P2P_LEVEL and NCCL_NET_GDR_LEVEL accept LOC to SYS.
const (
	levelLOC = iota
	levelNVL
	levelNVB
	levelC2C
	levelPIX
	levelPXB
	levelP2C
	levelPXN
	levelPHB
	levelSYS
)

var levelName = []string{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"}

// levelNames are the level names an NCCL version accepts: C2C came in
// 2.26 and P2C in 2.27 (topoPathTypeStr in src/graph/topo.cc of
// v2.25.1-1, v2.26.2-1, v2.27.3-1; v2.27.3-1 put P2C after PXN,
// v2.27.5-1 on put it before, the order used here); the order of the
// rest never changed.
// An unknown version is taken as the newest.
func levelNames(nccl string) []string {
	v, err := version.ParseFact(nccl)
	if err != nil {
		return levelName
	}
	var out []string
	for i, n := range levelName {
		switch {
		case i == levelC2C && v.Compare(version.Version{2, 26}) < 0,
			i == levelP2C && v.Compare(version.Version{2, 27}) < 0:
			continue
		}
		out = append(out, n)
	}
	return out
}

// levelsOldToNew maps the old numeric levels (src/graph/paths.cc:243).
var levelsOldToNew = []int{levelLOC, levelPIX, levelPXB, levelPHB, levelSYS, levelSYS}

// level is how NCCL's ncclGetLevel (src/graph/paths.cc:244-279) reads a
// level: a name compared case-sensitively with strcmp (:258-262), else,
// where the first byte is a digit, an old numeric level read by strtol
// into an int and clamped to the last (:268-273); anything else is
// ignored (-1) and NCCL keeps its default (:279). clamped says a number
// above 5 was cut. A number that wraps negative in the int indexes
// outside NCCL's table: undefined, taken here as ignored.
func level(s, nccl string) (l int, clamped bool) {
	for _, n := range levelNames(nccl) {
		if s == n {
			return indexOf(levelName, n), false
		}
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return -1, false
	}
	n := strtoll(s)
	if n.overflow {
		n.value = math.MaxInt64 // strtol's LONG_MAX
	}
	old := int32(n.value) // int oldLevel = strtol(...): the low 32 bits
	switch {
	case old < 0:
		return -1, false
	case int(old) >= len(levelsOldToNew):
		return levelSYS, true
	}
	return levelsOldToNew[old], false
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
