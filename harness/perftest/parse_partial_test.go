package perftest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	dmabufRun = "gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt"
	failedRun = "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt"
)

// recording returns a corpus file and a function that cuts it right after
// the first s at or after the n-th line (1-based), keeping s.
func recording(t *testing.T, file string) (string, func(line int, s string) string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus, file))
	if err != nil {
		t.Fatal(err)
	}
	data := string(b)
	return data, func(line int, s string) string {
		t.Helper()
		off := 0
		for i := 1; i < line; i++ {
			off += strings.IndexByte(data[off:], '\n') + 1
		}
		i := strings.Index(data[off:], s)
		if i < 0 {
			t.Fatalf("no %q from line %d of %s", s, line, file)
		}
		return data[:off+i+len(s)]
	}
}

func TestParseMarksARunCutShortAsPartialNamingTheLastSize(t *testing.T) {
	const open = "without perftest's closing dashed line: the run stopped or the output was cut"
	_, cut := recording(t, dmabufRun)
	tests := []struct {
		name    string
		in      string
		rows    int
		msgSize int64
		partial string
	}{
		{
			// The 2 KiB row read as far as its peak is not a result.
			name: "cut in the 2 KiB row after its peak",
			in:   cut(48, "52.45"), rows: 10, msgSize: 1024,
			partial: "the output ends mid-line after the 1 KiB row; the cut line (line 48) was not read; the table stops after the 1 KiB row " + open,
		},
		{
			name: "cut after the whole 2 KiB row",
			in:   cut(48, "3.177910\n"), rows: 11, msgSize: 2048,
			partial: "the table stops after the 2 KiB row " + open,
		},
		{
			name: "cut after the last row, before the closing line",
			in:   cut(60, "0.002092\n"), rows: 23, msgSize: 8388608,
			partial: "the table stops after the 8 MiB row " + open,
		},
		{
			name:    "cut after the table header",
			in:      cut(37, "MsgRate[Mpps]\n"),
			partial: "the table stops after its header without a row or perftest's closing dashed line: the run stopped or the output was cut",
		},
		{
			// A dashed line cut short is still a dashed line.
			name: "cut inside the closing dashed line",
			in:   cut(61, "-------------------------"), rows: 23, msgSize: 8388608,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Rows) != tc.rows || r.MsgSize != tc.msgSize {
				t.Errorf("%d rows, headline at %d B; want %d rows at %d B", len(r.Rows), r.MsgSize, tc.rows, tc.msgSize)
			}
			if r.Partial != (tc.partial != "") || r.PartialReason != tc.partial {
				t.Errorf("partial %v %q, want %q", r.Partial, r.PartialReason, tc.partial)
			}
			// A table that stops is not a failure perftest printed.
			if wantErr := tc.rows == 0; r.Failed() != wantErr {
				t.Errorf("Failed() = %v (%q)", r.Failed(), r.Error)
			}
		})
	}
}

func TestParseKeepsAPrintedFailureInACutOutput(t *testing.T) {
	_, cut := recording(t, failedRun)
	r, err := Parse(strings.NewReader(cut(42, "Completion with error at client\n")))
	if err != nil {
		t.Fatal(err)
	}
	// The failure explains why the table stops: not partial.
	if r.Partial || r.Failure == nil || r.Failure.Kind != "completion" || r.Failure.Line != 42 || len(r.Rows) != 16 {
		t.Errorf("partial %v %q, failure %+v, %d rows", r.Partial, r.PartialReason, r.Failure, len(r.Rows))
	}
}

// cutsOf names offsets that cut data inside a line that is not a dashed
// line: at tenths of its length and in the middle of every row.
func cutsOf(data string) map[string]int {
	cuts := map[string]int{}
	lineAt := func(off int) string {
		start := strings.LastIndexByte(data[:off], '\n') + 1
		end := strings.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		}
		return strings.TrimSpace(data[start : off+end])
	}
	add := func(name string, off int) {
		if off <= 0 || off >= len(data) || data[off-1] == '\n' || data[off] == '\n' {
			return
		}
		if l := lineAt(off); l == "" || isSeparator(l) || strings.TrimSpace(data[strings.LastIndexByte(data[:off], '\n')+1:off]) == "" {
			return // a dashed line, or nothing of the line before the cut
		}
		cuts[name] = off
	}
	for i := 1; i < 10; i++ {
		add(fmt.Sprintf("at %d0%%", i), len(data)*i/10)
	}
	start := 0
	for line := range strings.Lines(data) {
		if f := strings.Fields(line); len(f) >= 5 && f[0] != "#bytes" {
			add("in the row "+f[0], start+len(line)/2)
		}
		start += len(line)
	}
	return cuts
}

func TestParseNeverReadsAnOutputCutMidLineAsWhole(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpus, "*.txt"))
	synth, _ := filepath.Glob("testdata/*.txt")
	partials := 0
	for _, file := range append(files, synth...) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for name, off := range cutsOf(string(b)) {
			r, err := Parse(strings.NewReader(string(b[:off])))
			switch {
			case errors.Is(err, ErrNoOutput):
			case err != nil:
				t.Errorf("%s cut %s: %v", filepath.Base(file), name, err)
			case !r.Partial || !strings.Contains(r.PartialReason, "the output ends mid-line"):
				t.Errorf("%s cut %s (byte %d): partial %v %q", filepath.Base(file), name, off, r.Partial, r.PartialReason)
			default:
				partials++
			}
		}
	}
	if partials < 40 {
		t.Errorf("only %d cuts gave a partial result", partials)
	}
}

func TestParseRejectsOutputsOfOtherTools(t *testing.T) {
	var files []string
	for _, g := range []string{"../../fixtures/corpus/nccl-debug/*", "../../fixtures/corpus/nccl-tests/*", "../../fixtures/nccl-tests/*.txt"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("only %d files of other tools", len(files))
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := Parse(strings.NewReader(string(b))); !errors.Is(err, ErrNoOutput) {
			t.Errorf("%s: %+v, %v; want ErrNoOutput", filepath.Base(file), r, err)
		}
	}
	// An error line alone does not make perftest output; one naming
	// perftest's things does.
	for in, perftest := range map[string]bool{
		"hello\nfailed to register memory\n":                      false,
		"Error: no such file or directory\n":                      false,
		"Couldn't allocate MR with error=12\n":                    true,
		" Failed to complete run_iter_bw function successfully\n": true,
	} {
		_, err := Parse(strings.NewReader(in))
		if errors.Is(err, ErrNoOutput) == perftest {
			t.Errorf("Parse(%q): %v; perftest output: %v", in, err, perftest)
		}
	}
}
