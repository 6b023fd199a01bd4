package nccl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Fuzzing, benchmarks and the streaming tests of ParseLog: endless and
// 1 GiB logs in bounded memory.

func FuzzParseLog(f *testing.F) {
	addFixtureSeeds(f)
	f.Add("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/x(/0\n")
	f.Add("h:1:2 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/\n")
	f.Add("h:1:2 [0] NCCL WARN\n")
	f.Add("h:1:2 [0] NCCL INFO Channel 300/0 : 99999999999999999999[x] -> 1[] via P2P\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseLog(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				t.Errorf("error %v does not wrap ErrNoData", err)
			}
			return
		}
		checkCounts(t, s)
		for _, exp := range []Expectation{{}, {P2P: ExpectYes, GDR: ExpectYes, Nodes: 1}, {P2P: ExpectNo, GDR: ExpectNo}} {
			v := s.Verdict(exp)
			if v.Verdict != VerdictDirect && v.Verdict != VerdictFallback && v.Verdict != VerdictUnknown || len(v.Reasons) == 0 {
				t.Errorf("Verdict(%+v) = %+v", exp, v)
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Errorf("summary does not marshal: %v", err)
		}
	})
}

func BenchmarkParseLog(b *testing.B) {
	data := largestFixture(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseLog(strings.NewReader(string(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// streamSize is about the length of the synthetic logs the 1 GiB
// benchmarks parse: whole repetitions of their body, so no line is cut.
const streamSize = 1 << 30

// logStream is an io.Reader of head, body repeated, then tail. Before each
// repetition it writes the repetition's number into the 7-digit host
// placeholders of body (hostAt), so a parser that kept state per host,
// process or communicator would see new ones all the way.
type logStream struct {
	head, body, tail []byte
	hostAt           []int
	rep, reps        int
	cur              []byte // what is left of the current piece
	tailDone         bool
}

// newLogStream repeats body as often as fits in about size bytes.
func newLogStream(head, body, tail []byte, hostAt []int, size int64) *logStream {
	reps := int((size - int64(len(head)) - int64(len(tail))) / int64(len(body)))
	return &logStream{head: head, body: body, tail: tail, hostAt: hostAt, reps: reps, cur: head}
}

// size is the number of bytes the stream yields.
func (s *logStream) size() int64 {
	return int64(len(s.head)) + int64(s.reps)*int64(len(s.body)) + int64(len(s.tail))
}

func (s *logStream) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		switch {
		case s.rep < s.reps:
			s.rep++
			var digits [7]byte
			for i, n := len(digits)-1, s.rep; i >= 0; i, n = i-1, n/10 {
				digits[i] = byte('0' + n%10)
			}
			for _, at := range s.hostAt {
				copy(s.body[at:], digits[:])
			}
			s.cur = s.body
		case !s.tailDone:
			s.cur, s.tailDone = s.tail, true
		default:
			return 0, io.EOF
		}
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// streamBody joins the lines of the fixture files that keep reports true
// to real runs, renaming the host of every NCCL line to "h" and a 7-digit
// placeholder, whose offsets it returns. With onlyNCCL it keeps only NCCL
// lines, so nccl-tests rows do not repeat.
func streamBody(tb testing.TB, files []string, onlyNCCL bool) ([]byte, []int) {
	tb.Helper()
	var body []byte
	var hostAt []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			line = strings.TrimSuffix(line, "\n") + "\n"
			_, prefix, _, ok := splitLogLine([]byte(line))
			if !ok {
				if !onlyNCCL {
					body = append(body, line...)
				}
				continue
			}
			host := hostOf(prefix)
			at := strings.Index(line, string(host))
			if len(host) == 0 || at < 0 {
				body = append(body, line...)
				continue
			}
			body = append(body, line[:at]+"h"...)
			hostAt = append(hostAt, len(body))
			body = append(body, "0000000"+line[at+len(host):]...)
		}
	}
	return body, hostAt
}

// peakMemory samples the Go heap every millisecond until stopped, and
// returns the largest heap in use and the process's peak resident set
// (VmHWM, reset at the start where /proc/self/clear_refs allows it).
func peakMemory(tb testing.TB) (stop func() (heapMiB, rssMiB float64)) {
	tb.Helper()
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	var peak uint64
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64()+sample[1].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (float64, float64) {
		close(done)
		<-finished
		return float64(peak) / (1 << 20), float64(vmHWM(tb)) / (1 << 20)
	}
}

// vmHWM is the peak resident set from /proc/self/status, in bytes; 0
// where there is none.
func vmHWM(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkParseLog1GiB streams 1 GiB of NCCL log, every fixture over and
// over with new host names, through ParseLog. Besides MB/s it reports the
// peak Go heap (objects and the free space in their spans, sampled every
// millisecond) and the peak resident set of the whole test process.
// Issue 4 asks for 200 MB/s or more in under 64 MiB on a 2-core machine:
//
//	go test -run '^$' -bench ParseLog1GiB -benchtime 1x ./harness/nccl/
func BenchmarkParseLog1GiB(b *testing.B) {
	body, hostAt := streamBody(b, fixtureFiles(b, ".txt"), false)
	per, err := ParseLog(bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	perRep := 0
	for _, n := range per.Transports {
		perRep += n
	}
	b.SetBytes(newLogStream(nil, body, nil, hostAt, streamSize).size())
	b.ReportAllocs()
	stop := peakMemory(b)
	for b.Loop() {
		in := newLogStream(nil, body, nil, hostAt, streamSize)
		s, err := ParseLog(in)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, c := range s.Transports {
			n += c
		}
		if n != in.reps*perRep || len(s.Connections) != MaxConnections || len(s.Comms) != MaxComms || len(s.Uses[0].Links) != MaxLinks {
			b.Fatalf("%d connections, want %d reps of %d; %d sampled, %d comms, links %+v", n, in.reps, perRep, len(s.Connections), len(s.Comms), s.Uses[0].Links)
		}
	}
	heap, rss := stop()
	b.ReportMetric(heap, "peak-heap-MiB")
	b.ReportMetric(rss, "peak-rss-MiB")
}

// The regexps parseConnection replaced; FuzzParseConnectionAgreesWithTheRegexps
// holds it to them.
var (
	channelRe = regexp.MustCompile(`^Channel (\d+)(?:/(\d+))? : (\d+)\[[0-9a-fA-Fx]*\] -> (\d+)\[[0-9a-fA-Fx]*\](?: \[(send|receive)\])? via (.+?)\s*$`)
	collNetRe = regexp.MustCompile(`^CollNet (\d+)/(\d+) : (\d+) \[(send|receive)\] via (.+?)\s*$`)
)

func regexpConnection(msg string) (Connection, string, bool) {
	if m := channelRe.FindStringSubmatch(msg); m != nil {
		c := Connection{Channel: atoi(m[1]), Index: -1, From: atoi(m[3]), To: atoi(m[4]), Dir: m[5]}
		if m[2] != "" {
			c.Index = atoi(m[2])
		}
		return c, m[6], true
	}
	if m := collNetRe.FindStringSubmatch(msg); m != nil {
		return Connection{Channel: atoi(m[1]), Index: atoi(m[2]), From: atoi(m[3]), To: -1, Dir: m[4]}, m[5], true
	}
	return Connection{}, "", false
}

func FuzzParseConnectionAgreesWithTheRegexps(f *testing.F) {
	for _, file := range fixtureFiles(f, ".txt") {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if _, _, msg, ok := splitLogLine([]byte(line)); ok && (hasPrefix(msg, pfxChannel) || hasPrefix(msg, pfxCollNet)) {
				f.Add(string(msg))
			}
		}
	}
	for _, s := range []string{
		"Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", "CollNet 01/1 : 3 [receive] via COLLNET/SHARP/0",
		"Channel 00/0 : 0[] -> 1[x] [send] via \t", "Channel 1/2 : 3[aF] -> 4[0] [receive] via N \f\r",
		"Channel 99999999999999999999/0 : 0[0] -> 1[1] via P2P", "Channel 0 : 0[0] -> 1[1] [send]x via P2P",
		"CollNet 0/0 : 0 [send] via \xff", "Channel 00/02 :    0   1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if strings.ContainsRune(msg, '\n') {
			return // a line never holds one
		}
		want, wantVia, wantOK := regexpConnection(msg)
		got, via, ok := parseConnection([]byte(msg))
		if ok != wantOK || got != want || string(via) != wantVia {
			t.Errorf("parseConnection(%q) = %+v %q %v; the regexps say %+v %q %v", msg, got, via, ok, want, wantVia, wantOK)
		}
	})
}

func TestParseLogKeepsBoundedSamplesOfAnEndlessLog(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		host := fmt.Sprintf("n%04d", i)
		fmt.Fprintf(&b, "%s:1:2 [0] NCCL INFO comm 0x%x rank %d nRanks 3000 nNodes 1500 localRanks 2 localRank 0\n", host, i, i)
		fmt.Fprintf(&b, "%s:1:2 [0] NCCL INFO Channel %02d/0 : %d[0] -> %d[0] [send] via NET/IB/%d\n", host, i%300, i, (i+1)%3000, i%2)
		fmt.Fprintf(&b, "%s:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.%d.%d<0>\n", host, i/256, i%256)
		fmt.Fprintf(&b, "%s:1:2 [0] NCCL INFO NCCL_VAR_%d set by environment to %d\n", host, i, i)
		fmt.Fprintf(&b, "%s:1:2 [0] misc.cc:1 NCCL WARN peer %s failed\n", host, host)
	}
	s, err := ParseLog(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s)
	u := s.Uses[0]
	if s.Transports[ClassNetIB] != 3000 || u.Connections != 3000 || len(u.Links) != MaxLinks || u.OtherLinks != 3000-MaxLinks {
		t.Errorf("transports %v, use of %d connections with %d links and %d others", s.Transports, u.Connections, len(u.Links), u.OtherLinks)
	}
	if len(u.Channels) != 256 || u.Channels[255] != 255 {
		t.Errorf("%d channels, want 0 to 255", len(u.Channels))
	}
	if s.Ranks != 3000 || s.Nodes != 1500 || len(s.Comms) != MaxComms || len(s.Connections) != MaxConnections {
		t.Errorf("ranks %d nodes %d, %d comms, %d connections", s.Ranks, s.Nodes, len(s.Comms), len(s.Connections))
	}
	if len(s.NetDevices) != maxKept || len(s.Env) != maxKept || len(s.Findings) != maxKept || s.FindingsOmitted != 3000-maxKept {
		t.Errorf("%d NET devices, %d env, %d findings + %d omitted", len(s.NetDevices), len(s.Env), len(s.Findings), s.FindingsOmitted)
	}
	want := "3000 of 3000 connections used NET/IB without GDRDMA (channels 00-255, rank 0 -> 1 via NET/IB/0 on n0000, " +
		"rank 1 -> 2 via NET/IB/1 on n0001, rank 2 -> 3 via NET/IB/0 on n0002, rank 3 -> 4 via NET/IB/1 on n0003, " +
		"and 2996 more connections); the data is staged through host memory"
	if len(s.Reasons) != 1 || s.Reasons[0] != want {
		t.Errorf("reasons %q,\nwant %q", s.Reasons, want)
	}
}

func TestChannelListWritesRunsAsRanges(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{2}, "channel 02"},
		{[]int{3, 1}, "channels 01 and 03"},
		{[]int{0, 1}, "channels 00 and 01"},
		{[]int{0, 1, 2, 3}, "channels 00-03"},
		{[]int{0, 1, 2, 3, 8, 10, 10}, "channels 00-03, 08 and 10"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14}, "channels 00, 02, 04, 06, 08, 10 and 2 more"},
	} {
		if got := ChannelList(tt.in); got != tt.want {
			t.Errorf("ChannelList(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
