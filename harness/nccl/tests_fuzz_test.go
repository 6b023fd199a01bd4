package nccl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/fuzzseed"
)

// Fuzzing, benchmarks and the partial-output tests of the nccl-tests
// parsers: cut files, killed runs, garbage.

// addFixtureSeeds seeds a fuzz test with every file of the three fixture
// folders (fixtures/nccl-tests, fixtures/corpus/nccl-tests and
// fixtures/corpus/nccl-debug), whole and cut in the middle of a line, in
// slices of a few KiB (fuzzseed says why).
func addFixtureSeeds(f *testing.F) {
	var files []string
	// Files only: the fixture folders also hold subfolders (synthetic/,
	// the fuzz corpus).
	for _, dir := range []string{recorded + "*.*", corpusTests + "*.*", corpusDebug + "*.*", synthetic + "*.txt"} {
		m, err := filepath.Glob(dir)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		f.Fatalf("only %d fixture files", len(files))
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, seed := range fuzzseed.Ends(b) {
			f.Add(string(seed))
		}
		for _, off := range midLineCuts(b) {
			f.Add(string(fuzzseed.Before(b, off)))
		}
	}
}

func FuzzParseTests(f *testing.F) {
	addFixtureSeeds(f)
	f.Add("#       size         count      type     time   algbw   busbw  error     time\n 1 2 float 3")
	f.Add("# size count time time\n1 2 3 4 5 6 7 8 9 10 11 12\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseTests(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				t.Errorf("error %v does not wrap ErrNoData", err)
			}
			return
		}
		if got.Partial != (got.PartialReason != "") || len(got.Unparsed) > maxUnparsed || len(got.Failures) > maxFailures {
			t.Errorf("partial %v %q, %d unparsed, %d failures", got.Partial, got.PartialReason, len(got.Unparsed), len(got.Failures))
		}
		if _, err := json.Marshal(got); err != nil {
			t.Errorf("result does not marshal: %v", err)
		}
		// Concatenated runs repeat sizes, so the peak need only be one of the rows.
		if peak, size := got.PeakBusBW(); size != 0 && !slices.ContainsFunc(got.Rows, func(r Row) bool { return r.Size == size && r.BusBW() == peak }) {
			t.Errorf("PeakBusBW = %v at %d, which no row has", peak, size)
		}
		got.LargeSizeBusBW(0)
		got.Failed()
	})
}

// largestFixture is the biggest recorded output, the worst case a runner
// parses after every collective.
func largestFixture(b *testing.B) []byte {
	var largest []byte
	for _, f := range fixtureFiles(b, ".txt") {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		if len(data) > len(largest) {
			largest = data
		}
	}
	return largest
}

func BenchmarkParseTests(b *testing.B) {
	data := largestFixture(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseTests(strings.NewReader(string(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTests1GiB streams 1 GiB of nccl-tests output through
// ParseTests: the header of the recorded all_reduce run, the NCCL lines of
// every fixture over and over (a long NCCL_DEBUG=INFO run), then the
// table. It reports the peak memory as BenchmarkParseLog1GiB does; rows
// are the result and do not grow here, so the rest must stay bounded.
func BenchmarkParseTests1GiB(b *testing.B) {
	data, err := os.ReadFile(recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt")
	if err != nil {
		b.Fatal(err)
	}
	at := bytes.Index(data, []byte("\n           8 ")) + 1
	head, tail := data[:at], data[at:]
	body, hostAt := streamBody(b, fixtureFiles(b, ".txt"), true)
	b.SetBytes(newLogStream(head, body, tail, hostAt, streamSize).size())
	b.ReportAllocs()
	stop := peakMemory(b)
	for b.Loop() {
		got, err := ParseTests(newLogStream(head, body, tail, hostAt, streamSize))
		if err != nil {
			b.Fatal(err)
		}
		if len(got.Rows) != 29 || got.Partial || got.AvgBusBW == nil {
			b.Fatalf("%d rows, partial %q, average %v", len(got.Rows), got.PartialReason, got.AvgBusBW)
		}
	}
	heap, rss := stop()
	b.ReportMetric(heap, "peak-heap-MiB")
	b.ReportMetric(rss, "peak-rss-MiB")
}

// parsers are the three entry points as the damage tests call them.
var parsers = []struct {
	name  string
	parse func(io.Reader) (partial bool, reason string, err error)
}{
	{"ParseLog", func(r io.Reader) (bool, string, error) {
		s, err := ParseLog(r)
		if err != nil {
			return false, "", err
		}
		return s.Partial, s.PartialReason, nil
	}},
	{"ParseTests", func(r io.Reader) (bool, string, error) {
		t, err := ParseTests(r)
		if err != nil {
			return false, "", err
		}
		return t.Partial, t.PartialReason, nil
	}},
	{"ParseTestsJSON", func(r io.Reader) (bool, string, error) {
		t, err := ParseTestsJSON(r)
		if err != nil {
			return false, "", err
		}
		return t.Partial, t.PartialReason, nil
	}},
}

// allFixtures is every file of the three fixture folders the parsers read.
func allFixtures(tb testing.TB) []string {
	return append(fixtureFiles(tb, ".txt"), fixtureFiles(tb, ".json")...)
}

// midLineCuts returns named offsets that cut data inside a line: at tenths
// of its length, in the middle of its first, middle and last table rows
// and of its first connection line, and one byte before the end.
func midLineCuts(data []byte) map[string]int {
	cuts := map[string]int{}
	add := func(name string, off int) {
		for off > 0 && off < len(data) && data[off-1] == '\n' {
			off++ // a cut right after a newline is a line boundary
		}
		if off > 0 && off < len(data) {
			cuts[name] = off
		}
	}
	for i := 1; i < 10; i++ {
		add(fmt.Sprintf("at %d0%%", i), len(data)*i/10)
	}
	add("one byte before the end", len(data)-1)
	var rows []int
	via := -1
	start := 0
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 10 && !isLogLine([]byte(line)) {
			if _, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				rows = append(rows, start+len(line)/2)
			}
		}
		if i := strings.Index(line, " via "); i >= 0 && via < 0 {
			via = start + i + len(" via ") + 1
		}
		start += len(line)
	}
	if via >= 0 {
		add("in the first connection line", via)
	}
	if len(rows) > 0 {
		add("in the first table row", rows[0])
		add("mid-table", rows[len(rows)/2])
		add("in the last table row", rows[len(rows)-1])
	}
	return cuts
}

func TestEveryParserMarksAFixtureCutMidLineAsPartialOrFindsNoData(t *testing.T) {
	partials := map[string]int{}
	for _, file := range allFixtures(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for cut, off := range midLineCuts(data) {
			for _, p := range parsers {
				partial, reason, err := p.parse(bytes.NewReader(data[:off]))
				switch {
				case err != nil && !errors.Is(err, ErrNoData):
					t.Errorf("%s of %s cut %s (byte %d): error %v does not wrap ErrNoData", p.name, filepath.Base(file), cut, off, err)
				case err == nil && (!partial || reason == ""):
					t.Errorf("%s of %s cut %s (byte %d): not marked partial (%q)", p.name, filepath.Base(file), cut, off, reason)
				case err == nil:
					partials[p.name]++
				}
			}
		}
	}
	// Most cuts leave something to read: the test must not pass on errors alone.
	for _, p := range parsers {
		if partials[p.name] < 8 {
			t.Errorf("%s returned only %d partial results", p.name, partials[p.name])
		}
	}
}

func TestARunKilledBetweenLinesIsPartialWithTheReason(t *testing.T) {
	data, err := os.ReadFile(recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt")
	if err != nil {
		t.Fatal(err)
	}
	// upTo cuts after the n-th line that contains s, keeping that line.
	upTo := func(s string, n int) []byte {
		end := 0
		for line := range strings.Lines(string(data)) {
			end += len(line)
			if strings.Contains(line, s) {
				if n--; n == 0 {
					return data[:end]
				}
			}
		}
		t.Fatalf("no %d-th line with %q", n, s)
		return nil
	}
	const notDestroyed = "2 of 2 communicators that reached Init COMPLETE were not destroyed: the log stops while NCCL was running"
	tests := []struct {
		name            string
		in              []byte
		log, tests      string
		rows, transport int
	}{
		{
			name: "killed while one of two communicators is in init",
			in:   upTo("Init START", 2),
			log:  noInitComplete, tests: noTable,
		},
		{
			name:  "killed after the first communicator completed init",
			in:    upTo("Init COMPLETE", 1),
			log:   "1 of 2 communicators logged Init START without Init COMPLETE: the log stops during NCCL init; " + "1 of 1 communicators that reached Init COMPLETE were not destroyed: the log stops while NCCL was running",
			tests: noTable, // NCCL 2.28 connects channels at the first collective, after init
		},
		{
			name: "killed in the middle of the table",
			in:   upTo("    float     sum", 12),
			log:  notDestroyed, rows: 12, transport: 48,
			tests: `the table stops after the 16 KiB row (12 rows) without the "# Out of bounds values" and "# Avg bus bandwidth" footer: the run stopped or the output was trimmed`,
		},
		{
			name: "killed between the out-of-bounds line and the average",
			in:   upTo("# Out of bounds values", 1),
			rows: 29, transport: 48,
			tests: `the table stops after the 2 GiB row (29 rows) without the "# Out of bounds values" and "# Avg bus bandwidth" footer: the run stopped or the output was trimmed`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseLog(bytes.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if s.PartialReason != tt.log || s.Partial != (tt.log != "") || s.Transports[ClassP2PDirect] != tt.transport {
				t.Errorf("ParseLog: partial %v %q, %v; want %q and %d P2P/direct", s.Partial, s.PartialReason, s.Transports, tt.log, tt.transport)
			}
			r, err := ParseTests(bytes.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if r.PartialReason != tt.tests || !r.Partial || len(r.Rows) != tt.rows {
				t.Errorf("ParseTests: partial %v %q, %d rows; want %q, %d rows", r.Partial, r.PartialReason, len(r.Rows), tt.tests, tt.rows)
			}
		})
	}
}

func TestGarbageAndEmptyInputGiveErrNoDataOrAPartialResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	garbage := func(n int, newlines bool) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
			if !newlines && b[i] == '\n' {
				b[i] = 0
			}
		}
		return b
	}
	fixture, err := os.ReadFile(recorded + "all_reduce_perf-h200x2-nv18-p2p-disabled-shm.txt")
	if err != nil {
		t.Fatal(err)
	}
	withGarbage := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	const cutLog, cutOutput = "the log ends mid-line; the cut line (line 222) was not read", "the output ends mid-line after the 1 GiB row; the cut line (line 222) was not read"
	const skipped = "1 line longer than 1 MiB was skipped"
	tests := []struct {
		name       string
		in         []byte
		log, tests string // the partial reasons; "" where the parser finds no data
	}{
		{name: "an empty input", in: nil},
		{name: "a lone newline", in: []byte("\n")},
		{name: "64 KiB of binary garbage with newlines", in: garbage(64<<10, true)},
		{name: "3 MiB of binary garbage without a newline", in: garbage(3<<20, false)},
		{name: "NUL bytes", in: make([]byte, 4096)},
		{
			name: "a whole run followed by binary garbage without a newline",
			in:   withGarbage(fixture, garbage(1000, false)),
			log:  cutLog, tests: cutOutput,
		},
		{
			name: "a whole run with a 2 MiB garbage line in the middle of the table",
			in:   withGarbage(fixture[:bytes.Index(fixture, []byte("    268435456"))], garbage(2<<20, false), []byte("\n"), fixture[bytes.Index(fixture, []byte("    268435456")):]),
			log:  skipped, tests: skipped,
		},
		{
			name: "a whole run cut in the middle of the garbage that follows it",
			in:   withGarbage(fixture, garbage(100, true)[:50], []byte("\x00\xff")),
			log:  cutLog, tests: cutOutput,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range parsers {
				want := map[string]string{"ParseLog": tt.log, "ParseTests": tt.tests}[p.name]
				partial, reason, err := p.parse(bytes.NewReader(tt.in))
				switch {
				case want == "" && !errors.Is(err, ErrNoData):
					t.Errorf("%s: error %v, partial %q; want ErrNoData", p.name, err, reason)
				case want != "" && (err != nil || !partial || !strings.Contains(reason, want)):
					t.Errorf("%s: error %v, partial %v %q; want a reason with %q", p.name, err, partial, reason, want)
				}
			}
		})
	}
}
