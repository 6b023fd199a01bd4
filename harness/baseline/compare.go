package baseline

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// Comparison is a measured value against a metric's expectation.
type Comparison struct {
	Profile   string // the baseline's profile; set by (*Baseline).Compare
	Metric    string
	Unit      string
	Direction Direction
	Size      int64 // the message size compared at; 0 for none
	AtSize    bool  // Expected came from by_size for Size
	Value     float64
	Expected  float64
	// Low and High are the band: Expected minus and plus the allowed
	// shortfall. Only the bad side fails (Low for higher, High for
	// lower); a hard limit has Low == High == Expected.
	Low, High float64
	DeltaPct  float64 // (Value-Expected)/Expected*100
	Pass      bool
	Hard      bool // the metric has no tolerance: Expected is a limit
	// Beyond is a pass outside the band on the good side: the node is
	// much better than its baseline, which may be stale or for other
	// hardware.
	Beyond bool
}

// Compare compares a value with the metric at a message size (0 for
// none): by_size's entry for that size takes precedence over Expected. A
// NaN value fails.
func (m Metric) Compare(value float64, size int64) Comparison {
	c := Comparison{
		Metric: m.Name, Unit: m.Unit, Direction: m.Direction, Size: size,
		Value: value, Expected: m.Expected, Hard: m.Tolerance == nil,
	}
	if e, ok := m.BySize[size]; ok && size != 0 {
		c.Expected, c.AtSize = e, true
	}
	allowed := 0.0
	if m.Tolerance != nil {
		allowed = m.Tolerance.Allowed(c.Expected)
	}
	c.Low, c.High = c.Expected-allowed, c.Expected+allowed
	if c.Expected != 0 {
		c.DeltaPct = (value - c.Expected) / c.Expected * 100
	}
	switch m.Direction {
	case Lower:
		c.Pass = value <= c.High
		c.Beyond = !c.Hard && value < c.Low
	default:
		c.Pass = value >= c.Low
		c.Beyond = !c.Hard && value > c.High
	}
	if math.IsNaN(value) {
		c.Pass, c.Beyond, c.DeltaPct = false, false, 0
	}
	return c
}

// Verdict is "pass" or "fail", as reports.Metric.Verdict spells it.
func (c Comparison) Verdict() string {
	if c.Pass {
		return "pass"
	}
	return "fail"
}

// String is one line for people:
//
//	nccl.all_reduce.busbw at 2 GiB: 341.6 GB/s, expected 341.6 GB/s (fails below 307.4), +0.0%: pass
//	nccl.fallback.p2p-disabled.ratio: 0.0838, limit <= 0.5, -83.2%: pass
func (c Comparison) String() string {
	var b strings.Builder
	b.WriteString(c.Metric)
	if c.Size != 0 {
		b.WriteString(" at " + results.SizeString(c.Size))
	}
	fmt.Fprintf(&b, ": %s, ", withUnit(c.Value, c.Unit))
	op, edge, word := ">=", c.Low, "below"
	if c.Direction == Lower {
		op, edge, word = "<=", c.High, "above"
	}
	if c.Hard {
		fmt.Fprintf(&b, "limit %s %s", op, withUnit(c.Expected, c.Unit))
	} else {
		fmt.Fprintf(&b, "expected %s (fails %s %s)", withUnit(c.Expected, c.Unit), word, formatNumber(edge))
	}
	fmt.Fprintf(&b, ", %+.1f%%: %s", c.DeltaPct, c.Verdict())
	if c.Beyond {
		b.WriteString(" (better than the band: is the baseline stale?)")
	}
	return b.String()
}

// Band says what passes, for failure messages:
//
//	>= 270.6 GB/s (expected 300.7 GB/s at 256 MiB)
//	<= 0.5 (a hard limit)
func (c Comparison) Band() string {
	op, edge := ">=", c.Low
	if c.Direction == Lower {
		op, edge = "<=", c.High
	}
	s := op + " " + withUnit(edge, c.Unit)
	if c.Hard {
		return s + " (a hard limit)"
	}
	s += " (expected " + withUnit(c.Expected, c.Unit)
	if c.AtSize {
		s += " at " + results.SizeString(c.Size)
	}
	return s + ")"
}

func withUnit(v float64, unit string) string {
	if unit == "" {
		return formatNumber(v)
	}
	return formatNumber(v) + " " + unit
}

// formatNumber prints a value with the precision people read: one decimal
// from 100 up, two from 1, four significant digits below, and four in
// exponent form from a million up (1e+308 is not 309 digits).
func formatNumber(v float64) string {
	var s string
	switch a := math.Abs(v); {
	case a >= 1e6:
		s = strconv.FormatFloat(v, 'g', 4, 64)
	case a >= 100:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		s = strconv.FormatFloat(v, 'g', 4, 64)
	}
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "eE") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
