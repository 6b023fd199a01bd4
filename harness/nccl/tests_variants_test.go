package nccl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// How a parsed output is checked against its recording, and the header
// variants and field names of the nccl-tests parsers.

func checkTests(t *testing.T, got *TestsResult, w testsWant) {
	t.Helper()
	if got.Collective != w.collective || got.TestsVersion != w.tests || got.NCCLVersion != w.nccl || got.CUDAVersion != w.cuda {
		t.Errorf("collective, tests, NCCL, CUDA = %q %q %q %q, want %q %q %q %q",
			got.Collective, got.TestsVersion, got.NCCLVersion, got.CUDAVersion, w.collective, w.tests, w.nccl, w.cuda)
	}
	if len(got.Devices) != w.devices {
		t.Errorf("%d devices, want %d", len(got.Devices), w.devices)
	}
	if w.firstDevice != nil && len(got.Devices) > 0 {
		if d := diff(*w.firstDevice, got.Devices[0]); d != "" {
			t.Errorf("first device :\n%s", d)
		}
	}
	if len(got.Rows) != w.rows {
		t.Errorf("%d rows, want %d", len(got.Rows), w.rows)
	}
	if len(got.Unparsed) != w.unparsed {
		t.Errorf("unparsed lines %q, want %d", got.Unparsed, w.unparsed)
	}
	for size, want := range w.busbw {
		row, ok := rowAt(got, size)
		if !ok {
			t.Errorf("no row of %d bytes", size)
			continue
		}
		if row.BusBWOOP != want.oop || row.BusBWIP != want.ip {
			t.Errorf("busbw at %d = %v/%v, want %v/%v", size, row.BusBWOOP, row.BusBWIP, want.oop, want.ip)
		}
	}
	for size, want := range w.wrongAt {
		row, _ := rowAt(got, size)
		if d := diff(want, [2]*int64{row.WrongOOP, row.WrongIP}); d != "" {
			t.Errorf("wrong at %d :\n%s", size, d)
		}
	}
	if w.rows > 0 {
		first := got.Rows[0]
		if first.Type != w.firstRowType || first.RedOp != w.firstRedOp || first.Root != w.firstRoot {
			t.Errorf("first row type/redop/root = %q %q %d, want %q %q %d",
				first.Type, first.RedOp, first.Root, w.firstRowType, w.firstRedOp, w.firstRoot)
		}
	}
	if d := diff(w.avg, got.AvgBusBW); d != "" {
		t.Errorf("avg busbw :\n%s", d)
	}
	if d := diff(w.outOfBounds, got.OutOfBounds); d != "" {
		t.Errorf("out of bounds :\n%s", d)
	}
	wantFailures := w.failureCount
	if wantFailures == 0 {
		wantFailures = len(w.failures)
	}
	if len(got.Failures) != wantFailures {
		t.Errorf("%d failures, want %d: %+v", len(got.Failures), wantFailures, got.Failures)
	} else if d := diff(w.failures, got.Failures[:len(w.failures)]); len(w.failures) > 0 && d != "" {
		t.Errorf("failures :\n%s", d)
	}
	if peak, size := got.PeakBusBW(); peak != w.peak || size != w.peakSize {
		t.Errorf("PeakBusBW = %v at %d, want %v at %d", peak, size, w.peak, w.peakSize)
	}
	if got.Failed() != w.failed {
		t.Errorf("Failed() = %v, want %v", got.Failed(), w.failed)
	}
	if w.largeSizeMin > 0 {
		mean, ok := got.LargeSizeBusBW(w.largeSizeMin)
		if !ok || !near(mean, w.largeSizeMean) {
			t.Errorf("LargeSizeBusBW(%d) = %v %v, want %v", w.largeSizeMin, mean, ok, w.largeSizeMean)
		}
	}
	if got.PartialReason != w.partial || got.Partial != (w.partial != "") {
		t.Errorf("partial %v %q, want %q", got.Partial, got.PartialReason, w.partial)
	}
}

const noTable = "no result row and no failure line: the run stopped before its table or the output is an excerpt"

func rowAt(r *TestsResult, size int64) (Row, bool) {
	for _, row := range r.Rows {
		if row.Size == size {
			return row, true
		}
	}
	return Row{}, false
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestBusBWAtReturnsTheBetterPlacementAtAnExactSize(t *testing.T) {
	got, err := ParseTests(openFixture(t, recorded+"all_reduce_perf-h200x2-nv18-direct-p2p.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if bw, ok := got.BusBWAt(1048576); !ok || bw != 38.58 {
		t.Errorf("BusBWAt(1 MiB) = %v %v, want 38.58 true", bw, ok)
	}
	if bw, ok := got.BusBWAt(3); ok {
		t.Errorf("BusBWAt(3) = %v, want no row", bw)
	}
	if _, ok := got.LargeSizeBusBW(1 << 40); ok {
		t.Error("LargeSizeBusBW above every size found rows")
	}
}

func TestParseTestsReadsOtherHeaderVariants(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []Row
		unparsed int
		failures []Failure
		avg      *float64
	}{
		{
			name: "a pre-2.13 header without redop and root and with an error column",
			in: `#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float    24.38   43.00   43.00  0e+00    23.93   43.82   43.82  0e+00
`,
			want: []Row{{Size: 1048576, Count: 262144, Type: "float", Root: -1,
				TimeOOP: 24.38, AlgBWOOP: 43, BusBWOOP: 43, TimeIP: 23.93, AlgBWIP: 43.82, BusBWIP: 43.82}},
		},
		{
			name: "a per-iteration header from -R with a timestamp column",
			in: `#                                               out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp
     1048576        262144     float     sum      -1    27.18   38.58   38.58       0    26.00    29.00    28.90     2.10    33.62   31.19   31.19       0    32.00    35.00    34.90     1.50 2026-11-30 14:55:29
`,
			want: []Row{{Size: 1048576, Count: 262144, Type: "float", RedOp: "sum", Root: -1,
				TimeOOP: 27.18, AlgBWOOP: 38.58, BusBWOOP: 38.58, WrongOOP: ptr[int64](0),
				TimeIP: 33.62, AlgBWIP: 31.19, BusBWIP: 31.19, WrongIP: ptr[int64](0)}},
		},
		{
			name: "a wrong count printed with %g in exponent form",
			in: `     2048   512   float   sum   -1   19.27   0.11   0.11   1e+06   19.32   0.11   0.11   0
`,
			want: []Row{{Size: 2048, Count: 512, Type: "float", RedOp: "sum", Root: -1,
				TimeOOP: 19.27, AlgBWOOP: 0.11, BusBWOOP: 0.11, WrongOOP: ptr[int64](1000000),
				TimeIP: 19.32, AlgBWIP: 0.11, BusBWIP: 0.11, WrongIP: ptr[int64](0), Wrong: 1000000}},
		},
		{
			name:     "a row cut short by copy-paste is kept as unparsed",
			in:       "# Collective test starting: all_reduce_perf\n     4096   1024   float   sum   -1   19.79   0.21\n",
			want:     []Row{},
			unparsed: 1,
		},
		{
			name: "an NCCL failure and the library's last error are failures",
			in: `node1: Test NCCL failure common.cu:1095 'unhandled system error (run with NCCL_DEBUG=INFO for details) / socketProgress: Connection closed by remote peer'
# error: socketProgress: Connection closed by remote peer
`,
			want: []Row{},
			failures: []Failure{
				{Kind: "NCCL", Host: "node1", Where: "common.cu:1095",
					Message: "unhandled system error (run with NCCL_DEBUG=INFO for details) / socketProgress: Connection closed by remote peer", Line: 1},
				{Kind: "error", Message: "socketProgress: Connection closed by remote peer", Line: 2},
			},
		},
		{
			name: "an average of nan from a run with no sizes is no average",
			in:   "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : nan \n",
			want: []Row{},
		},
		{
			name: "a check against NCCL_TESTS_MIN_BW keeps the average",
			in:   "# Avg bus bandwidth    : 93.8432 FAILED\n",
			want: []Row{},
			avg:  ptr(93.8432),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTests(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(tt.want, got.Rows); d != "" {
				t.Errorf("rows :\n%s", d)
			}
			if len(got.Unparsed) != tt.unparsed {
				t.Errorf("unparsed = %q, want %d lines", got.Unparsed, tt.unparsed)
			}
			if d := diff(tt.failures, got.Failures); d != "" && len(tt.failures)+len(got.Failures) > 0 {
				t.Errorf("failures :\n%s", d)
			}
			if d := diff(tt.avg, got.AvgBusBW); d != "" {
				t.Errorf("avg :\n%s", d)
			}
		})
	}
}

func TestParseTestsRejectsInputWithoutNCCLTestsOutput(t *testing.T) {
	for _, in := range []string{"", "hello\nworld\n", "```\n...\n```\n"} {
		if _, err := ParseTests(strings.NewReader(in)); !errors.Is(err, ErrNoData) {
			t.Errorf("ParseTests(%q) error = %v, want ErrNoData", in, err)
		}
	}
}

func TestTestsResultMarshalsTheNamesTheCLIReads(t *testing.T) {
	got, err := ParseTests(openFixture(t, recorded+"sendrecv_perf-h200x2-nv18-direct-p2p.txt"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var view struct {
		Rows []struct {
			Size     int64   `json:"size"`
			BusBWOOP float64 `json:"busbw_oop"`
			BusBWIP  float64 `json:"busbw_ip"`
			Wrong    *int64  `json:"wrong"`
		} `json:"rows"`
		AvgBusBW *float64 `json:"avg_busbw"`
	}
	if err := json.Unmarshal(b, &view); err != nil {
		t.Fatal(err)
	}
	last := view.Rows[len(view.Rows)-1]
	if len(view.Rows) != 6 || last.Size != 1073741824 || last.BusBWOOP != 361.05 || last.BusBWIP != 360.25 ||
		last.Wrong == nil || *last.Wrong != 0 || view.AvgBusBW == nil || *view.AvgBusBW != 219.324 {
		t.Errorf("JSON view = %s", b)
	}
}

func TestVersionFromCodeReadsBothCodeSchemes(t *testing.T) {
	for code, want := range map[string]string{"22803": "2.28.3", "22902": "2.29.2", "21805": "2.18.5", "2708": "2.7.8", "x": "", "0": ""} {
		if got := versionFromCode(code); got != want {
			t.Errorf("versionFromCode(%q) = %q, want %q", code, got, want)
		}
	}
}
