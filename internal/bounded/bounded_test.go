package bounded

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"unsafe"
)

var testLimit = Limit{Bytes: 1 << 10, What: "a test value", Why: "tests are small"}

func TestLinesSkipsLongLinesNamingTheFirstAndKeepsTheCutTail(t *testing.T) {
	in := "short\r\n" + strings.Repeat("x", 100) + "\nok\n" + strings.Repeat("y", 3000) + "\nlast"
	l := NewLines(strings.NewReader(in), 50)
	var got []string
	var nums []int
	for {
		b, ok := l.Next()
		if !ok {
			break
		}
		got, nums = append(got, string(b)), append(nums, l.N())
	}
	if strings.Join(got, "|") != "short|ok" || nums[0] != 1 || nums[1] != 3 {
		t.Errorf("lines %q at %v, want short at 1 and ok at 3", got, nums)
	}
	if s := l.Skipped(); s != "2 lines longer than 50 B were skipped (the first is line 2)" {
		t.Errorf("Skipped() = %q", s)
	}
	if n, tail, cut := l.Cut(); !cut || n != 5 || string(tail) != "last" {
		t.Errorf("Cut() = %d %q %v, want line 5 \"last\"", n, tail, cut)
	}
	if l.Err() != nil {
		t.Error(l.Err())
	}
}

func TestLinesCutTailOverTheLimitIsNotKept(t *testing.T) {
	l := NewLines(strings.NewReader("a\n"+strings.Repeat("z", 200<<10)), 1<<10)
	for _, ok := l.Next(); ok; _, ok = l.Next() {
	}
	if n, tail, cut := l.Cut(); !cut || n != 2 || tail != nil {
		t.Errorf("Cut() = %d, %d bytes, %v; want line 2, no text", n, len(tail), cut)
	}
	if l.Skipped() != "" {
		t.Errorf("a cut line is not a skipped one: %q", l.Skipped())
	}
}

func TestDecoderRefusesAValueOverTheLimitAndNamesWhereItIs(t *testing.T) {
	big := `{"a": [1, 2], "b": "` + strings.Repeat("s", 5000) + `"}`
	dec := NewDecoder(strings.NewReader(big), testLimit)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("Token() = %v, %v", tok, err)
	}
	var arr []int
	if key, err := dec.Token(); err != nil || key != "a" {
		t.Fatalf("key %q, %v", key, err)
	}
	if err := dec.Decode(&arr); err != nil || len(arr) != 2 {
		t.Fatalf("a = %v, %v", arr, err)
	}
	if key, err := dec.Token(); err != nil || key != "b" {
		t.Fatalf("key %q, %v", key, err)
	}
	var s string
	err := dec.Decode(&s)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decode of a 5000-byte string with a 1 KiB limit: %v", err)
	}
	if want := "after byte 17: larger than the 1 KiB limit on a test value: tests are small"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestDecoderReadsAStreamLargerThanTheLimitValueByValue(t *testing.T) {
	var in bytes.Buffer
	in.WriteString("[")
	for i := range 1000 {
		if i > 0 {
			in.WriteString(",\n")
		}
		in.WriteString(`{"x": "` + strings.Repeat("v", 900) + `"}`)
	}
	in.WriteString("]")
	dec := NewDecoder(&in, testLimit)
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for dec.More() {
		var v struct{ X string }
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("value %d: %v", n, err)
		}
		n++
	}
	if _, err := dec.Token(); err != nil || n != 1000 {
		t.Errorf("%d values, closing: %v", n, err)
	}
}

func TestDecoderRefusesDeepNestingWithinTheLimit(t *testing.T) {
	dec := NewDecoder(strings.NewReader(strings.Repeat("[", 1<<20)), testLimit)
	var v any
	if err := dec.Decode(&v); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Decode of 1 MiB of '[': %v, want the limit", err)
	}
}

func TestReadFileRefusesALargeFileUnreadNamingIt(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(p, make([]byte, 3<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p, testLimit)
	var pe *fs.PathError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &pe) || pe.Path != p {
		t.Fatalf("ReadFile of 3 KiB with a 1 KiB limit: %v", err)
	}
	if want := "read " + p + ": 3 KiB, larger than the 1 KiB limit on a test value: tests are small"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if err := os.WriteFile(p, []byte("fits"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, testLimit); err != nil || string(b) != "fits" {
		t.Errorf("ReadFile of 4 bytes: %q, %v", b, err)
	}
	fsys := fstest.MapFS{"a.yaml": {Data: make([]byte, 1025)}}
	if _, err := ReadFileFS(fsys, "a.yaml", testLimit); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFileFS of 1025 bytes: %v", err)
	}
}

func TestReadAllStopsAStreamPastTheLimit(t *testing.T) {
	r := io.MultiReader(strings.NewReader(strings.Repeat("a", 1024)), strings.NewReader("b"), endless{})
	if _, err := ReadAll(r, testLimit); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadAll of an endless stream: %v", err)
	}
	if b, err := ReadAll(strings.NewReader(strings.Repeat("a", 1024)), testLimit); err != nil || len(b) != 1024 {
		t.Errorf("ReadAll of exactly the limit: %d bytes, %v", len(b), err)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

func TestClipCutsOnARuneBoundaryAndCopies(t *testing.T) {
	if got := Clip([]byte("héllo"), 2); got != "h…" {
		t.Errorf("Clip(héllo, 2) = %q, want h…", got)
	}
	if got := Clip([]byte("héllo"), 3); got != "hé…" {
		t.Errorf("Clip(héllo, 3) = %q, want hé…", got)
	}
	line := strings.Repeat("x", 100)
	if got := ClipString(line[:10], 20); got != line[:10] || unsafe.StringData(got) == unsafe.StringData(line) {
		t.Errorf("ClipString = %q", got)
	}
	if got := ClipString(line, 4); got != "xxxx…" {
		t.Errorf("ClipString(100 x, 4) = %q", got)
	}
}

func TestSizeWritesRoundAndFractionalSizes(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 1 << 20: "1 MiB", 200e6: "190.7 MiB", 8 << 20: "8 MiB", 3 << 30: "3 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
