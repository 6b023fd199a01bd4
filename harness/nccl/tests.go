package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/gdrcheck/gdrcheck/results"
)

// ErrNoData is wrapped by the parsers when the input holds nothing they
// recognise, so callers can tell an empty or foreign file from a broken one.
var ErrNoData = errors.New("no recognisable output")

// What ParseTests keeps, so that a long or damaged output cannot grow the
// result without bound. Rows are the result: a run of every type and
// operation (-d all -o all) over 32 sizes has 1,920; an output with more
// than maxRows is read as partial.
const (
	maxUnparsed = 64    // TestsResult.Unparsed
	maxFailures = 256   // TestsResult.Failures
	maxDevices  = 16384 // TestsResult.Devices: 2,048 nodes of 8 GPUs
	maxRows     = 4096  // TestsResult.Rows
)

// TestsResult is one nccl-tests run, from its text output or its -J JSON.
type TestsResult struct {
	Collective   string   `json:"collective"`              // "# Collective test starting: X", or the binary in the JSON args
	TestsVersion string   `json:"tests_version,omitempty"` // "# nccl-tests version 2.19.6 ..."
	NCCLVersion  string   `json:"nccl_version,omitempty"`  // "NCCL version 2.28.3+cuda13.0", else nccl-library=22803
	CUDAVersion  string   `json:"cuda_version,omitempty"`  // the +cudaX.Y suffix of the NCCL version line
	Devices      []Device `json:"devices"`                 // "#  Rank  0 Group  0 Pid ..." lines
	Rows         []Row    `json:"rows"`                    // the result table, in output order
	OutOfBounds  *int     `json:"out_of_bounds"`           // "# Out of bounds values : N OK|FAILED"; nil when the line is missing
	AvgBusBW     *float64 `json:"avg_busbw"`               // "# Avg bus bandwidth : X" in GB/s; nil when missing
	// Peak is PeakBusBW's busbw (GB/s), and PeakSize the size it was
	// reached at: the number people compare. nil without rows.
	Peak     *float64  `json:"peak_busbw,omitempty"`
	PeakSize *int64    `json:"peak_size,omitempty"`
	Failures []Failure `json:"failures"` // "Test NCCL|CUDA failure", "Test failure", "# error:"; the first 256
	// Unparsed keeps the first 64 lines that started like a table row but
	// did not parse, so damage in a recording is visible instead of
	// silently dropped.
	Unparsed []string `json:"unparsed,omitempty"`

	// Lines past the caps on Devices, Failures, Unparsed and Rows are
	// counted here instead of kept. Rows past the cap make the result
	// partial.
	RowsOmitted     int `json:"rows_omitted,omitempty"`
	DevicesOmitted  int `json:"devices_omitted,omitempty"`
	FailuresOmitted int `json:"failures_omitted,omitempty"`
	UnparsedOmitted int `json:"unparsed_omitted,omitempty"`

	// Partial is set when the output does not hold a whole run: the text
	// ends mid-line, its table stops without the footer, or it has
	// neither a row nor a failure (ParseTests); the -J JSON breaks off
	// (ParseTestsJSON). PartialReason says which, in one or more short
	// sentences joined by "; ", naming the last size read ("the table
	// stops after the 2 KiB row ..."). What was read is still returned.
	// Prefix is the launcher or collector prefix the output's lines had,
	// stripped before parsing (see LogSummary.Prefix).
	Prefix        string `json:"prefix,omitempty"`
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`

	firstOmitted int // the line of the first row past maxRows
}

// Device is one "#  Rank N Group G Pid P on HOST device D [BUSID] NAME" line.
type Device struct {
	Rank   int    `json:"rank"`
	Group  int    `json:"group"` // 0 where the version prints no Group
	PID    int    `json:"pid"`
	Host   string `json:"host"`
	Device int    `json:"device"` // CUDA device index on the host
	BusID  string `json:"bus_id"` // as printed: "0000:00:06", "0x01"
	Name   string `json:"name"`
}

// Row is one line of the result table. OOP is the out-of-place run, IP the
// in-place one; times are in microseconds and bandwidths in GB/s.
type Row struct {
	Size     int64   `json:"size"`  // bytes
	Count    int64   `json:"count"` // elements
	Type     string  `json:"type"`
	RedOp    string  `json:"redop"`
	Root     int     `json:"root"` // -1 where the collective has none
	TimeOOP  float64 `json:"time_oop_us"`
	AlgBWOOP float64 `json:"algbw_oop"`
	BusBWOOP float64 `json:"busbw_oop"`
	WrongOOP *int64  `json:"wrong_oop"` // nil when printed as N/A or as the pre-2.13 "error" column
	TimeIP   float64 `json:"time_ip_us"`
	AlgBWIP  float64 `json:"algbw_ip"`
	BusBWIP  float64 `json:"busbw_ip"`
	WrongIP  *int64  `json:"wrong_ip"`
	Wrong    int64   `json:"wrong"` // WrongOOP + WrongIP, N/A counted as 0
}

// BusBW is the better of the out-of-place and in-place bus bandwidth: either
// one shows what the path can carry, and nccl-tests averages both.
func (r Row) BusBW() float64 { return max(r.BusBWOOP, r.BusBWIP) }

// Failure is an error nccl-tests reported in its output.
type Failure struct {
	Kind    string `json:"kind"`            // "NCCL", "CUDA", "test" (a TESTCHECK trace) or "error" ("# error:")
	Host    string `json:"host,omitempty"`  // the host that printed it
	PID     int    `json:"pid,omitempty"`   // only "Test failure" lines carry it
	Where   string `json:"where,omitempty"` // source location, e.g. "common.cu:1304"
	Message string `json:"message,omitempty"`
	Line    int    `json:"line,omitempty"` // its line in the text output (1-based); 0 in the -J JSON
}

// BusBWAt returns Row.BusBW of the row whose size is exactly size.
func (t *TestsResult) BusBWAt(size int64) (float64, bool) {
	for _, r := range t.Rows {
		if r.Size == size {
			return r.BusBW(), true
		}
	}
	return 0, false
}

// PeakBusBW returns the highest Row.BusBW and the size it was reached at;
// zeros when there are no rows.
func (t *TestsResult) PeakBusBW() (busbw float64, size int64) {
	for _, r := range t.Rows {
		if bw := r.BusBW(); bw > busbw {
			busbw, size = bw, r.Size
		}
	}
	return busbw, size
}

// LargeSizeBusBW averages Row.BusBW over the rows of at least minSize bytes.
// Baselines compare this rather than one size, because runs differ in the
// sizes they step through and small sizes measure latency, not the path.
func (t *TestsResult) LargeSizeBusBW(minSize int64) (float64, bool) {
	var sum float64
	var n int
	for _, r := range t.Rows {
		if r.Size >= minSize {
			sum += r.BusBW()
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// Failed reports whether nccl-tests itself saw a problem: a failure line,
// out-of-bounds values, or wrong elements in any row.
func (t *TestsResult) Failed() bool {
	if len(t.Failures) > 0 || t.FailuresOmitted > 0 || (t.OutOfBounds != nil && *t.OutOfBounds > 0) {
		return true
	}
	for _, r := range t.Rows {
		if r.Wrong > 0 {
			return true
		}
	}
	return false
}

// ParseTests reads the text output of an nccl-tests binary. It streams:
// memory holds at most maxRows rows and a bounded amount of everything
// else, however long the output.
//
// The result is marked Partial, with the reason, when:
//   - r stopped before its end (a bounded.Reader at its total cap, or
//     interrupted): the lines before stand, the one it fell in is not read;
//   - the output ends mid-line: the cut line is not read, since a cut
//     number reads as a different number;
//   - a line is longer than 1 MiB (binary garbage): it is skipped;
//   - there are more than 4096 rows: the rest are counted in RowsOmitted,
//     not kept;
//   - rows follow the last "# Avg bus bandwidth" line, or there is none:
//     nccl-tests prints "# Out of bounds values" and "# Avg bus bandwidth"
//     after every table, so the run stopped or the output was trimmed;
//   - there is no row and no failure line: the run stopped before its
//     table, or this is an excerpt;
//   - inside a table (from its header to its footer) a size repeats or
//     goes back within one sweep, or a line starts like a row and does
//     not parse: a value not finite (inf, nan) or past int64, or NCCL's
//     log interleaved into it. Then the largest size measured is not
//     known, and comparing the row before it would judge a size the run
//     did not stop at.
//
// An NCCL WARN line or error trace inside a table is a Failure (kinds
// FailureWarn, FailureError): it happened while the sizes were measured.
//
// The reasons for a cut or an open table name the last row read ("the
// table stops after the 2 KiB row (12 rows) ..."). Failures carry the
// number of their line.
//
// Input with no nccl-tests line at all is an error wrapping ErrNoData.
func ParseTests(r io.Reader) (*TestsResult, error) {
	p := &testsParser{
		res: &TestsResult{Devices: []Device{}, Rows: []Row{}, Failures: []Failure{}},
		lay: defaultLayout,
		lr:  newLines(r),
	}
	for {
		b, ok := p.lr.Next()
		if !ok {
			break
		}
		p.line(b)
	}
	if err := p.lr.Err(); err != nil {
		return nil, fmt.Errorf("reading nccl-tests output: %w", err)
	}
	if !p.seen {
		return nil, fmt.Errorf("parsing nccl-tests output: %w", ErrNoData)
	}
	return p.finish(), nil
}

// testsParser is ParseTests' state between lines.
type testsParser struct {
	res         *TestsResult
	lay         layout
	libraryCode string
	seen        bool
	// rowsOpen are the rows since the last "# Avg bus bandwidth" line,
	// footers those lines, headers the table header lines.
	rowsOpen, footers, headers int
	tab                        sweepTable
	lr                         *bounded.Lines
}

// line reads one line of the output.
func (p *testsParser) line(b []byte) {
	if p.res.NCCLVersion == "" && bytes.Contains(b, ncclVersionText) {
		if m := ncclVersionRe.FindSubmatch(b); m != nil {
			p.res.NCCLVersion, p.res.CUDAVersion, p.seen = keepField(m[1]), keepField(m[2]), true
			return
		}
	}
	if isLogLine(b) {
		// NCCL's own log, interleaved with the table: judged only
		// where it breaks a row or warns inside the table.
		p.res.tableLog(b, p.lr.N(), &p.tab, p.lay)
		return
	}
	line := string(b)
	trimmed := strings.TrimSpace(line)
	comment, pasted := trimmed, false
	if !strings.HasPrefix(trimmed, "#") {
		comment, pasted = pastedLine(trimmed)
	}
	if strings.HasPrefix(comment, "#") {
		if parseTestsComment(comment, p.lr.N(), p.res, &p.lay, &p.libraryCode) {
			p.seen = true
			switch {
			case avgBusBWRe.MatchString(comment):
				p.rowsOpen, p.footers = 0, p.footers+1
				p.tab.end()
			case isHeader(comment):
				p.tab.start()
				p.headers++
			}
			return
		}
		if !pasted {
			return
		}
	}
	if f, ok := parseFailure(line); ok {
		f.Line = p.lr.N()
		p.res.addFailure(f)
		p.seen = true
		return
	}
	if len(trimmed) > maxText {
		// No row is this long: keep it as unparsed if it starts like one.
		if i := strings.IndexFunc(trimmed, unicode.IsSpace); i > 0 && rowStart([]string{trimmed[:i]}) {
			p.res.addUnparsed(line)
			if p.tab.open {
				p.tab.damaged("line %d: %s is longer than any row: the row is not measured, so the largest size measured is not known", p.lr.N(), rowName(trimmed[:i]))
			}
		}
		return
	}
	fields := strings.Fields(trimmed)
	if len(fields) == 0 {
		return
	}
	if !rowStart(fields) {
		return // prose, "...", launcher noise
	}
	row, ok := parseRow(fields, p.lay)
	if !ok {
		p.res.addUnparsed(line)
		if p.tab.open {
			p.tab.broken(fields, p.lay, p.lr.N(), false)
		}
		return
	}
	p.res.addRow(row, p.lr.N())
	p.tab.row(row, p.lr.N())
	p.rowsOpen++
	p.seen = true
}

// finish names what the output lacks once it is read whole.
func (p *testsParser) finish() *TestsResult {
	if p.res.NCCLVersion == "" && p.libraryCode != "" {
		p.res.NCCLVersion = versionFromCode(p.libraryCode)
	}
	last := ""
	if n := len(p.res.Rows); n > 0 {
		last = lastRow(p.res.Rows[n-1].Size)
	}
	reasons := append(append(partialReasons(p.lr, "output", last), p.res.rowsOmitted()...), p.tab.reasons()...)
	switch {
	case p.rowsOpen > 0 && p.footers == 0:
		reasons = append(reasons, fmt.Sprintf(`the table stops after %s (%d rows) without the "# Out of bounds values" and "# Avg bus bandwidth" footer: the run stopped or the output was trimmed`, last, p.rowsOpen))
	case p.rowsOpen > 0:
		reasons = append(reasons, fmt.Sprintf(`the last table stops after %s (%d rows in it) without its "# Avg bus bandwidth" footer: the run stopped or the output was trimmed`, last, p.rowsOpen))
	case len(p.res.Rows) > 0 && p.headers == 0:
		reasons = append(reasons, "the rows have no table header before them: the output is an excerpt, and what the columns are is assumed")
	case len(p.res.Rows) == 0 && len(p.res.Failures) == 0:
		reasons = append(reasons, "no result row and no failure line: the run stopped before its table or the output is an excerpt")
	case len(p.res.Rows) == 0:
		reasons = append(reasons, "the run failed before its first result row")
	}
	p.res.setPartial(reasons)
	p.res.Prefix = p.lr.Prefix()
	p.res.setPeak()
	return p.res
}

// addRow keeps row, read on line n (0 for JSON), or counts it once the
// cap is reached.
func (t *TestsResult) addRow(row Row, n int) {
	if len(t.Rows) < maxRows {
		t.Rows = append(t.Rows, row)
		return
	}
	if t.RowsOmitted == 0 {
		t.firstOmitted = n
	}
	t.RowsOmitted++
}

// rowsOmitted is the partial reason for rows past the cap, if any.
func (t *TestsResult) rowsOmitted() []string {
	if t.RowsOmitted == 0 {
		return nil
	}
	at := ""
	if t.firstOmitted > 0 {
		at = fmt.Sprintf(" (from line %d)", t.firstOmitted)
	}
	return []string{fmt.Sprintf("more than %d result rows: the %d past them%s were not kept", maxRows, t.RowsOmitted, at)}
}

// addUnparsed keeps a line that started like a row, clipped, or counts it
// once the cap is reached.
func (t *TestsResult) addUnparsed(line string) {
	if len(t.Unparsed) < maxUnparsed {
		t.Unparsed = append(t.Unparsed, clipText(line))
		return
	}
	t.UnparsedOmitted++
}

// addFailure keeps f, or counts it once the cap is reached.
func (t *TestsResult) addFailure(f Failure) {
	if len(t.Failures) < maxFailures {
		t.Failures = append(t.Failures, f)
		return
	}
	t.FailuresOmitted++
}

// lastRow names the last row read in a partial reason: "the 2 KiB row".
func lastRow(size int64) string {
	return "the " + results.SizeString(size) + " row"
}

func (t *TestsResult) setPartial(reasons []string) {
	if len(reasons) > 0 {
		t.Partial, t.PartialReason = true, strings.Join(reasons, "; ")
	}
}

// isLogLine reports whether line is NCCL's own debug output.
func isLogLine(line []byte) bool {
	_, _, _, ok := splitLogLine(line)
	return ok
}

// versionFromCode turns NCCL_VERSION_CODE (22803) into "2.28.3". Codes from
// 2.9 on are X*10000+Y*100+Z; older ones were X*1000+Y*100+Z.
func versionFromCode(s string) string {
	c, err := strconv.Atoi(s)
	if err != nil || c <= 0 {
		return ""
	}
	if c >= 10000 {
		return fmt.Sprintf("%d.%d.%d", c/10000, c/100%100, c%100)
	}
	return fmt.Sprintf("%d.%d.%d", c/1000, c/100%10, c%100)
}

// atoi is strconv.Atoi for fields a regexp already proved numeric or empty.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// setPeak sets Peak and PeakSize from the rows (see PeakBusBW).
func (t *TestsResult) setPeak() {
	if len(t.Rows) == 0 {
		return
	}
	bw, size := t.PeakBusBW()
	t.Peak, t.PeakSize = &bw, &size
}
