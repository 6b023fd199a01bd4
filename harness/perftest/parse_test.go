package perftest

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/fuzzseed"
)

const corpus = "../../fixtures/corpus/perftest"

func parseFile(t testing.TB, path string) *Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%q): %v", path, err)
	}
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

type bw struct{ peak, avg float64 }

// want holds the facts a file is known to show; zero fields are checked
// too, so "no GPU" and "no error" are assertions as well.
type want struct {
	test, device, link, transport, conn string
	gid                                 *int
	qps, mtu                            int
	mem                                 Mem
	memEvidence                         string // substring
	gpu                                 string
	unit                                string
	kind                                Kind
	rows                                int
	msgSize                             int64
	peak, avg                           float64
	at                                  map[int64]bw
	err                                 string
	failKind                            string
	cause                               string
	side                                string
	wcStatus                            int // -1: none
	wcName, syndrome                    string
	errno                               int
	errnoName                           string
	partial                             string // PartialReason; "" for a whole run
	causeLine                           int    // Failure.Line; checked when set
}

func intp(n int) *int { return &n }

func check(t *testing.T, r *Result, w want) {
	t.Helper()
	str := func(field, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}
	str("Test", r.Test, w.test)
	str("Device", r.Device, w.device)
	str("LinkType", r.LinkType, w.link)
	str("Transport", r.Transport, w.transport)
	str("Connection", r.Connection, w.conn)
	str("Mem", string(r.Mem), string(w.mem))
	str("GPU", r.GPU, w.gpu)
	str("Unit", r.Unit, w.unit)
	str("Kind", string(r.Kind), string(w.kind))
	str("Error", r.Error, w.err)
	if !strings.Contains(r.MemEvidence, w.memEvidence) {
		t.Errorf("MemEvidence = %q, want it to contain %q", r.MemEvidence, w.memEvidence)
	}
	if !reflect.DeepEqual(r.GIDIndex, w.gid) {
		t.Errorf("GIDIndex = %v, want %v", r.GIDIndex, w.gid)
	}
	if r.QPs != w.qps || r.MTU != w.mtu {
		t.Errorf("QPs, MTU = %d, %d, want %d, %d", r.QPs, r.MTU, w.qps, w.mtu)
	}
	if len(r.Rows) != w.rows {
		t.Errorf("%d rows, want %d", len(r.Rows), w.rows)
	}
	if r.MsgSize != w.msgSize || !near(r.BWPeakGbps, w.peak) || !near(r.BWAvgGbps, w.avg) {
		t.Errorf("headline = %d B %v/%v Gb/s, want %d B %v/%v Gb/s",
			r.MsgSize, r.BWPeakGbps, r.BWAvgGbps, w.msgSize, w.peak, w.avg)
	}
	for size, b := range w.at {
		row, ok := r.Row(size)
		if !ok {
			t.Errorf("no row for %d bytes", size)
			continue
		}
		if !near(row.BWPeakGbps, b.peak) || !near(row.BWAvgGbps, b.avg) {
			t.Errorf("%d bytes: %v/%v Gb/s, want %v/%v", size, row.BWPeakGbps, row.BWAvgGbps, b.peak, b.avg)
		}
	}
	if r.PartialReason != w.partial || r.Partial != (w.partial != "") {
		t.Errorf("partial %v %q, want %q", r.Partial, r.PartialReason, w.partial)
	}
	if r.Failed() != (w.err != "") {
		t.Errorf("Failed() = %v with Error %q", r.Failed(), r.Error)
	}
	if err := r.Err(); (err != nil) != r.Failed() || (err != nil && !errors.Is(err, ErrRunFailed)) {
		t.Errorf("Err() = %v, want an ErrRunFailed exactly when Failed()", err)
	}
	f := r.Failure
	if w.err == "" {
		if f != nil {
			t.Errorf("Failure = %+v, want none", f)
		}
		return
	}
	if f == nil {
		t.Fatalf("Failure = nil, want %q", w.cause)
	}
	str("Failure.Kind", f.Kind, w.failKind)
	str("Failure.Cause", f.Cause, w.cause)
	str("Failure.Side", f.Side, w.side)
	str("Failure.WCStatusName", f.WCStatusName, w.wcName)
	str("Failure.Syndrome", f.Syndrome, w.syndrome)
	str("Failure.ErrnoName", f.ErrnoName, w.errnoName)
	if w.causeLine != 0 && f.Line != w.causeLine {
		t.Errorf("Failure.Line = %d, want %d", f.Line, w.causeLine)
	}
	gotStatus := -1
	if f.WCStatus != nil {
		gotStatus = *f.WCStatus
	}
	if gotStatus != w.wcStatus || f.Errno != w.errno {
		t.Errorf("WCStatus, Errno = %d, %d, want %d, %d", gotStatus, f.Errno, w.wcStatus, w.errno)
	}
}

var recorded = []struct {
	name, file string
	want       want
}{
	{
		name: "a GKE A3 Ultra H200 run with --use_cuda_dmabuf is a DMA-BUF run peaking at about 141 Gb/s",
		file: "gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt",
		want: want{
			test: "RDMA_Write BW Test", device: "mlx5_3", link: "Ethernet", transport: "IB", conn: "RC",
			gid: intp(3), qps: 1, mtu: 4096,
			mem: MemCUDADMABuf, memEvidence: "using DMA-BUF for GPU buffer", gpu: "NVIDIA H200",
			unit: UnitGbps, kind: KindBW,
			rows: 23, msgSize: 8388608, peak: 140.55, avg: 140.40,
			at: map[int64]bw{
				2:       {0.057240, 0.056633},
				65536:   {140.90, 140.88},
				131072:  {140.96, 140.95}, // the highest peak of the run
				1048576: {140.49, 140.29},
			},
			wcStatus: -1,
		},
	},
	{
		name: "a GKE host-memory run reaches about 381 Gb/s at 64 KB and then fails with work completion status 10",
		file: "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt",
		want: want{
			test: "RDMA_Write BW Test", device: "mlx5_3", link: "Ethernet", transport: "IB", conn: "RC",
			gid: intp(3), qps: 1, mtu: 4096,
			mem: MemHost, memEvidence: "ib_write_bw 10.0.4.7 -a --report_gbits",
			unit: UnitGbps, kind: KindBW,
			rows: 16, msgSize: 65536, peak: 381.50, avg: 381.41,
			at: map[int64]bw{
				2:     {0.050986, 0.048851},
				32768: {376.54, 376.29},
				65536: {381.50, 381.41},
			},
			err: "Completion with error at client; " +
				"Failed status 10: wr_id 0 syndrom 0x88 (IBV_WC_REM_ACCESS_ERR); " +
				"Failed to complete run_iter_bw function successfully",
			failKind: "completion", cause: "Failed status 10: wr_id 0 syndrom 0x88", side: "client",
			wcStatus: 10, wcName: "IBV_WC_REM_ACCESS_ERR", syndrome: "0x88", causeLine: 43,
		},
	},
	{
		// The doc ran --use_cuda=0 --use_cuda_dmabuf, but its excerpt starts
		// at the banner, which says nothing about memory: the parser must
		// not guess "host".
		name: "the RST-indented GPU Operator doc run plateaus at about 92.4 Gb/s and its memory is unknown",
		file: "nvidia-cloudnativedocs-gpuop-ib_write_bw-use_cuda_dmabuf-roce-92gbps-rst-indented.txt",
		want: want{
			test: "RDMA_Write BW Test", device: "mlx5_0", link: "Ethernet", transport: "IB", conn: "RC",
			gid: intp(5), qps: 1, mtu: 1024,
			mem: MemUnknown, unit: UnitGbps, kind: KindBW,
			rows: 23, msgSize: 8388608, peak: 92.39, avg: 92.39,
			at: map[int64]bw{
				2:     {0.11, 0.11},
				2048:  {91.53, 91.47},
				16384: {92.46, 92.46},
			},
			wcStatus: -1,
		},
	},
}

func TestParseRecordedOutputs(t *testing.T) {
	for _, tc := range recorded {
		t.Run(tc.name, func(t *testing.T) {
			check(t, parseFile(t, filepath.Join(corpus, tc.file)), tc.want)
		})
	}
}

func TestEveryRecordedOutputHasACase(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpus, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded outputs in %s: %v", corpus, err)
	}
	covered := map[string]bool{}
	for _, tc := range recorded {
		covered[tc.file] = true
	}
	for _, f := range files {
		// cmd/gdrcheck's corpus test checks the files with a golden.
		golden := filepath.Join(corpus, "..", "golden", "perftest", strings.TrimSuffix(filepath.Base(f), ".txt")+".json")
		if _, err := os.Stat(golden); err == nil && !covered[filepath.Base(f)] {
			continue
		}
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no case in TestParseRecordedOutputs", filepath.Base(f))
		}
	}
}

func TestParseSyntheticOutputs(t *testing.T) {
	tests := []struct {
		name, file string
		want       want
		check      func(t *testing.T, r *Result)
	}{
		{
			name: "a latency run over IB keeps every percentile column per size",
			file: "ib_write_lat-ib-host-a-synthetic.txt",
			want: want{
				test: "RDMA_Write Latency Test", device: "mlx5_0", link: "IB", transport: "IB", conn: "RC",
				qps: 1, mtu: 4096, mem: MemHost, memEvidence: "ib_write_lat -d mlx5_0 -a", kind: KindLat,
				rows: 23, msgSize: 8388608, wcStatus: -1,
			},
			check: func(t *testing.T, r *Result) {
				if r.LatencyUnit != "usec" {
					t.Errorf("LatencyUnit = %q", r.LatencyUnit)
				}
				got, _ := r.Row(2)
				want := Row{Bytes: 2, Iterations: 1000, TMin: 0.95, TMax: 3.33, TTypical: 0.98,
					TAvg: 0.99, TStdev: 0.05, P99: 1.18, P999: 3.33}
				if got != want {
					t.Errorf("2-byte row = %+v, want %+v", got, want)
				}
				if last := r.Rows[len(r.Rows)-1]; last.TTypical != 354.18 || last.P999 != 1204.23 {
					t.Errorf("last row = %+v", last)
				}
			},
		},
		{
			name: "a peermem-path run without nvidia_peermem fails to register GPU memory with EFAULT",
			file: "ib_write_bw-cuda-peermem-missing-couldnt-allocate-mr-synthetic.txt",
			want: want{
				mem: MemCUDA, memEvidence: "CUDA", gpu: "NVIDIA H100 80GB HBM3",
				err:      "Couldn't allocate MR with error=14 (EFAULT); Failed to create MR; Couldn't create IB resources",
				failKind: "mr", cause: "Couldn't allocate MR with error=14", causeLine: 14,
				wcStatus: -1, errno: 14, errnoName: "EFAULT",
			},
		},
		{
			name: "a newer ib_read_bw in MiB/sec is normalised to Gb/s and keeps the named completion status",
			file: "ib_read_bw-ib-mibps-retry-exceeded-synthetic.txt",
			want: want{
				test: "RDMA_Read BW Test", device: "mlx5_1", link: "IB", transport: "IB", conn: "RC",
				qps: 4, mtu: 4096, unit: UnitMiBps, kind: KindBW,
				rows: 1, msgSize: 65536,
				peak: 23450.12 * 1048576 * 8 / 1e9, avg: 23398.77 * 1048576 * 8 / 1e9,
				err: "Completion with error at client; " +
					"Failed status-IBV_WC_RETRY_EXC_ERR (12): wr_id 3 syndrom 0x81; " +
					"Failed to complete run_iter_bw function successfully",
				failKind: "completion", cause: "Failed status-IBV_WC_RETRY_EXC_ERR (12): wr_id 3 syndrom 0x81",
				side: "client", wcStatus: 12, wcName: "IBV_WC_RETRY_EXC_ERR", syndrome: "0x81", causeLine: 21,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := parseFile(t, filepath.Join("testdata", tc.file))
			check(t, r, tc.want)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestParseInlineOutputs(t *testing.T) {
	tests := []struct {
		name, in string
		want     want
	}{
		{
			name: "a DMA-BUF GPU without support fails as a dmabuf cause even without a command line",
			in: "initializing CUDA\nCUDA device 0: PCIe address is 18:00\n" +
				"DMA-BUF is not supported on this GPU\n Couldn't create IB resources\n",
			want: want{
				mem: MemCUDADMABuf, memEvidence: "DMA-BUF is not supported",
				err:      "DMA-BUF is not supported on this GPU; Couldn't create IB resources",
				failKind: "dmabuf", cause: "DMA-BUF is not supported on this GPU", wcStatus: -1,
			},
		},
		{
			name: "a banner with no table and no error is a run that ended early",
			in: "---------------------------------------------------------------------------------------\n" +
				"                    Send BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_2\n",
			want: want{
				test: "Send BW Test", device: "mlx5_2", kind: KindBW,
				err: "output ends before any result row", failKind: "run",
				cause: "output ends before any result row", wcStatus: -1,
				partial: noRows,
			},
		},
		{
			name: "a server-side completion error is attributed to the server",
			in: " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
				" 4096       5000             96.10              96.02                2.930394\n" +
				" Completion with error at server\n Failed status 5: wr_id 2 syndrom 0xf9\n rcnt=17\n",
			want: want{
				unit: UnitGbps, kind: KindBW, rows: 1, msgSize: 4096, peak: 96.10, avg: 96.02,
				err:      "Completion with error at server; Failed status 5: wr_id 2 syndrom 0xf9 (IBV_WC_WR_FLUSH_ERR)",
				failKind: "completion", cause: "Failed status 5: wr_id 2 syndrom 0xf9", side: "server",
				wcStatus: 5, wcName: "IBV_WC_WR_FLUSH_ERR", syndrome: "0xf9",
			},
		},
		{
			name: "an errno text alone is a failure",
			in:   "Couldn't connect to 10.0.0.2:18515\nConnection refused\n",
			want: want{
				err:      "Couldn't connect to 10.0.0.2:18515; Connection refused",
				failKind: "connection", cause: "Couldn't connect to 10.0.0.2:18515", wcStatus: -1,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, tc.want)
		})
	}
}

func TestParseIgnoresIndentation(t *testing.T) {
	path := filepath.Join(corpus, "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	plain := parseFile(t, path)
	indented, err := Parse(strings.NewReader("      " + strings.ReplaceAll(string(raw), "\n", "\n      ")))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain, indented) {
		t.Errorf("indenting every line changed the result:\n%+v\n%+v", plain, indented)
	}
}

func TestParseRejectsOtherText(t *testing.T) {
	for _, in := range []string{"", "\n\n", "hello world\n", "#bytes? no\n"} {
		if r, err := Parse(strings.NewReader(in)); !errors.Is(err, ErrNoOutput) || r != nil {
			t.Errorf("Parse(%q) = %v, %v, want nil, ErrNoOutput", in, r, err)
		}
	}
}

func TestReadErrorsAreWrapped(t *testing.T) {
	boom := errors.New("boom")
	if _, err := Parse(failingReader{boom}); !errors.Is(err, boom) {
		t.Errorf("Parse error = %v, want it to wrap %v", err, boom)
	}
	if _, err := ParseJSON(failingReader{boom}); !errors.Is(err, boom) {
		t.Errorf("ParseJSON error = %v, want it to wrap %v", err, boom)
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestResultJSONViewHasTheCLIFields(t *testing.T) {
	tests := []struct {
		name, file string
		want       map[string]any
		noError    bool
	}{
		{
			name: "the failed host run exports its 64 KB numbers and its error",
			file: "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt",
			want: map[string]any{"bw_peak_gbps": 381.5, "bw_avg_gbps": 381.41, "msg_size": 65536.0, "mem": "host"},
		},
		{
			name:    "the DMA-BUF run exports its 8 MB numbers and no error",
			file:    "gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt",
			want:    map[string]any{"bw_peak_gbps": 140.55, "bw_avg_gbps": 140.4, "msg_size": 8388608.0, "mem": "cuda-dmabuf"},
			noError: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(parseFile(t, filepath.Join(corpus, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if _, has := got["error"]; has == tc.noError {
				t.Errorf("error present = %v, want %v (%v)", has, !tc.noError, got["error"])
			}
			if rows, _ := got["rows"].([]any); len(rows) == 0 {
				t.Error("rows missing from the JSON view")
			}
		})
	}
}

func seeds(f *testing.F, globs ...string) {
	for _, g := range globs {
		files, _ := filepath.Glob(g)
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			for _, seed := range fuzzseed.Ends(b) {
				f.Add(seed)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	seeds(f, filepath.Join(corpus, "*.txt"), "testdata/*.txt")
	f.Add([]byte(" #bytes #iterations BW peak[MB/sec]\n 1 2 -nan\n 3 4 inf\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(strings.NewReader(string(data)))
		if err != nil {
			if r != nil || !errors.Is(err, ErrNoOutput) {
				t.Fatalf("Parse = %v, %v", r, err)
			}
			return
		}
		if r.Failed() != (r.Error != "") || r.Failed() != (r.Failure != nil) {
			t.Fatalf("Failed() = %v, Error %q, Failure %v", r.Failed(), r.Error, r.Failure)
		}
		if r.Partial != (r.PartialReason != "") {
			t.Fatalf("partial %v with reason %q", r.Partial, r.PartialReason)
		}
		// Nothing passes without a row: no row is a failure perftest
		// printed, or partial.
		if len(r.Rows) == 0 && !r.Partial && (r.Failure == nil || len(r.Failure.Lines) == 0) {
			t.Fatalf("no row, not partial, no printed failure: %+v", r)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("marshalling %+v: %v", r, err)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(corpus, "gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Parse(strings.NewReader(string(raw))); err != nil {
			b.Fatal(err)
		}
	}
}

// appendFields splits as strings.Fields does, whatever it appends to.
func FuzzAppendFieldsIsStringsFields(f *testing.F) {
	for _, s := range []string{
		" 65536      5000           140.57             140.34               0.268", "", "  ", "a\u00a0b\u2028c\x85d", "\xff \xfe\tx\v\fy\r",
		"#bytes #iterations", "a  b", "\u3000x\u3000",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.Fields(s)
		for _, dst := range [][]string{nil, {"stale", "fields"}} {
			got := appendFields(dst[:0], s)
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("appendFields(%q) = %q, strings.Fields gives %q", s, got, want)
			}
		}
	})
}
