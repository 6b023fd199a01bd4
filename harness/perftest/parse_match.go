package perftest

import (
	"bytes"
	"strconv"
	"strings"
)

// Hand-written matchers for what the classifier asks of every line that
// is not a row, in place of the regexps they replaced, which
// parse_match_test.go keeps and holds them to. Go's regexp \s is
// [\t\n\f\r ] and \b an ASCII word boundary, so they work on bytes.

// The texts the classifier looks for, lower-cased, as bytes.
var (
	txtDMABuf   = []byte("dmabuf")
	txtDMABuf2  = []byte("dma-buf")
	txtCu       = []byte("cu")
	txtMissing  = []byte(" is missing")
	txtReturned = []byte(" returned ")
	txtMinus    = []byte("-")

	failPrefixesB = asBytes(failPrefixes)
)

// failAt indexes failTexts by their first two bytes: failAt[b0<<8|b1] is
// the index in failLists of the texts that start with b0 b1, 0 for none.
// One pass over a line then finds any of them, where a search per text
// reads the line once per text.
var failAt, failLists = func() (at [1 << 16]uint8, lists [][][]byte) {
	lists = [][][]byte{nil}
	for _, t := range failTexts {
		k := uint16(t[0])<<8 | uint16(t[1]) // every text is longer
		if at[k] == 0 {
			at[k] = uint8(len(lists))
			lists = append(lists, nil)
		}
		lists[at[k]] = append(lists[at[k]], []byte(t))
	}
	return at, lists
}()

// hasFailText says low holds one of failTexts.
func hasFailText(low []byte) bool {
	for i := 0; i+1 < len(low); i++ {
		if j := failAt[uint16(low[i])<<8|uint16(low[i+1])]; j != 0 {
			for _, t := range failLists[j] {
				if bytes.HasPrefix(low[i:], t) {
					return true
				}
			}
		}
	}
	return false
}

func asBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// lower is strings.ToLower(s), into a buffer the parser reuses when s is
// ASCII (then valid until the next call).
func (p *parser) lower(s string) []byte {
	p.low = p.low[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return []byte(strings.ToLower(s))
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		p.low = append(p.low, c)
	}
	return p.low
}

func isRESpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// isWord is regexp's \w, which \b is a boundary of.
func isWord(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

// boundary is \b between s[i-1] and s[i].
func boundary(s string, i int) bool {
	return (i > 0 && isWord(s[i-1])) != (i < len(s) && isWord(s[i]))
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// hasCUDA is cudaRe: the word CUDA in any case, "GPU buffer", or a call
// of the CUDA driver API ("cuMemAlloc(", "cuCtxCreate_v2(").
//
//	(?i:\bcuda\b|gpu buffer)|\bcu[A-Z][A-Za-z]+(?:_v\d)?\(
func hasCUDA(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] | 0x20 {
		case 'c':
			if len(s)-i >= 4 && strings.EqualFold(s[i:i+4], "cuda") && boundary(s, i) && boundary(s, i+4) ||
				cuCallAt(s, i) {
				return true
			}
		case 'g':
			if len(s)-i >= 10 && strings.EqualFold(s[i:i+10], "gpu buffer") {
				return true
			}
		}
	}
	return false
}

// cuCallAt is `\bcu[A-Z][A-Za-z]+(?:_v\d)?\(` at i.
func cuCallAt(s string, i int) bool {
	if !strings.HasPrefix(s[i:], "cu") || len(s)-i < 4 || s[i+2] < 'A' || s[i+2] > 'Z' || !isLetter(s[i+3]) || !boundary(s, i) {
		return false
	}
	j := i + 4
	for j < len(s) && isLetter(s[j]) {
		j++
	}
	if strings.HasPrefix(s[j:], "_v") && len(s)-j >= 4 && isDigit(s[j+2]) && s[j+3] == '(' {
		return true
	}
	return j < len(s) && s[j] == '('
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// testNames are the tests a banner's title names, in testNameRe's order.
var testNames = []string{"Send", "Send_imm", "RDMA_Write", "RDMA_Write_imm", "RDMA_Read", "Atomic"}

// isTestName is testNameRe: the banner's title, "RDMA_Write BW Test".
//
//	^(Send|Send_imm|RDMA_Write|RDMA_Write_imm|RDMA_Read|Atomic)\s.*\bTest$
func isTestName(s string) bool {
	k := len(s) - len("Test")
	if k < 0 || s[k:] != "Test" || !boundary(s, k) {
		return false
	}
	for _, name := range testNames {
		n := len(name)
		if strings.HasPrefix(s, name) && k > n && isRESpace(s[n]) && strings.IndexByte(s[n+1:k], '\n') < 0 {
			return true
		}
	}
	return false
}

// gpuName is gpuNameRe's name: "NVIDIA H200" of "device name = [NVIDIA
// H200]".
//
//	device name = \[([^\]]*)\]
func gpuName(s string) (string, bool) {
	const at = "device name = ["
	i := strings.Index(s, at)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(at):]
	j := strings.IndexByte(rest, ']')
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// commandSep is [\s#$>]: what may stand before the command in an echoed
// prompt ("root@host:/# ib_write_bw ...").
func commandSep(c byte) bool { return isRESpace(c) || c == '#' || c == '$' || c == '>' }

// commandNames are the binaries commandRe knows, each "ib_VERB_KIND".
var commandNames = func() (names []string) {
	for _, verb := range []string{"write", "read", "send", "atomic"} {
		for _, kind := range []string{"bw", "lat"} {
			names = append(names, "ib_"+verb+"_"+kind)
		}
	}
	return names
}()

// matchCommand is commandRe's command: from the first place after the
// start or a prompt's last character where a path (or none) and an
// ib_*_bw or ib_*_lat binary start, to the end of the line.
//
//	(?:^|[\s#$>])((?:[^\s#$>]*/)?ib_(?:write|read|send|atomic)_(?:bw|lat)(?:\s.*)?)$
func matchCommand(s string) (string, bool) {
	lastNL := strings.LastIndexByte(s, '\n') // '.' does not match one
	for p := 0; p < len(s); p++ {
		if p > 0 && !commandSep(s[p-1]) {
			continue
		}
		// The binary starts at p or after a '/' of a path that holds
		// no separator.
		for r := p; r < len(s); r++ {
			if (r == p || s[r-1] == '/') && binaryAt(s, r, lastNL) {
				return s[p:], true
			}
			if commandSep(s[r]) {
				break
			}
		}
	}
	return "", false
}

// binaryAt is `ib_(?:write|read|send|atomic)_(?:bw|lat)(?:\s.*)?$` at r.
func binaryAt(s string, r, lastNL int) bool {
	if !strings.HasPrefix(s[r:], "ib_") {
		return false
	}
	for _, name := range commandNames {
		if e := r + len(name); strings.HasPrefix(s[r:], name) && (e == len(s) || isRESpace(s[e]) && lastNL <= e) {
			return true
		}
	}
	return false
}

// atoi is strconv.ParseInt(string(b), 10, 64) with its error as false,
// without strconv for the plain digits of a row.
func atoi[T string | []byte](b T) (int64, bool) {
	if len(b) > 0 && len(b) <= 18 {
		var n int64
		i := 0
		for ; i < len(b) && isDigit(b[i]); i++ {
			n = n*10 + int64(b[i]-'0')
		}
		if i == len(b) {
			return n, true
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// atof is strconv.ParseFloat(string(b), 64), without strconv for a row's
// plain decimals ("140.57", "0.057240"): up to 19 digits whose value is
// below 2^52 and at most 22 after the point, where strconv itself takes
// the same exact quotient (atof64exact).
func atof[T string | []byte](b T) (float64, error) {
	var mant uint64
	digits, dot := 0, -1
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case isDigit(c) && digits < 19:
			mant = mant*10 + uint64(c-'0')
			digits++
		case c == '.' && dot < 0:
			dot = i
		default:
			return strconv.ParseFloat(string(b), 64)
		}
	}
	frac := 0
	if dot >= 0 {
		frac = len(b) - dot - 1
	}
	if digits == 0 || mant >= 1<<52 || frac > 22 {
		return strconv.ParseFloat(string(b), 64)
	}
	return float64(mant) / pow10[frac], nil
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
