package nccl

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

func TestParseTestsJSONReadsEveryRecordedJSONFile(t *testing.T) {
	tests := []struct {
		name string
		file string
		want testsWant
	}{
		{
			name: "the -J file of the direct all_reduce has 29 rows and 341 GB/s at 2 GiB",
			file: recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.json",
			want: testsWant{
				collective: "all_reduce_perf", nccl: recordedNCCL,
				// -g 2 in one process: nccl-tests parses only the first rank of its device line.
				devices: 1, firstDevice: &h200vm, rows: 29,
				busbw: map[int64]bw{
					8:          {0.000311, 0.0003},
					1048576:    {38.577607, 31.185437},
					2147483648: {341.413463, 341.606093},
				},
				wrongAt:     map[int64][2]*int64{2147483648: {ptr[int64](0), ptr[int64](0)}},
				avg:         ptr(93.843159),
				outOfBounds: ptr(0),
				peak:        341.606093, peakSize: 2147483648,
				firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
			},
		},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTestsJSON(openFixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			checkTests(t, got, tt.want)
		})
	}
	for _, f := range fixtureFiles(t, ".json") {
		if !covered[f] {
			t.Errorf("fixture %s has no ParseTestsJSON case", f)
		}
	}
}

func TestJSONAndTextOfOneRunAgreeRowByRow(t *testing.T) {
	text, err := ParseTests(openFixture(t, recorded+"all_reduce_perf-h200x2-nv18-direct-p2p.txt"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := ParseTestsJSON(openFixture(t, recorded+"all_reduce_perf-h200x2-nv18-direct-p2p.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(text.Rows) != len(js.Rows) {
		t.Fatalf("text has %d rows, JSON %d", len(text.Rows), len(js.Rows))
	}
	// The text rounds to 2 decimals (time to 2 significant places above 1 ms).
	within := func(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
	for i, tr := range text.Rows {
		jr := js.Rows[i]
		if tr.Size != jr.Size || tr.Count != jr.Count || tr.Type != jr.Type || tr.RedOp != jr.RedOp || tr.Root != jr.Root || tr.Wrong != jr.Wrong ||
			!within(tr.BusBWOOP, jr.BusBWOOP, 0.005) || !within(tr.BusBWIP, jr.BusBWIP, 0.005) ||
			!within(tr.TimeOOP, jr.TimeOOP, 0.05) || !within(tr.TimeIP, jr.TimeIP, 0.05) {
			t.Errorf("row %d: text %+v, JSON %+v", i, tr, jr)
		}
	}
	if !within(*text.AvgBusBW, *js.AvgBusBW, 0.0001) {
		t.Errorf("avg busbw: text %v, JSON %v", *text.AvgBusBW, *js.AvgBusBW)
	}
}

func TestParseTestsJSONReadsNullsAndRootsAsNCCLTestsWritesThem(t *testing.T) {
	in := `{"version":3,"args":["./build/sendrecv_perf","-J","x.json"],"nccl_version":21805,
"results":[
 {"size":1024,"count":256,"type":"float","redop":"sum","root":"     0",
  "out_of_place":null,
  "in_place":{"cpu_time":20.5,"alg_bw":0.05,"bus_bw":0.05,"nwrong":null}},
 {"size":2048,"count":512,"type":"float","redop":"sum","root":3,
  "out_of_place":{"time":19.5,"alg_bw":0.1,"bus_bw":0.1,"nwrong":2},
  "in_place":{"time":19.6,"alg_bw":0.1,"bus_bw":0.1,"nwrong":1}}],
"errors":["NCCL failure: remote process exited"]}`
	got, err := ParseTestsJSON(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Size: 1024, Count: 256, Type: "float", RedOp: "sum", Root: 0, TimeIP: 20.5, AlgBWIP: 0.05, BusBWIP: 0.05},
		{Size: 2048, Count: 512, Type: "float", RedOp: "sum", Root: 3,
			TimeOOP: 19.5, AlgBWOOP: 0.1, BusBWOOP: 0.1, WrongOOP: ptr[int64](2),
			TimeIP: 19.6, AlgBWIP: 0.1, BusBWIP: 0.1, WrongIP: ptr[int64](1), Wrong: 3},
	}
	if d := diff(want, got.Rows); d != "" {
		t.Errorf("rows %s", d)
	}
	if got.Collective != "sendrecv_perf" || got.NCCLVersion != "2.18.5" || got.AvgBusBW != nil || got.OutOfBounds != nil {
		t.Errorf("collective %q, NCCL %q, avg %v, oob %v", got.Collective, got.NCCLVersion, got.AvgBusBW, got.OutOfBounds)
	}
	if d := diff([]Failure{{Kind: "error", Message: "NCCL failure: remote process exited"}}, got.Failures); d != "" {
		t.Errorf("failures %s", d)
	}
}

func TestParseTestsJSONRejectsBrokenAndForeignDocuments(t *testing.T) {
	for _, in := range []string{"", "{", "[]", `{"hello":1}`, `{"hello":`, "\x00\xff{", `{"args":"x"}`} {
		if _, err := ParseTestsJSON(strings.NewReader(in)); !errors.Is(err, ErrNoData) {
			t.Errorf("ParseTestsJSON(%q): %v, want ErrNoData", in, err)
		}
	}
	if _, err := ParseTestsJSON(strings.NewReader(`{"results":[{"root":"x"}]}`)); err == nil || errors.Is(err, ErrNoData) {
		t.Errorf("ParseTestsJSON with a root that is no number: %v, want an error about the root", err)
	}
}

func TestParseTestsJSONKeepsTheRowsBeforeACut(t *testing.T) {
	data, err := os.ReadFile(recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.json")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) int {
		i := strings.Index(string(data), s)
		if i < 0 {
			t.Fatalf("no %q in the JSON fixture", s)
		}
		return i
	}
	tests := []struct {
		name   string
		in     []byte
		rows   int
		reason string
	}{
		{
			name: "cut inside the row of 2 KiB",
			in:   data[:at(`{"size":2048,`)+20],
			rows: 8, reason: "the JSON document stops or is damaged after 8 results (the last at 1 KiB): unexpected EOF",
		},
		{
			name: "cut after the last row",
			in:   data[:at(`],"out_of_bounds"`)+1],
			rows: 29, reason: "the JSON document stops or is damaged after 29 results (the last at 2 GiB): EOF",
		},
		{
			name: "garbage where the average should be",
			in:   append(bytes.Clone(data[:at(`"average_bus_bandwidth"`)]), "\x00\x01garbage"...),
			rows: 29, reason: "the JSON document stops or is damaged after 29 results (the last at 2 GiB): invalid character '\\x00' looking for beginning of object key string",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTestsJSON(bytes.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Rows) != tt.rows || !got.Partial || got.PartialReason != tt.reason || got.Collective != "all_reduce_perf" {
				t.Errorf("%d rows, collective %q, partial %v %q; want %d rows, %q", len(got.Rows), got.Collective, got.Partial, got.PartialReason, tt.rows, tt.reason)
			}
		})
	}
	whole, err := ParseTestsJSON(bytes.NewReader(data))
	if err != nil || whole.Partial {
		t.Errorf("the whole file: %v, partial %q", err, whole.PartialReason)
	}
}

func FuzzParseTestsJSON(f *testing.F) {
	addFixtureSeeds(f)
	f.Add(`{"results":[{"size":1,"root":"  -1","out_of_place":{"nwrong":null}}]}`)
	f.Add(`{"args":["x"],"results":null,"RESULTS":[{}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseTestsJSON(strings.NewReader(in))
		if err != nil {
			return
		}
		if got.Partial != (got.PartialReason != "") {
			t.Errorf("partial %v with reason %q", got.Partial, got.PartialReason)
		}
		if _, err := json.Marshal(got); err != nil {
			t.Errorf("result does not marshal: %v", err)
		}
		got.PeakBusBW()
		got.Failed()
	})
}
