package nccl

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/results"
)

// maxDamage is how many damaged-row reasons a result names; the rest are
// counted in one more sentence.
const maxDamage = 4

// seriesKey is one sweep of sizes in a table: nccl-tests -d all and -o all
// step through the sizes once per type and reduction, so sizes start over
// when these change, and only there.
type seriesKey struct {
	typ, redop string
	root       int
}

// sweepTable follows the result table being read: whether one is open (a
// header or a row seen, its "# Avg bus bandwidth" footer not yet), the
// largest size of each sweep in it, and what made it unfit to compare.
type sweepTable struct {
	open    bool
	largest map[seriesKey]int64
	damage  []string
	more    int
}

// start opens a table at its header; end closes it at its footer.
func (t *sweepTable) start() { t.open, t.largest = true, nil }
func (t *sweepTable) end()   { t.open, t.largest = false, nil }

// damaged records why the table cannot be compared.
func (t *sweepTable) damaged(format string, args ...any) {
	if len(t.damage) < maxDamage {
		t.damage = append(t.damage, fmt.Sprintf(format, args...))
		return
	}
	t.more++
}

// reasons are the partial reasons the table gives.
func (t *sweepTable) reasons() []string {
	if t.more > 0 {
		return append(t.damage, fmt.Sprintf("%d more damaged rows", t.more))
	}
	return t.damage
}

// row checks that a row read on line n grows its sweep: a repeated or
// smaller size means two runs were mixed or rows were lost, so which row
// is the largest size measured cannot be told.
func (t *sweepTable) row(r Row, n int) {
	t.open = true
	if t.largest == nil {
		t.largest = map[seriesKey]int64{}
	}
	k := seriesKey{r.Type, r.RedOp, r.Root}
	prev, seen := t.largest[k]
	switch {
	case seen && r.Size == prev:
		t.damaged("line %d repeats the %s row: the sizes of a table only grow, so the largest size measured is not known", n, results.SizeString(r.Size))
	case seen && r.Size < prev:
		t.damaged("line %d goes back to %s after the %s row: the sizes of a table only grow, so the largest size measured is not known", n, results.SizeString(r.Size), results.SizeString(prev))
	case !seen && len(t.largest) >= maxRows:
		// No more sweeps are followed; the row cap makes such a sweepTable
		// partial anyway.
	default:
		t.largest[k] = r.Size
	}
}

// broken records a line inside the sweepTable that starts like a row but does
// not parse, saying what is wrong with it (log is true when NCCL's own
// log is interleaved into it).
func (t *sweepTable) broken(fields []string, lay layout, n int, log bool) {
	what := "does not parse"
	switch {
	case log:
		what = "has NCCL's log interleaved into it"
	default:
		if w := badValue(fields, lay); w != "" {
			what = w
		}
	}
	t.damaged("line %d: %s %s: the row is not measured, so the largest size measured is not known", n, rowName(fields[0]), what)
}

// rowName names a damaged row by its size field: "the 2 GiB row", or the
// field itself where it is no size.
func rowName(f string) string {
	if s, err := strconv.ParseInt(f, 10, 64); err == nil && s >= 0 {
		return lastRow(s)
	}
	return fmt.Sprintf("the row of size %s", clipField(f))
}

// badValue says which value of a row that did not parse is wrong: a size
// or count past int64, or a time or bandwidth that is not a finite
// number; "" when none is.
func badValue(f []string, lay layout) string {
	for i, col := range lay.lead {
		if i >= len(f) || (col != "size" && col != "count") {
			continue
		}
		if _, err := strconv.ParseInt(f[i], 10, 64); errors.Is(err, strconv.ErrRange) {
			return fmt.Sprintf("has a %s past the largest 64-bit integer (%s)", col, clipField(f[i]))
		}
	}
	for _, v := range f[min(len(lay.lead), len(f)):] {
		x, err := strconv.ParseFloat(v, 64)
		if (err == nil || errors.Is(err, strconv.ErrRange)) && (math.IsInf(x, 0) || math.IsNaN(x)) {
			return fmt.Sprintf("has a value that is not a finite number (%s)", clipField(v))
		}
	}
	return ""
}

// rowStart reports whether fields start like a sweepTable row: a decimal
// integer first, even one too large for int64.
func rowStart(fields []string) bool {
	if len(fields) == 0 {
		return false
	}
	_, err := strconv.ParseInt(fields[0], 10, 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// mayStartRow is false for a line whose first field cannot be a number
// for rowStart: one that starts with an ASCII byte that is neither a
// space (unicode.IsSpace), a sign nor a digit, as "host:pid:tid" does. It
// spares each log line in a table a string and its fields.
func mayStartRow(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch c := b[0]; {
	case c >= utf8.RuneSelf, c == ' ', '\t' <= c && c <= '\r', c == '+', c == '-', '0' <= c && c <= '9':
		return true
	}
	return false
}

// tableLog handles a line of NCCL's log met inside a sweepTable: a WARN or an
// error trace there is a failure of the run being measured, and a log
// line that starts like a row is a row broken by it.
func (res *TestsResult) tableLog(b []byte, n int, tab *sweepTable, lay layout) {
	if !tab.open {
		return
	}
	level, _, msg, _ := splitLogLine(b)
	if mayStartRow(b) {
		if fields := strings.Fields(string(b)); rowStart(fields) {
			res.addUnparsed(string(b))
			tab.broken(fields, lay, n, true)
		}
	}
	switch {
	case level == levelWarn:
		res.addFailure(Failure{Kind: FailureWarn, Message: keep(msg), Line: n})
	case level == levelInfo && isErrTrace(msg):
		res.addFailure(Failure{Kind: FailureError, Message: keep(msg), Line: n})
	}
}

// Failure kinds for NCCL's own log inside a result sweepTable.
const (
	FailureWarn  = "WARN"  // an "NCCL WARN" line
	FailureError = "ERROR" // an NCCL error trace ("file.cc:123 -> 2")
)

// Largest is the row of the largest size measured, the one a baseline is
// compared at (in output order, the first of that size); false without
// rows. Only a sweepTable that is not Partial says for sure which size that
// is: a repeated or backwards size or a broken row makes it partial.
func (t *TestsResult) Largest() (Row, bool) {
	if len(t.Rows) == 0 {
		return Row{}, false
	}
	best := t.Rows[0]
	for _, r := range t.Rows[1:] {
		if r.Size > best.Size {
			best = r
		}
	}
	return best, true
}

// checkSweeps is the sweepTable check for rows read without line numbers (the
// -J JSON): its partial reasons.
func checkSweeps(rows []Row) []string {
	var tab sweepTable
	for i, r := range rows {
		tab.row(r, i+1)
	}
	rs := tab.reasons()
	for i, r := range rs {
		rs[i] = strings.Replace(r, "line ", "entry ", 1)
	}
	return rs
}
