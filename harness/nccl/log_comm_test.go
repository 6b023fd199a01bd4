package nccl

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The regexps the comm matchers (log_comm.go) replaced;
// FuzzCommMatchersAgreeWithTheRegexps holds them to these.
var (
	commRe     = regexp.MustCompile(`comm (\S+) rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev \d+)? busId ([0-9a-fA-F]+)`)
	commTopoRe = regexp.MustCompile(`comm (\S+) rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank (\d+)`)
)

// regexpComm is what re finds in msg, as commFields: the submatches
// after the comm pointer are the numbers, and for commRe the last is the
// bus ID.
func regexpComm(re *regexp.Regexp, msg string) (f commFields, ok bool) {
	m := re.FindStringSubmatch(msg)
	if m == nil {
		return f, false
	}
	f.id = []byte(m[1])
	nums := m[2:]
	if re == commRe {
		f.busID, nums = []byte(m[5]), m[2:5]
	}
	for i, n := range nums {
		f.nums[i] = []byte(n)
	}
	return f, true
}

func sameComm(a, b commFields) bool {
	if string(a.id) != string(b.id) || string(a.busID) != string(b.busID) {
		return false
	}
	for i := range a.nums {
		if string(a.nums[i]) != string(b.nums[i]) {
			return false
		}
	}
	return true
}

func FuzzCommMatchersAgreeWithTheRegexps(f *testing.F) {
	for _, file := range fixtureFiles(f, ".txt") {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if _, _, msg, ok := splitLogLine([]byte(line)); ok && strings.Contains(string(msg), "comm ") {
				f.Add(string(msg))
			}
		}
	}
	for _, s := range []string{
		"comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x2 - Init START",
		"comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev x busId 1b000", "comm 0x1 rank 0 nranks 2 cudaDev 0 busId g",
		"comm comm 0x1 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1", "comm 0x1\trank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0",
		"xcomm \xff\xfe rank 3 nRanks 4 nNodes 2 localRanks 2 localRank 1 MNNVL 0", "comm  rank 0 nranks 1 cudaDev 0 busId 0",
		"comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank comm 0x2 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 7",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		for _, c := range []struct {
			re    *regexp.Regexp
			match func([]byte) (commFields, bool)
		}{{commRe, matchComm}, {commTopoRe, matchCommTopo}} {
			want, wantOK := regexpComm(c.re, msg)
			got, ok := c.match([]byte(msg))
			if ok != wantOK || !sameComm(got, want) {
				t.Errorf("%q: matched %v %q; %s says %v %q", msg, ok, got, c.re, wantOK, want)
			}
		}
	})
}
