package nccl

import "bytes"

// The comm line matchers, by hand: the regexps they replaced were a tenth
// of a log's parsing on comm lines alone. Each accepts what its regexp
// did (log_comm_test.go fuzzes one against the other), unanchored and
// leftmost, so it tries every "comm " of the message in turn:
//
//	commRe:     comm (\S+) rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev \d+)? busId ([0-9a-fA-F]+)
//	commTopoRe: comm (\S+) rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank (\d+)
//
// \S+ and \d+ are always followed by a space or end the pattern, so the
// longest run is the only one that can match: no backtracking is needed.

// commFields are a comm line's submatches: the comm pointer, the numbers
// (rank, nranks, then cudaDev or nNodes, localRanks, localRank) and, for
// commRe, the bus ID.
type commFields struct {
	id    []byte
	nums  [5][]byte
	busID []byte
}

// matchComm is commRe's match of msg.
func matchComm(msg []byte) (commFields, bool) { return eachComm(msg, commAt) }

// matchCommTopo is commTopoRe's match of msg.
func matchCommTopo(msg []byte) (commFields, bool) { return eachComm(msg, commTopoAt) }

// eachComm tries at, from left to right, after every "comm " of msg.
func eachComm(msg []byte, at func(sc scanner) (commFields, bool)) (commFields, bool) {
	for off := 0; ; {
		i := bytes.Index(msg[off:], txtComm)
		if i < 0 {
			return commFields{}, false
		}
		start := off + i + len(txtComm)
		if f, ok := at(scanner{b: msg, i: start}); ok {
			return f, true
		}
		off = start - len(txtComm) + 1
	}
}

// commAt: (\S+) rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev \d+)? busId ([0-9a-fA-F]+)
func commAt(sc scanner) (f commFields, ok bool) {
	if f.id = sc.nonSpace(); f.id == nil {
		return f, false
	}
	for k, lit := range [...]string{" rank ", " nranks ", " cudaDev "} {
		if !sc.lit(lit) {
			return f, false
		}
		if f.nums[k] = sc.digits(); f.nums[k] == nil {
			return f, false
		}
	}
	// (?: nvmlDev \d+)? then " busId ": the group is taken when it
	// matches, else left out; " busId " follows either way.
	if save := sc.i; !sc.lit(" nvmlDev ") || sc.digits() == nil {
		sc.i = save
	}
	if !sc.lit(" busId ") {
		return f, false
	}
	f.busID = sc.run(isHex)
	return f, f.busID != nil
}

// commTopoAt: (\S+) rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank (\d+)
func commTopoAt(sc scanner) (f commFields, ok bool) {
	if f.id = sc.nonSpace(); f.id == nil {
		return f, false
	}
	for k, lit := range [...]string{" rank ", " nRanks ", " nNodes ", " localRanks ", " localRank "} {
		if !sc.lit(lit) {
			return f, false
		}
		if f.nums[k] = sc.digits(); f.nums[k] == nil {
			return f, false
		}
	}
	return f, true
}

// run consumes the longest run of bytes in, and returns it; nil if empty.
func (sc *scanner) run(in func(byte) bool) []byte {
	start := sc.i
	for sc.i < len(sc.b) && in(sc.b[sc.i]) {
		sc.i++
	}
	if sc.i == start {
		return nil
	}
	return sc.b[start:sc.i]
}

// digits is \d+; nonSpace is RE2's \S+ (any byte but \t\n\f\r and space:
// every byte of a multi-byte or invalid UTF-8 sequence is one).
func (sc *scanner) digits() []byte   { return sc.run(isDigit) }
func (sc *scanner) nonSpace() []byte { return sc.run(isNonSpace) }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isNonSpace(c byte) bool {
	return c != ' ' && c != '\t' && c != '\n' && c != '\f' && c != '\r'
}
