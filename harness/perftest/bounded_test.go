package perftest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// The caps that keep Parse's and ParseJSON's memory bounded on hostile
// input (BenchmarkHostileInput in cmd/gdrcheck measures them on 200 MB):
// a capped input is partial or an error, with a reason, never whole.

// insertAfter puts extra after the first line of data that holds at.
func insertAfter(t *testing.T, data, at, extra string) string {
	t.Helper()
	i := strings.Index(data, at)
	if i < 0 {
		t.Fatalf("no %q", at)
	}
	i += strings.IndexByte(data[i:], '\n') + 1
	return data[:i] + extra + data[i:]
}

func TestParseSkipsALineOverTheLimitAndSaysWhich(t *testing.T) {
	data, _ := recording(t, dmabufRun)
	whole, err := Parse(strings.NewReader(data))
	if err != nil || whole.Partial {
		t.Fatalf("the recorded run: %v, partial %q", err, whole.PartialReason)
	}
	garbage := strings.Repeat("\x00", 2<<20) + "\n"
	r, err := Parse(strings.NewReader(insertAfter(t, data, "creating CUDA Ctx", garbage)))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Partial || r.PartialReason != "1 line longer than 1 MiB was skipped (line 10)" || len(r.Rows) != len(whole.Rows) {
		t.Errorf("partial %v %q, %d rows; want the skipped line 10 named and %d rows", r.Partial, r.PartialReason, len(r.Rows), len(whole.Rows))
	}
	r, err = Parse(strings.NewReader(data + strings.Repeat("-", 3<<20)))
	if err != nil || !r.Partial || !strings.Contains(r.PartialReason, "the output ends mid-line") {
		t.Errorf("a cut 3 MiB last line: %v, partial %q; want it cut, not read", err, r.PartialReason)
	}
}

func TestParseKeepsAtMostMaxRowsAndMaxFailureLines(t *testing.T) {
	var b strings.Builder
	b.WriteString(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n")
	for i := range maxRows + 7 {
		fmt.Fprintf(&b, " %d 5000 1.0 1.0 1.0\n", i+1)
	}
	b.WriteString(strings.Repeat("-", 87) + "\n")
	r, err := Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("more than %d result rows: the 7 past them (from line %d) were not kept", maxRows, maxRows+2)
	if len(r.Rows) != maxRows || !r.Partial || r.PartialReason != want {
		t.Errorf("%d rows, partial %v %q; want %d and %q", len(r.Rows), r.Partial, r.PartialReason, maxRows, want)
	}

	var f strings.Builder
	for i := range 100 {
		fmt.Fprintf(&f, " Failed status 12: wr_id %d syndrom 0x81 %s\n", i, strings.Repeat("x", 8<<10))
	}
	r, err = Parse(strings.NewReader(f.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Failed() || r.Failure.Kind != "completion" || len(r.Failure.Lines) != maxFailureLines || r.Failure.LinesOmitted != 100-maxFailureLines {
		t.Fatalf("100 failure lines: failed %v, %+v", r.Failed(), r.Failure)
	}
	for _, l := range r.Failure.Lines {
		if len(l) > maxText+len("…") {
			t.Fatalf("a failure line is kept as %d bytes, want at most %d", len(l), maxText)
		}
	}
}

func TestParseKeepsAtMostMaxSettingsClipped(t *testing.T) {
	var b strings.Builder
	b.WriteString(" Device         : " + strings.Repeat("d", 1000) + "\n")
	for i := range maxSettings + 50 {
		fmt.Fprintf(&b, " Mtu : 4096[B]  key%d : %d\n", i, i)
	}
	r, err := Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Settings) != maxSettings || r.MTU != 4096 || len(r.Device) != maxField+len("…") {
		t.Errorf("%d settings, MTU %d, device of %d bytes; want %d, 4096, %d", len(r.Settings), r.MTU, len(r.Device), maxSettings, maxField)
	}
}

func TestParseJSONRefusesAFileOverTheLimit(t *testing.T) {
	// About the size of a real report: one row per report.
	doc := "{\n\"test_info\": {\n\"test\": \"RDMA_Write_BW_Test\",\n\"Dual_port\": \"OFF\",\n\"Device\": \"mlx5_3\",\n" +
		"\"Number_of_qps\": 1,\n\"Transport_type\": \"IB\",\n\"Connection_type\": \"RC\",\n\"Using_SRQ\": \"OFF\",\n\"Mtu\": 4096,\n" +
		"\"Link_type\": \"Ethernet\",\n\"GID_index\": 3\n},\n\"results\": {\n\"MsgSize\": 65536,\n\"n_iterations\": 5000,\n" +
		"\"BW_peak\": 381.50,\n\"BW_average\": 381.41,\n\"MsgRate\": 0.727473\n}\n}\n"
	in := strings.Repeat(doc, (1<<20)/len(doc))
	r, err := ParseJSON(strings.NewReader(in))
	if err != nil {
		t.Fatalf("%d bytes of reports: %v", len(in), err)
	}
	if r.Partial || len(r.Rows) != (1<<20)/len(doc) {
		t.Fatalf("%d bytes of reports: %d rows, partial %q", len(in), len(r.Rows), r.PartialReason)
	}
	_, err = ParseJSON(strings.NewReader(in + doc))
	var tl *bounded.TooLargeError
	if !errors.As(err, &tl) || err.Error() != "reading perftest JSON: larger than the 1 MiB limit on a perftest JSON file: perftest --out_json writes one report of under 1 KB per run" {
		t.Errorf("%d bytes: %v", len(in)+len(doc), err)
	}
	if _, err := ParseJSON(bytes.NewReader(append([]byte(`{"test_info": `), bytes.Repeat([]byte("["), 2<<20)...))); !errors.Is(err, bounded.ErrTooLarge) {
		t.Errorf("2 MiB of nesting: %v", err)
	}
}
