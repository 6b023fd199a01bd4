package ucx

import (
	"bytes"
	"encoding/binary"
	"strings"
)

// Hand-written matchers for the regexps of a UCX log's hot path: every
// line carries UCX's prefix, and most are table rows and borders, which
// the regexps cost more to read than the rest of the line's parsing.
// log_match_test.go holds each to the regexp it replaced (kept there).
// Go's regexp \s is [\t\n\f\r ] and \d is [0-9], both ASCII; \b is an
// ASCII word boundary; so each matcher works on bytes.

// isRESpace is regexp's \s.
func isRESpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isWord is regexp's \w, which \b is a boundary of.
func isWord(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

func skipSpace[T string | []byte](s T, i int) int {
	for i < len(s) && isRESpace(s[i]) {
		i++
	}
	return i
}

func skipDigits[T string | []byte](s T, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// tokenEnd is where the run of non-space bytes from i ends (\S+).
func tokenEnd[T string | []byte](s T, i int) int {
	for i < len(s) && !isRESpace(s[i]) {
		i++
	}
	return i
}

// digitsBefore is where the run of digits that ends at e starts.
func digitsBefore[T string | []byte](s T, i, e int) int {
	for e > i && isDigit(s[e-1]) {
		e--
	}
	return e
}

// endsColonDigits says that the token s[i:e] is `\S+:\d+`, and with the
// three bytes before its digits `\S+\.c:\d+` when file is set.
func endsColonDigits[T string | []byte](s T, i, e int, file bool) bool {
	d := digitsBefore(s, i, e)
	if d == e || d-1 <= i || s[d-1] != ':' {
		return false
	}
	return !file || d-3 > i && s[d-3] == '.' && s[d-2] == 'c'
}

// hasWordAt says s holds w at i.
func hasWordAt[T string | []byte](s T, i int, w string) bool {
	return len(s)-i >= len(w) && string(s[i:i+len(w)]) == w
}

// matchUCXPrefix is ucxPrefix on a line: the length of its match and the
// "host:pid:tid" it holds.
//
//	^\s*\[\d+\.\d+\]\s+\[([^\]]*)\]\s+(?:\S+\.c:\d+\s+UCX\s+INFO\s+)?
func matchUCXPrefix(b []byte) (int, []byte, bool) {
	n, proc, _, ok := matchUCXPrefixUCX(b)
	return n, proc, ok
}

// matchUCXPrefixUCX is matchUCXPrefix, and whether the line holds "UCX"
// after the match: the tests for an error line need not look again.
func matchUCXPrefixUCX(b []byte) (int, []byte, bool, bool) {
	i := skipSpace(b, 0)
	if !hasWordAt(b, i, "[") {
		return 0, nil, false, false
	}
	j := skipDigits(b, i+1)
	if j == i+1 || !hasWordAt(b, j, ".") {
		return 0, nil, false, false
	}
	k := skipDigits(b, j+1)
	if k == j+1 || !hasWordAt(b, k, "]") {
		return 0, nil, false, false
	}
	i = skipSpace(b, k+1)
	if i == k+1 || !hasWordAt(b, i, "[") {
		return 0, nil, false, false
	}
	end := bytes.IndexByte(b[i+1:], ']')
	if end < 0 {
		return 0, nil, false, false
	}
	proc := b[i+1 : i+1+end]
	j = i + 1 + end + 1
	i = skipSpace(b, j)
	if i == j {
		return 0, nil, false, false
	}
	if bytes.Index(b[i:], txtUCX) < 0 {
		return i, proc, false, true // most lines: no level, no info tag
	}
	if n := matchInfoTag(b, i); n > 0 {
		i = n
	}
	return i, proc, true, true
}

// matchInfoTag is `\S+\.c:\d+\s+UCX\s+INFO\s+` at i: where it ends, or 0.
func matchInfoTag(b []byte, i int) int {
	e := tokenEnd(b, i)
	if !endsColonDigits(b, i, e, true) {
		return 0
	}
	for _, w := range []string{"UCX", "INFO"} {
		j := skipSpace(b, e)
		if j == e || !hasWordAt(b, j, w) {
			return 0
		}
		e = j + len(w)
	}
	j := skipSpace(b, e)
	if j == e {
		return 0
	}
	return j
}

// matchLevelLine is levelLine's source, level and text.
//
//	^\s*(?:(\S+:\d+)\s+)?UCX\s+(ERROR|DIAG|FATAL|WARN)\s+(.*?)\s*$
func matchLevelLine(s string) (source, level, text string, ok bool) {
	i := skipSpace(s, 0)
	if e := tokenEnd(s, i); endsColonDigits(s, i, e, false) {
		if j := skipSpace(s, e); j > e {
			if level, text, ok := levelRest(s, j); ok {
				return s[i:e], level, text, true
			}
		}
	}
	level, text, ok = levelRest(s, i)
	return "", level, text, ok
}

// levelRest is `UCX\s+(ERROR|DIAG|FATAL|WARN)\s+(.*?)\s*$` at i.
func levelRest(s string, i int) (level, text string, ok bool) {
	if !hasWordAt(s, i, "UCX") {
		return "", "", false
	}
	j := skipSpace(s, i+3)
	if j == i+3 {
		return "", "", false
	}
	for _, l := range []string{"ERROR", "DIAG", "FATAL", "WARN"} {
		if hasWordAt(s, j, l) {
			level = l
			break
		}
	}
	k := j + len(level)
	if level == "" || k == len(s) || !isRESpace(s[k]) {
		return "", "", false
	}
	text = strings.TrimRight(s[skipSpace(s, k):], " \t\n\f\r")
	if strings.IndexByte(text, '\n') >= 0 { // '.' stops at a newline
		return "", "", false
	}
	return level, text, true
}

// epOps are the lane kinds an endpoint line lists, each before "(".
var epOps = []string{"tag", "rma", "rma_am", "amo", "amo_am", "am", "stream", "ka"}

// matchEPLine is epLine's endpoint and lanes.
//
//	^(\S+\s+(?:self|intra-node|inter-node)\s+cfg#\d+|ep_cfg\[\d+\]:)\s+((?:tag|rma|rma_am|amo|amo_am|am|stream|ka)\(.*)$
func matchEPLine(s string) (config, lanes string, ok bool) {
	if e := epConfigPeer(s); e > 0 {
		if lanes, ok := epLanes(s, e); ok {
			return s[:e], lanes, true
		}
	}
	if e := epConfigIndex(s); e > 0 {
		if lanes, ok := epLanes(s, e); ok {
			return s[:e], lanes, true
		}
	}
	return "", "", false
}

// epConfigPeer is `\S+\s+(?:self|intra-node|inter-node)\s+cfg#\d+` at
// the start of s: where it ends, or 0.
func epConfigPeer(s string) int {
	e := tokenEnd(s, 0)
	i := skipSpace(s, e)
	if e == 0 || i == e {
		return 0
	}
	w := peerAt(s, i)
	if w == 0 {
		return 0
	}
	j := skipSpace(s, i+w)
	if j == i+w || !hasWordAt(s, j, "cfg#") {
		return 0
	}
	k := skipDigits(s, j+4)
	if k == j+4 {
		return 0
	}
	return k
}

// epConfigIndex is `ep_cfg\[\d+\]:` at the start of s, or 0.
func epConfigIndex(s string) int {
	if !hasWordAt(s, 0, "ep_cfg[") {
		return 0
	}
	k := skipDigits(s, 7)
	if k == 7 || !hasWordAt(s, k, "]:") {
		return 0
	}
	return k + 2
}

// epLanes is `\s+((?:tag|...|ka)\(.*)$` at e.
func epLanes(s string, e int) (string, bool) {
	i := skipSpace(s, e)
	if i == e || strings.IndexByte(s[i:], '\n') >= 0 {
		return "", false
	}
	for _, op := range epOps {
		if hasWordAt(s, i, op+"(") {
			return s[i:], true
		}
	}
	return "", false
}

// peers are the peer classes of a table or an endpoint, in the order
// the regexps try them.
var peers = []string{"self", "intra-node", "inter-node"}

// peerAt is the length of the peer class at i, 0 if none is there.
func peerAt(s string, i int) int {
	for _, p := range peers {
		if hasWordAt(s, i, p) {
			return len(p)
		}
	}
	return 0
}

// boundary is \b between s[i-1] and s[i].
func boundary(s string, i int) bool {
	before := i > 0 && isWord(s[i-1])
	after := i < len(s) && isWord(s[i])
	return before != after
}

// findPeer is peerWord.FindString: the first peer class that stands as a
// word of s.
//
//	\b(self|intra-node|inter-node)\b
func findPeer(s string) string {
	for i := 0; i < len(s); i++ {
		if !boundary(s, i) {
			continue
		}
		for _, p := range peers {
			if hasWordAt(s, i, p) && boundary(s, i+len(p)) {
				return p
			}
		}
	}
	return ""
}

// isConfigCell is configCell: the cell ends with a word cfg#N or
// ep_cfg[N].
//
//	(?:\bcfg#\d+|\bep_cfg\[\d+\])$
func isConfigCell(s string) bool {
	n := len(s)
	if d := digitsBefore(s, 0, n); d < n && d >= 4 && s[d-4:d] == "cfg#" && boundary(s, d-4) {
		return true
	}
	if n == 0 || s[n-1] != ']' {
		return false
	}
	d := digitsBefore(s, 0, n-1)
	return d < n-1 && d >= 7 && s[d-7:d] == "ep_cfg[" && boundary(s, d-7)
}

// memWords is memWord.FindAllStringSubmatch(op, 4): up to four memory
// types after from, into or to, each as [2]string{word, type}.
//
//	\b(from|into|to)\s+([a-z][a-z0-9-]*)\b
func memWords(op string, f func(word, mem string)) {
	found := 0
	for i := 0; i < len(op) && found < 4; {
		if end, w, m := memWordAt(op, i); end > 0 {
			f(w, m)
			found++
			i = end
			continue
		}
		i++
	}
}

// memWordAt is a match of memWord at i: its end, word and memory type.
func memWordAt(s string, i int) (int, string, string) {
	if !boundary(s, i) {
		return 0, "", ""
	}
	for _, w := range []string{"from", "into", "to"} {
		if !hasWordAt(s, i, w) {
			continue
		}
		a := skipSpace(s, i+len(w))
		if a == i+len(w) || a == len(s) || s[a] < 'a' || s[a] > 'z' {
			return 0, "", ""
		}
		b := a + 1
		for b < len(s) && (s[b] >= 'a' && s[b] <= 'z' || isDigit(s[b]) || s[b] == '-') {
			b++
		}
		for ; b > a; b-- { // the regexp backs off to the last \b
			if boundary(s, b) {
				return b, w, s[a:b]
			}
		}
		return 0, "", ""
	}
	return 0, "", ""
}

// isRangeCell is rangeCell: "0", "8K", "1..22150", "256K..inf".
//
//	^\d+[KMGT]?(?:\.\.(?:\d+[KMGT]?|inf))?$
func isRangeCell[T string | []byte](s T) bool {
	i := sizeEnd(s, 0)
	if i == 0 || i == len(s) {
		return i > 0
	}
	if !hasWordAt(s, i, "..") {
		return false
	}
	if string(s[i+2:]) == "inf" {
		return true
	}
	j := sizeEnd(s, i+2)
	return j > i+2 && j == len(s)
}

// sizeEnd is where `\d+[KMGT]?` at i ends, or i where none is there.
func sizeEnd[T string | []byte](s T, i int) int {
	j := skipDigits(s, i)
	if j == i {
		return i
	}
	if j < len(s) && strings.IndexByte("KMGT", s[j]) >= 0 {
		j++
	}
	return j
}

// isBorder is border: "+-----+----+".
//
//	^\+[-+]+\+$
func isBorder[T string | []byte](s T) bool {
	if len(s) < 3 || s[0] != '+' || s[len(s)-1] != '+' {
		return false
	}
	i := 1
	if b, ok := any(s).([]byte); ok {
		// Eight dashes at a time, a byte at a time only where a "+"
		// is: a border is most of a table's bytes.
		for ; i+8 < len(b); i += 8 {
			if binary.LittleEndian.Uint64(b[i:]) != dashes && !borderBytes(b[i:i+8]) {
				return false
			}
		}
	}
	return borderBytes(s[i : len(s)-1])
}

func borderBytes[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '-' && s[i] != '+' {
			return false
		}
	}
	return true
}

const dashes = 0x2d2d2d2d2d2d2d2d // "--------"
