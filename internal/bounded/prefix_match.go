package bounded

// The prefix matchers, by hand. Each says what it accepts as the regexp
// it replaced; FuzzPrefixMatchersAgreeWithTheRegexps (prefix_test.go)
// holds each to its regexp. They scan bytes: every byte the regexps
// treat specially is ASCII, and no byte of a multi-byte UTF-8 sequence
// (or of an invalid one) is, so a byte scan and the regexps' rune scan
// agree. \s is RE2's [\t\n\f\r ], \b its ASCII word boundary.

// matchMPI: ^\[(\d+),(\d+)\]<(?:stdout|stderr)>: ? — the length matched
// and the second number (the rank), or 0.
func matchMPI(b []byte) (int, []byte) {
	i := 1 // "["
	d := digitsLen(b, i)
	if d == 0 || !hasAt(b, i+d, ",") {
		return 0, nil
	}
	i += d + 1
	d = digitsLen(b, i)
	if d == 0 {
		return 0, nil
	}
	rank := b[i : i+d]
	i += d
	if !hasAt(b, i, "]<stdout>:") && !hasAt(b, i, "]<stderr>:") {
		return 0, nil
	}
	return optSpace(b, i+len("]<stdout>:")), rank
}

// matchTorch: ^\[(?:rank|default)(\d+)\]: ? — the length and the rank, or 0.
func matchTorch(b []byte) (int, []byte) {
	i := 1 // "["
	switch {
	case hasAt(b, i, "rank"):
		i += len("rank")
	case hasAt(b, i, "default"):
		i += len("default")
	default:
		return 0, nil
	}
	d := digitsLen(b, i)
	if d == 0 || !hasAt(b, i+d, "]:") {
		return 0, nil
	}
	return optSpace(b, i+d+2), b[i : i+d]
}

// matchRay: ^\(([^()]*\bpid=\d+[^()]*)\)  (a space after) — the length
// and what is inside the parentheses, or 0. [^()]* cannot pass a
// parenthesis, so the match ends at the first one after "(".
func matchRay(b []byte) (int, []byte) {
	end := 1
	for end < len(b) && b[end] != '(' && b[end] != ')' {
		end++
	}
	if !hasAt(b, end, ") ") {
		return 0, nil
	}
	inner := b[1:end]
	// The "(" before inner is no word byte, so inner's start is a
	// boundary either way.
	if wordAfter(inner, "pid=") == nil {
		return 0, nil
	}
	return end + 2, inner
}

// rayRank: \brank=(\d+) in what a Ray prefix holds — the rank, or nil.
func rayRank(inner []byte) []byte { return wordAfter(inner, "rank=") }

// wordAfter finds the leftmost \bkey\d+ in b (key starts with a word
// byte) and returns the digits, or nil.
func wordAfter(b []byte, key string) []byte {
	for i := 0; i+len(key) < len(b); i++ {
		if b[i] != key[0] || i > 0 && isWord(b[i-1]) || !hasAt(b, i, key) {
			continue
		}
		if d := digitsLen(b, i+len(key)); d > 0 {
			return b[i+len(key) : i+len(key)+d]
		}
	}
	return nil
}

// matchKubectl: ^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)
// and a space — the length, or 0.
func matchKubectl(b []byte) int {
	i, ok := shape(b, 0, "dddd-dd-ddTdd:dd:dd")
	if !ok {
		return 0
	}
	if hasAt(b, i, ".") {
		d := digitsLen(b, i+1)
		if d == 0 {
			return 0 // the optional fraction does not match, and "." is no zone
		}
		i += 1 + d
	}
	switch {
	case hasAt(b, i, "Z"):
		i++
	case hasAt(b, i, "+"), hasAt(b, i, "-"):
		if i, ok = shape(b, i+1, "dd:dd"); !ok {
			return 0
		}
	default:
		return 0
	}
	if !hasAt(b, i, " ") {
		return 0
	}
	return i + 1
}

// matchComposeAfter: ^([A-Za-z0-9][A-Za-z0-9_.-]*)\s+\|  (a space after),
// given name, the length of the name nameLen found — the length, or 0.
func matchComposeAfter(b []byte, name int) int {
	if name == 0 {
		return 0
	}
	i := name
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == name || !hasAt(b, i, "| ") {
		return 0
	}
	return i + 2
}

// nameLen: ^[A-Za-z0-9][A-Za-z0-9_.-]* — its length, or 0.
func nameLen(b []byte) int {
	if len(b) == 0 || !isAlnum(b[0]) {
		return 0
	}
	i := 1
	for i < len(b) && isNameByte[b[i]] {
		i++
	}
	return i
}

// isNameByte holds [A-Za-z0-9_.-].
var isNameByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isAlnum(byte(c)) || c == '_' || c == '.' || c == '-'
	}
	return t
}()

// isToolLine is what follows an "N: " or "host: " prefix when it is one:
// a "#" header or footer, a table row, an NCCL "host:pid:tid" line,
// "NCCL version", a perftest banner or dashed line, a UCX line
// ("[1700000000.000001] [host:pid:tid]", or its error handler's
// "[host:pid:tid:tid]"), or a line of ucx_perftest's own tables ("| Message
// size: 4194304 |", a "+----------" border) —
//
//	^(?:#|\s*\d+\s+\d+\s|\s*-{10}|\s*#bytes|\s*RDMA_|[^\s:]+:\d+:\d+ \[|NCCL version|\s*\*{5}|
//	  \[\d+\.\d+\]\s+\[[^\]]*\]|\[[^\]\s:]+:\d+\s*:\d+:\d+\]|\| |\+-{10})
func isToolLine(b []byte) bool {
	if hasAt(b, 0, "#") || hasAt(b, 0, "NCCL version") || hasAt(b, 0, "| ") || hasAt(b, 0, "+----------") ||
		isHostPidTidBracket(b) || isUCXStamp(b) || isUCXHandler(b) {
		return true
	}
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if hasAt(b, i, "----------") || hasAt(b, i, "#bytes") || hasAt(b, i, "RDMA_") || hasAt(b, i, "*****") {
		return true
	}
	// \d+\s+\d+\s
	d := digitsLen(b, i)
	if d == 0 {
		return false
	}
	i += d
	s := i
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == s {
		return false
	}
	d = digitsLen(b, i)
	return d > 0 && i+d < len(b) && isSpace(b[i+d])
}

// isHostPidTidBracket: ^[^\s:]+:\d+:\d+ \[
func isHostPidTidBracket(b []byte) bool {
	i := 0
	for i < len(b) && b[i] != ':' && !isSpace(b[i]) {
		i++
	}
	if i == 0 || !hasAt(b, i, ":") {
		return false
	}
	d := digitsLen(b, i+1)
	if d == 0 || !hasAt(b, i+1+d, ":") {
		return false
	}
	i += 1 + d + 1
	d = digitsLen(b, i)
	return d > 0 && hasAt(b, i+d, " [")
}

// isUCXStamp: ^\[\d+\.\d+\]\s+\[[^\]]*\]
func isUCXStamp(b []byte) bool {
	if !hasAt(b, 0, "[") {
		return false
	}
	d := digitsLen(b, 1)
	if d == 0 || !hasAt(b, 1+d, ".") {
		return false
	}
	i := 2 + d
	d = digitsLen(b, i)
	if d == 0 || !hasAt(b, i+d, "]") {
		return false
	}
	i += d + 1
	s := i
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == s || !hasAt(b, i, "[") {
		return false
	}
	for i++; i < len(b); i++ {
		if b[i] == ']' {
			return true
		}
	}
	return false
}

// isUCXHandler: ^\[[^\]\s:]+:\d+\s*:\d+:\d+\]
func isUCXHandler(b []byte) bool {
	if !hasAt(b, 0, "[") {
		return false
	}
	i := 1
	for i < len(b) && b[i] != ']' && b[i] != ':' && !isSpace(b[i]) {
		i++
	}
	if i == 1 || !hasAt(b, i, ":") {
		return false
	}
	i++
	d := digitsLen(b, i)
	if d == 0 {
		return false
	}
	i += d
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	for range 2 {
		if !hasAt(b, i, ":") {
			return false
		}
		if d = digitsLen(b, i+1); d == 0 {
			return false
		}
		i += 1 + d
	}
	return hasAt(b, i, "]")
}

// shape matches b at i against a pattern of literal bytes where 'd' is
// any digit; it returns the index after it.
func shape(b []byte, i int, pattern string) (int, bool) {
	if len(b)-i < len(pattern) {
		return i, false
	}
	for k := range len(pattern) {
		c := b[i+k]
		if p := pattern[k]; p == 'd' && !isDigit(c) || p != 'd' && c != p {
			return i, false
		}
	}
	return i + len(pattern), true
}

// hasAt reports whether b continues at i with s.
func hasAt(b []byte, i int, s string) bool {
	return i >= 0 && len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

// digitsLen is the number of decimal digits in b from i.
func digitsLen(b []byte, i int) int {
	n := 0
	for i+n < len(b) && isDigit(b[i+n]) {
		n++
	}
	return n
}

// optSpace is i, past one space if b has it there.
func optSpace(b []byte, i int) int {
	if hasAt(b, i, " ") {
		return i + 1
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isWord(c byte) bool  { return isAlnum(c) || c == '_' }
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}
