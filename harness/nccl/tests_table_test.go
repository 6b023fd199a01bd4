package nccl

import (
	"os"
	"strings"
	"testing"
)

// recordedTable is the real 2 x H200 all_reduce output, its 2 GiB row
// replaced by rows (lines, each ending in a newline).
func recordedTable(t *testing.T, rows string) string {
	t.Helper()
	b, err := os.ReadFile("../../fixtures/nccl-tests/all_reduce_perf-h200x2-nv18-direct-p2p.txt")
	if err != nil {
		t.Fatal(err)
	}
	const last = "  2147483648     536870912     float     sum      -1  6289.98  341.41  341.41       0  6286.43  341.61  341.61       0\n"
	s := string(b)
	if !strings.Contains(s, last) {
		t.Fatal("recording changed shape; update the test")
	}
	return strings.Replace(s, last, rows, 1)
}

const (
	slow2G   = "  2147483648     536870912     float     sum      -1 63000.00   34.09   34.09       0 63000.00   34.09   34.09       0\n"
	again1G  = "  1073741824     268435456     float     sum      -1  3269.90  328.37  328.37       0  3239.42  331.46  331.46       0\n"
	oom2G    = "  2147483648     536870912     float     sum      -1 vm:1933:1933 [0] include/alloc.h:124 NCCL WARN Cuda failure 2 'out of memory'\n"
	inf2G    = "  2147483648     536870912     float     sum      -1  6289.98     inf     inf       0  6286.43     inf     inf       0\n"
	huge     = "  99999999999999999999     536870912     float     sum      -1  6289.98  341.41  341.41       0  6286.43  341.61  341.61       0\n"
	warnLine = "vm:1933:1940 [1] transport/p2p.cc:275 NCCL WARN Cuda failure 'an illegal memory access was encountered'\n"
)

// Each damaged table is partial, naming the row, and the largest size
// measured is never taken from the row before the damage.
func TestParseTestsMakesADamagedTablePartialNamingTheRow(t *testing.T) {
	for _, c := range []struct {
		name, rows, reason string
		line               string // where the damage is
		failure            string // the Failure kind expected, if any
	}{
		{"a 2 GiB row followed by a repeated 1 GiB row", slow2G + again1G, "goes back to 1 GiB after the 2 GiB row: the sizes of a table only grow", "line 639", ""},
		{"the 2 GiB row twice", slow2G + slow2G, "repeats the 2 GiB row", "line 639", ""},
		{"a 2 GiB row broken by an interleaved WARN", oom2G, "the 2 GiB row has NCCL's log interleaved into it", "line 638", FailureWarn},
		{"a 2 GiB row of inf", inf2G, "the 2 GiB row has a value that is not a finite number (inf)", "line 638", ""},
		{"a size past int64", huge, "the row of size 99999999999999999999 has a size past the largest 64-bit integer (99999999999999999999)", "line 638", ""},
	} {
		res, err := ParseTests(strings.NewReader(recordedTable(t, c.rows)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !res.Partial || !strings.Contains(res.PartialReason, c.reason) || !strings.Contains(res.PartialReason, c.line) {
			t.Errorf("%s: partial %v %q; want %q with its line", c.name, res.Partial, res.PartialReason, c.reason)
		}
		if got := len(res.Failures) > 0 && res.Failures[0].Kind == c.failure; c.failure != "" && !got {
			t.Errorf("%s: failures %+v, want a %s", c.name, res.Failures, c.failure)
		}
	}
}

func TestTheComparedRowIsTheLargestSizeNotTheLast(t *testing.T) {
	res, err := ParseTests(strings.NewReader(recordedTable(t, slow2G+again1G)))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.Largest(); !ok || r.Size != 2<<30 || r.BusBW() != 34.09 {
		t.Errorf("largest %+v %v, want the 2 GiB row at 34.09", r, ok)
	}
	if bw := (Result{Tests: res}).BusBW(); bw != 34.09 {
		t.Errorf("Result.BusBW %v, want 34.09", bw)
	}
}

// A WARN among the rows is a failure of the run measured; the same WARN
// before the table (at init) is not one the table judges.
func TestAWarnInsideTheTableIsAFailure(t *testing.T) {
	whole := recordedTable(t, warnLine+"  2147483648     536870912     float     sum      -1  6289.98  341.41  341.41       0  6286.43  341.61  341.61       0\n")
	res, err := ParseTests(strings.NewReader(whole))
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial || !res.Failed() || len(res.Failures) != 1 || res.Failures[0].Kind != FailureWarn || !strings.Contains(res.Failures[0].Message, "illegal memory access") {
		t.Errorf("partial %v %q, failures %+v", res.Partial, res.PartialReason, res.Failures)
	}
	before := strings.Replace(recordedTable(t, "  2147483648     536870912     float     sum      -1  6289.98  341.41  341.41       0  6286.43  341.61  341.61       0\n"), "# Collective test starting", strings.TrimSuffix(warnLine, "\n")+"\n# Collective test starting", 1)
	if res, err := ParseTests(strings.NewReader(before)); err != nil || res.Failed() || res.Partial {
		t.Errorf("a WARN before the table: %v, failures %+v, partial %q", err, res.Failures, res.PartialReason)
	}
}

// -d all steps through the sizes once per type: each sweep grows on its
// own, and a table of several is whole.
func TestEachTypeSweepsItsOwnSizes(t *testing.T) {
	in := "# Collective test starting: all_reduce_perf\n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"        1024           256     float     sum      -1    19.91    0.05    0.05       0    19.80    0.05    0.05       0\n" +
		"        2048           512     float     sum      -1    19.55    0.10    0.10       0    20.90    0.10    0.10       0\n" +
		"        1024           512      half     sum      -1    19.91    0.05    0.05       0    19.80    0.05    0.05       0\n" +
		"        2048          1024      half     sum      -1    19.55    0.10    0.10       0    20.90    0.10    0.10       0\n" +
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.07\n"
	res, err := ParseTests(strings.NewReader(in))
	if err != nil || res.Partial || len(res.Rows) != 4 {
		t.Errorf("%v, %d rows, partial %q", err, len(res.Rows), res.PartialReason)
	}
}

func TestParseTestsJSONFlagsARepeatedSize(t *testing.T) {
	in := `{"args": ["./all_reduce_perf"], "results": [` +
		`{"size": 2147483648, "count": 536870912, "type": "float", "redop": "sum", "root": "-1", "in_place": {"time": 6286.43, "alg_bw": 34.1, "bus_bw": 34.1, "nwrong": 0}},` +
		`{"size": 1073741824, "count": 268435456, "type": "float", "redop": "sum", "root": "-1", "in_place": {"time": 3239.42, "alg_bw": 331.46, "bus_bw": 331.46, "nwrong": 0}}` +
		`], "average_bus_bandwidth": {"bandwidth": 180}}`
	res, err := ParseTestsJSON(strings.NewReader(in))
	if err != nil || !res.Partial || !strings.Contains(res.PartialReason, "entry 2 goes back to 1 GiB after the 2 GiB row") {
		t.Errorf("%v, partial %v %q", err, res.Partial, res.PartialReason)
	}
}

// mayStartRow only spares lines rowStart turns away.
func FuzzMayStartRowHidesNoRow(f *testing.F) {
	for _, s := range []string{
		"vm:1933:1944 [0] NCCL INFO x", "     8     2   float", "+8 x", "-1", "\u00a08 x", "\u20288", "\v8", "", "x8", "#8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !mayStartRow([]byte(s)) && rowStart(strings.Fields(s)) {
			t.Errorf("mayStartRow(%q) is false, but it starts a row", s)
		}
	})
}
