package nccl

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The line readers of nccl-tests text output: its "#" header and footer
// lines (with or without the "#", as pasted from a rendered page), the
// table header, failure lines and rows.

// ncclVersionText is checked before ncclVersionRe runs on a line.
var ncclVersionText = []byte("NCCL version")

var (
	testsVersionRe = regexp.MustCompile(`^#\s*nccl-tests version (\S+)(?:.*nccl-library=(\d+))?`)
	collectiveRe   = regexp.MustCompile(`^#\s*Collective test starting:\s*(\S+)`)
	deviceRe       = regexp.MustCompile(`^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$`)
	outOfBoundsRe  = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(\d+)`)
	avgBusBWRe     = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*(\S+)`)
	// NCCL's own version line, bare ("NCCL version 2.26.6+cuda12.8") or as
	// an INFO line; a line that merely mentions a version ("# built with
	// NCCL version 2.18.1") is neither.
	ncclVersionRe = regexp.MustCompile(`(?:^\s*|\sNCCL INFO )NCCL version ([0-9]+\.[0-9]+\.[0-9]+)[^\s+]*(?:\+cuda([0-9.]+))?`)
	checkFailRe   = regexp.MustCompile(`^\s*(.*?):? Test (CUDA|NCCL) failure (\S+)\s*(.*?)\s*$`)
	// nccl-tests for NCCL 1.x: "NCCL failure all_reduce.cu:95 'unhandled
	// cuda error'", "Cuda failure common.cu:110 '...'" (no "Test ").
	oldFailRe   = regexp.MustCompile(`^\s*(?:(\S+?):? )?(NCCL|Cuda) failure (\S+:\d+)\s*(.*?)\s*$`)
	traceFailRe = regexp.MustCompile(`^\s*\.\. (\S+) pid (\d+): Test failure (\S+)`)
	lastErrorRe = regexp.MustCompile(`^#\s*error:\s*(.*?)\s*$`)
)

// layout is where the table columns sit, read from the header line because
// it differs between nccl-tests versions: redop and root were added in 2.13,
// -R adds per-iteration columns, -T a timestamp.
type layout struct {
	lead  []string // columns before the first time column: size, count, type, [redop], [root]
	width int      // columns per placement: time algbw busbw #wrong [i_min i_max i_p99 i_cv%]
	count bool     // whether the 4th column of a placement is #wrong (a count), not "error"
}

// defaultLayout is nccl-tests 2.13+, used when the header was trimmed away.
var defaultLayout = layout{lead: []string{"size", "count", "type", "redop", "root"}, width: 4, count: true}

// oldColumns are the names nccl-tests for NCCL 1.x gave its lead columns:
// "bytes N type op time algbw busbw res ...".
var oldColumns = map[string]string{"bytes": "size", "N": "count", "op": "redop"}

// parseHeader reads a "#  size  count  type ... time algbw busbw #wrong ..."
// line; ok is false for any other line.
func parseHeader(line string) (layout, bool) {
	cols := strings.Fields(strings.TrimLeft(line, "# "))
	for i, c := range cols {
		if n, ok := oldColumns[c]; ok {
			cols[i] = n
		}
	}
	if len(cols) < 6 || cols[0] != "size" || cols[1] != "count" {
		return layout{}, false
	}
	var times []int
	for i, c := range cols {
		if c == "time" || c == "cputime" {
			times = append(times, i)
		}
	}
	if len(times) == 0 {
		return layout{}, false
	}
	l := layout{lead: cols[:times[0]], width: len(cols) - times[0]}
	if len(times) > 1 {
		l.width = times[1] - times[0]
	}
	if l.width < 4 {
		return layout{}, false
	}
	l.count = cols[times[0]+3] == "#wrong"
	return l, true
}

// pastedLine is the "#" line a trimmed line without one was, when it is a
// header or footer line nccl-tests prints: copied from a rendered page
// (Markdown turns "#" into a heading) they lose it. "# error:" is left
// out: a bare "error: ..." line is any program's.
func pastedLine(trimmed string) (string, bool) {
	for _, p := range pastedStarts {
		if strings.HasPrefix(trimmed, p) {
			return "# " + trimmed, true
		}
	}
	return "", false
}

// isHeader reports whether a "#" line is the table header.
func isHeader(line string) bool {
	_, ok := parseHeader(line)
	return ok
}

var pastedStarts = []string{
	"nccl-tests version ", "Collective test starting:", "Rank ", "Out of bounds values", "Avg bus bandwidth",
	"size ", "bytes ",
}

// parseTestsComment handles one "#" line and reports whether it was one
// nccl-tests prints.
func parseTestsComment(line string, n int, res *TestsResult, lay *layout, libraryCode *string) bool {
	if m := testsVersionRe.FindStringSubmatch(line); m != nil {
		res.TestsVersion, *libraryCode = clipField(m[1]), clipField(m[2])
		return true
	}
	if m := collectiveRe.FindStringSubmatch(line); m != nil {
		if res.Collective == "" {
			res.Collective = clipField(m[1])
		}
		return true
	}
	if m := deviceRe.FindStringSubmatch(line); m != nil {
		if len(res.Devices) >= maxDevices {
			res.DevicesOmitted++
			return true
		}
		res.Devices = append(res.Devices, Device{
			Rank: atoi(m[1]), Group: atoi(m[2]), PID: atoi(m[3]), Host: clipField(m[4]),
			Device: atoi(m[5]), BusID: clipField(m[6]), Name: clipField(m[7]),
		})
		return true
	}
	if m := outOfBoundsRe.FindStringSubmatch(line); m != nil {
		n := atoi(m[1])
		res.OutOfBounds = &n
		return true
	}
	if m := avgBusBWRe.FindStringSubmatch(line); m != nil {
		// nccl-tests prints "nan" when no size ran; that is no average.
		if v, err := strconv.ParseFloat(m[1], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			res.AvgBusBW = &v
		}
		return true
	}
	if m := lastErrorRe.FindStringSubmatch(line); m != nil {
		res.addFailure(Failure{Kind: "error", Message: clipText(m[1]), Line: n})
		return true
	}
	if l, ok := parseHeader(line); ok {
		*lay = l
		return true
	}
	return false
}

func parseFailure(line string) (Failure, bool) {
	if !strings.Contains(line, "Test ") {
		if strings.Contains(line, " failure ") {
			if m := oldFailRe.FindStringSubmatch(line); m != nil {
				kind := m[2]
				if kind == "Cuda" {
					kind = "CUDA"
				}
				return Failure{Kind: kind, Host: clipField(m[1]), Where: clipField(m[3]), Message: clipText(strings.Trim(m[4], `'"`))}, true
			}
		}
		return Failure{}, false
	}
	if m := traceFailRe.FindStringSubmatch(line); m != nil {
		return Failure{Kind: "test", Host: clipField(m[1]), PID: atoi(m[2]), Where: clipField(m[3])}, true
	}
	if m := checkFailRe.FindStringSubmatch(line); m != nil {
		return Failure{Kind: clipField(m[2]), Host: clipField(m[1]), Where: clipField(m[3]), Message: clipText(strings.Trim(m[4], `'"`))}, true
	}
	return Failure{}, false
}

// parseRow reads one table line laid out as lay says. Columns past the two
// placements (a -T timestamp) are ignored.
func parseRow(f []string, lay layout) (Row, bool) {
	n := len(lay.lead)
	if len(f) < n+2*lay.width {
		return Row{}, false
	}
	row := Row{Root: -1}
	for i, col := range lay.lead {
		var err error
		switch col {
		case "size":
			row.Size, err = strconv.ParseInt(f[i], 10, 64)
		case "count":
			row.Count, err = strconv.ParseInt(f[i], 10, 64)
		case "type":
			row.Type = clipField(f[i])
		case "redop":
			row.RedOp = clipField(f[i])
		case "root":
			row.Root, err = strconv.Atoi(f[i])
		}
		if err != nil {
			return Row{}, false
		}
	}
	var ok1, ok2 bool
	row.TimeOOP, row.AlgBWOOP, row.BusBWOOP, row.WrongOOP, ok1 = parsePlacement(f[n:n+lay.width], lay.count)
	row.TimeIP, row.AlgBWIP, row.BusBWIP, row.WrongIP, ok2 = parsePlacement(f[n+lay.width:n+2*lay.width], lay.count)
	if !ok1 || !ok2 {
		return Row{}, false
	}
	for _, w := range []*int64{row.WrongOOP, row.WrongIP} {
		if w != nil {
			row.Wrong += *w
		}
	}
	return row, true
}

func parsePlacement(f []string, count bool) (time, algbw, busbw float64, wrong *int64, ok bool) {
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, 0, 0, nil, false
		}
		v[i] = x
	}
	if f[3] != "N/A" {
		// Printed with %g, so a large count may read "1e+06".
		x, err := strconv.ParseFloat(f[3], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, 0, 0, nil, false
		}
		if count {
			n := int64(x)
			wrong = &n
		}
	}
	return v[0], v[1], v[2], wrong, true
}
