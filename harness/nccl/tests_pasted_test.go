package nccl

import (
	"strings"
	"testing"
)

// nccl-tests output as people paste it (issue 23): header and footer lines
// without their "#", nccl-tests for NCCL 1.x, a table tail without its
// header, and comment lines that mention a version.

func parseTestsText(t *testing.T, in string) *TestsResult {
	t.Helper()
	r, err := ParseTests(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const pastedTable = `nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903
Collective test starting: all_reduce_perf
Rank  0 Group  0 Pid   4161 on   gpu-1 device  0 [0x00] NVIDIA A10G
                                                              out-of-place                       in-place
      size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
       (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    102.5   10.23   15.35      2    101.9   10.29   15.43      0
     2097152        524288     float     sum      -1    190.1   11.03   16.55      0    189.7   11.06   16.58      0
Out of bounds values : 2 FAILED
Avg bus bandwidth    : 15.9775
`

// Copied from a rendered page, the header and footer lost their "#": the
// out-of-bounds failure must still be read, and the run is whole.
func TestParseTestsReadsHeaderAndFooterPastedWithoutHash(t *testing.T) {
	r := parseTestsText(t, pastedTable)
	if r.OutOfBounds == nil || *r.OutOfBounds != 2 || !r.Failed() {
		t.Errorf("out of bounds %v, failed %v; want 2 and failed", r.OutOfBounds, r.Failed())
	}
	if r.AvgBusBW == nil || *r.AvgBusBW != 15.9775 || len(r.Rows) != 2 || r.Partial {
		t.Errorf("avg %v, %d rows, partial %v (%s); want 15.9775, 2, whole", r.AvgBusBW, len(r.Rows), r.Partial, r.PartialReason)
	}
	if r.Collective != "all_reduce_perf" || r.TestsVersion != "2.13.9" || len(r.Devices) != 1 || r.Devices[0].Host != "gpu-1" {
		t.Errorf("collective %q, version %q, devices %+v", r.Collective, r.TestsVersion, r.Devices)
	}
	ok := strings.Replace(pastedTable, "2 FAILED", "0 OK", 1)
	ok = strings.Replace(ok, "     2    101.9", "     0    101.9", 1)
	if r := parseTestsText(t, ok); r.Failed() {
		t.Errorf("the same table with 0 out of bounds failed: %+v", r.Failures)
	}
	// A bare "error:" line is any program's, not nccl-tests' "# error:".
	if r := parseTestsText(t, pastedTable+"error: something else\n"); len(r.Failures) != 0 {
		t.Errorf("a bare error line became failures %+v", r.Failures)
	}
}

// nccl-tests for NCCL 1.x printed "bytes N type op" and "NCCL failure
// file:line 'msg'" without "Test " (NVIDIA/nccl-tests#5).
func TestParseTestsReadsNCCL1FailureBeforeTheFirstRow(t *testing.T) {
	r := parseTestsText(t, "# NCCL Tests compiled with NCCL 1.0\n"+
		"#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"+
		"NCCL failure all_reduce.cu:95 'unhandled cuda error'\n")
	if len(r.Failures) != 1 || !r.Failed() {
		t.Fatalf("failures %+v; want one", r.Failures)
	}
	if f := r.Failures[0]; f.Kind != "NCCL" || f.Where != "all_reduce.cu:95" || f.Message != "unhandled cuda error" || f.Line != 3 {
		t.Errorf("failure %+v", f)
	}
	if !r.Partial || !strings.Contains(r.PartialReason, "failed before its first result row") {
		t.Errorf("partial %v (%s); want the failure before the first row", r.Partial, r.PartialReason)
	}
	row := parseTestsText(t, "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"+
		"     1048576        262144     float     sum    102.5   10.23   15.35  0e+00    101.9   10.29   15.43  0e+00\n")
	if len(row.Rows) != 1 || row.Rows[0].BusBWIP != 15.43 || row.Rows[0].RedOp != "sum" {
		t.Errorf("old-layout rows %+v (unparsed %q)", row.Rows, row.Unparsed)
	}
	if r := parseTestsText(t, "# Out of bounds values : 0 OK\nthe job failure rate: 3 of 10\n"); len(r.Failures) != 0 {
		t.Errorf("prose with 'failure' became failures %+v", r.Failures)
	}
}

// A table tail (rows and footer, no header) is an excerpt: partial, so
// that it does not pass as a whole run (NVIDIA/nccl#1706).
func TestParseTestsMarksRowsWithoutAHeaderPartial(t *testing.T) {
	r := parseTestsText(t, "   134217728      33554432     float     sum      -1   5190.8   25.86   25.86      0   5186.6   25.88   25.88      0\n"+
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 8.62002\n")
	if !r.Partial || !strings.Contains(r.PartialReason, "no table header") || len(r.Rows) != 1 || r.Failed() {
		t.Errorf("partial %v (%s), %d rows, failed %v", r.Partial, r.PartialReason, len(r.Rows), r.Failed())
	}
}

// The version comes from NCCL's own line only, bare or as an INFO line,
// else from nccl-tests' nccl-library code (21903 here): never from a
// comment that mentions one.
func TestParseTestsReadsTheVersionOnlyFromNCCLsLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"# built against NCCL version 2.18.1 from conda\n" + pastedTable, "2.19.3"},
		{"NCCL version 2.26.6+cuda12.8\n" + pastedTable, "2.26.6"},
		{"h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n" + pastedTable, "2.21.5"},
	} {
		if got := parseTestsText(t, tt.in).NCCLVersion; got != tt.want {
			t.Errorf("%q: version %q, want %q", strings.SplitN(tt.in, "\n", 2)[0], got, tt.want)
		}
	}
}
