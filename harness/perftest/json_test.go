package perftest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseJSON(t *testing.T) {
	tests := []struct {
		name, file, in string
		want           want
		unitSource     string
		row            Row // checked when Bytes != 0
	}{
		{
			name: "a current --out_json file of a CUDA write_bw run gives its one row in Gb/s",
			file: "perftest_out-write_bw-cuda-synthetic.json",
			want: want{
				test: "RDMA_Write_BW_Test", device: "mlx5_3", link: "Ethernet", transport: "IB", conn: "RC",
				gid: intp(3), qps: 1, mtu: 4096, mem: MemCUDA, memEvidence: "cuda_device 0",
				unit: UnitGbps, kind: KindBW, rows: 1, msgSize: 8388608, peak: 140.55, avg: 140.40, wcStatus: -1,
			},
			unitSource: "inferred",
		},
		{
			name: "a pre-2024 file that is not JSON is read line by line",
			file: "perftest_out-write_lat-legacy-synthetic.json",
			want: want{
				test: "RDMA_Write_Latency_Test", device: "mlx5_0", link: "IB", transport: "IB", conn: "RC",
				qps: 1, mtu: 4096, kind: KindLat, rows: 1, msgSize: 2, wcStatus: -1,
			},
			row: Row{Bytes: 2, Iterations: 1000, TMin: 0.95, TMax: 3.33, TTypical: 0.98, TAvg: 0.99,
				TStdev: 0.05, P99: 1.18, P999: 3.33},
		},
		{
			name: "a file in MiB/s is recognised from its message rate and converted",
			in: `{"test_info": {"test": "RDMA_Read_BW_Test", "Device": "mlx5_1"},
				"results": {"MsgSize": 65536, "n_iterations": 1000, "BW_peak": 23450.12,
				"BW_average": 23398.77, "MsgRate": 0.374380}}`,
			want: want{
				test: "RDMA_Read_BW_Test", device: "mlx5_1", unit: UnitMiBps, kind: KindBW, rows: 1,
				msgSize: 65536, peak: 23450.12 * 1048576 * 8 / 1e9, avg: 23398.77 * 1048576 * 8 / 1e9, wcStatus: -1,
			},
			unitSource: "inferred",
		},
		{
			name: "--output=bandwidth writes a trailing comma and only bw_avg, assumed to be Gb/s",
			in:   "{\n\"test_info\": {\n\"test\": \"Send_BW_Test\",\n\"Device\": \"mlx5_0\"\n},\n\"results\": {\n\"bw_avg\": 97.250000,\n\n}\n}\n",
			want: want{
				test: "Send_BW_Test", device: "mlx5_0", unit: UnitGbps, kind: KindBW, rows: 1,
				avg: 97.25, wcStatus: -1,
			},
			unitSource: "assumed",
		},
		{
			name: "a QoS file with an unquoted sl key and shell noise before it is still read",
			in: "$ cat perftest_out.json\n{\n\"test_info\": {\n\"test\": \"Send_BW_Test\",\n\"Device\": \"mlx5_0\"\n},\n" +
				"\"results\": {\n\"MsgSize\": 4096,\nsl: 3,\n\"n_iterations\": 5000,\n\"BW_peak\": 96.10,\n" +
				"\"BW_average\": 96.02,\n \"MsgRate\": 2.930394\n}\n}\n",
			want: want{
				test: "Send_BW_Test", device: "mlx5_0", unit: UnitGbps, kind: KindBW, rows: 1,
				msgSize: 4096, peak: 96.10, avg: 96.02, wcStatus: -1,
			},
			unitSource: "inferred",
		},
		{
			name: "a file with test_info and no results is a run that never reported",
			in:   `{"test_info": {"test": "RDMA_Write_BW_Test", "Device": "mlx5_0", "cuda_device": 1}}`,
			want: want{
				test: "RDMA_Write_BW_Test", device: "mlx5_0", kind: KindBW, mem: MemCUDA, memEvidence: "cuda_device 1",
				err: "output ends before any result row", failKind: "run",
				cause: "output ends before any result row", wcStatus: -1,
				partial: "the file holds no results: the run stopped before its first report",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.file != "" {
				b, err := os.ReadFile(filepath.Join("testdata", tc.file))
				if err != nil {
					t.Fatal(err)
				}
				in = string(b)
			}
			r, err := ParseJSON(strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, tc.want)
			if r.UnitSource != tc.unitSource {
				t.Errorf("UnitSource = %q, want %q", r.UnitSource, tc.unitSource)
			}
			if tc.row.Bytes != 0 && r.Rows[0] != tc.row {
				t.Errorf("row = %+v, want %+v", r.Rows[0], tc.row)
			}
		})
	}
}

func TestParseJSONMarksACutFileAsPartial(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "perftest_out-write_bw-cuda-synthetic.json"))
	if err != nil {
		t.Fatal(err)
	}
	data := string(b)
	const cut = "the file ends before its closing brace: the run stopped or the file was cut; a cut results section is not read"
	tests := []struct {
		name    string
		in      string
		rows    int
		partial string
	}{
		{
			// "BW_peak": 14 of 140.55 must not be read as a result.
			name:    "cut inside the peak bandwidth",
			in:      data[:strings.Index(data, `140.55`)+2],
			partial: cut + "; the file holds no results: the run stopped before its first report",
		},
		{
			name: "cut after the results, before the last brace",
			in:   data[:strings.LastIndex(data, "}")],
			rows: 1, partial: cut,
		},
		{name: "the whole file", in: data, rows: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseJSON(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Rows) != tc.rows || r.Partial != (tc.partial != "") || r.PartialReason != tc.partial {
				t.Errorf("%d rows, partial %v %q; want %d rows, %q", len(r.Rows), r.Partial, r.PartialReason, tc.rows, tc.partial)
			}
			if tc.rows == 1 && r.BWPeakGbps != 140.55 {
				t.Errorf("peak %v", r.BWPeakGbps)
			}
		})
	}
}

func TestParseJSONRejectsOtherText(t *testing.T) {
	for _, in := range []string{"", "no braces here", "{}", `{"foo": {"bar": 1}}`} {
		if r, err := ParseJSON(strings.NewReader(in)); !errors.Is(err, ErrNoOutput) || r != nil {
			t.Errorf("ParseJSON(%q) = %v, %v, want nil, ErrNoOutput", in, r, err)
		}
	}
}

func FuzzParseJSON(f *testing.F) {
	seeds(f, "testdata/*.json")
	f.Add([]byte(`{"results": {"MsgSize": 1e999, "BW_average": -nan}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseJSON(strings.NewReader(string(data)))
		if err != nil {
			if r != nil || !errors.Is(err, ErrNoOutput) {
				t.Fatalf("ParseJSON = %v, %v", r, err)
			}
			return
		}
		if r.Failed() != (r.Error != "") {
			t.Fatalf("Failed() = %v, Error %q", r.Failed(), r.Error)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("marshalling %+v: %v", r, err)
		}
	})
}

func BenchmarkParseJSON(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "perftest_out-write_bw-cuda-synthetic.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := ParseJSON(strings.NewReader(string(raw))); err != nil {
			b.Fatal(err)
		}
	}
}
