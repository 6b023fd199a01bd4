package bounded

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderGivesAnInputOfExactlyItsCapWhole(t *testing.T) {
	in := strings.Repeat("x", 1<<10)
	b, err := io.ReadAll(NewReader(context.Background(), strings.NewReader(in), testLimit))
	if err != nil || len(b) != len(in) {
		t.Fatalf("read %d bytes, %v; want all %d and the end", len(b), err, len(in))
	}
}

func TestReaderStopsOneBytePastItsCapNamingIt(t *testing.T) {
	r := NewReader(context.Background(), strings.NewReader(strings.Repeat("x", 1<<10+1)), testLimit)
	b, err := io.ReadAll(r)
	var stop *StopError
	var tl *TooLargeError
	if len(b) != 1<<10 || !errors.As(err, &stop) || !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("read %d bytes, %v; want 1024 and a stop at the cap", len(b), err)
	}
	if stop.Read != 1<<10 || r.Stopped() == nil || !strings.Contains(err.Error(), "1 KiB limit on a test value") {
		t.Errorf("stop %+v: %v", stop, err)
	}
}

func TestReaderEndsABlockedReadWhenItsContextIsCancelled(t *testing.T) {
	pr, pw := io.Pipe() // nothing is ever written: a read blocks for ever
	defer pw.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	r := NewReader(ctx, pr, Limit{Bytes: MaxStream, What: "a pipe"})
	done := make(chan error)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	cancel(errors.New("interrupted by SIGINT"))
	err := <-done
	var stop *StopError
	if !errors.As(err, &stop) || stop.Read != 0 || !strings.Contains(err.Error(), "interrupted by SIGINT") {
		t.Fatalf("%v; want a stop naming the cause", err)
	}
}

func TestLinesEndAtAStopAndSayWhy(t *testing.T) {
	in := "one\ntwo\nthree-is-cut-by-the-cap"
	l := NewLines(NewReader(context.Background(), strings.NewReader(in), Limit{Bytes: int64(len("one\ntwo\nthree")), What: "a test input"}), MaxLine)
	var got []string
	for {
		b, ok := l.Next()
		if !ok {
			break
		}
		got = append(got, string(b))
	}
	if strings.Join(got, "|") != "one|two" || l.Err() != nil {
		t.Fatalf("lines %q, error %v; want one|two and no read error", got, l.Err())
	}
	if err := l.Stopped(); err == nil || !strings.Contains(err.Error(), "limit on a test input") {
		t.Errorf("Stopped() = %v; want the cap", err)
	}
	if _, _, cut := l.Cut(); cut {
		t.Error("a stop is reported as a cut too")
	}
}
