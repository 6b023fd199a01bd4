// Package bounded caps what gdrcheck reads from the files users hand it
// (logs, tool outputs, recordings, baselines, results.json), so that a
// huge or hostile file is refused, or read in part with a reason, and is
// never held whole in memory: files are read up to a size, lines up to a
// length, JSON one value of bounded size at a time, and what a parser keeps
// of a line is clipped.
package bounded

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"
)

// ErrTooLarge is wrapped by every error about an input over its limit.
var ErrTooLarge = errors.New("input too large")

// Limit is a cap on one input or one part of it.
type Limit struct {
	Bytes int64
	What  string // what it caps: "a baseline file", "one node of a results.json"
	Why   string // why that is enough: "a baseline is a few kilobytes"
}

// TooLargeError is an input, or a value in it, over its Limit.
type TooLargeError struct {
	Limit
	Size   int64 // the size found where known (a file's), else 0
	Offset int64 // in a stream, the end of the token before the value; -1 for a whole file
}

func (e *TooLargeError) Error() string {
	var b strings.Builder
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "after byte %d: ", e.Offset)
	}
	if e.Size > 0 {
		fmt.Fprintf(&b, "%s, ", Size(e.Size))
	}
	fmt.Fprintf(&b, "larger than the %s limit on %s", Size(e.Bytes), e.What)
	if e.Why != "" {
		b.WriteString(": " + e.Why)
	}
	return b.String()
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// Size writes a byte count for people: "1 MiB", "190.7 MiB", "512 B".
func Size(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift {
			if n%(1<<u.shift) == 0 {
				return fmt.Sprintf("%d %s", n>>u.shift, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(int64(1)<<u.shift), u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// ReadFile reads a file of at most lim.Bytes. A larger one is refused
// before it is read when its size is known (a regular file), else once
// lim.Bytes+1 bytes are read (a pipe). Errors are *fs.PathError, as os's
// are, naming the file; one over the limit wraps a *TooLargeError.
func ReadFile(path string, lim Limit) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readAll(f, lim)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// ReadFileFS is ReadFile for a file of fsys, whose errors do not name
// the file: the caller knows how to.
func ReadFileFS(fsys fs.FS, name string, lim Limit) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, lim)
}

func readAll(f fs.File, lim Limit) ([]byte, error) {
	size := int64(0)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
		if size > lim.Bytes {
			return nil, &TooLargeError{Limit: lim, Size: size, Offset: -1}
		}
	}
	return readUpTo(f, size, lim)
}

// ReadAll reads r to its end, refusing it with a *TooLargeError once it
// has given more than lim.Bytes.
func ReadAll(r io.Reader, lim Limit) ([]byte, error) { return readUpTo(r, 512, lim) }

// readUpTo reads r whole, expecting about size bytes, up to lim.Bytes.
func readUpTo(r io.Reader, size int64, lim Limit) ([]byte, error) {
	b := make([]byte, 0, size+1)
	b, err := readInto(b, io.LimitReader(r, lim.Bytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > lim.Bytes {
		return nil, &TooLargeError{Limit: lim, Offset: -1}
	}
	return b, nil
}

// readInto is io.ReadAll appending to b, whose capacity is the expected
// size, so that a file is read into one buffer.
func readInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Clip copies at most n bytes of b into a string, ending a cut one with
// "…" on a rune boundary, so that what a parser keeps of a line pins
// neither the line nor more than n bytes.
func Clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:runeStart(b, n)]) + "…"
}

// ClipString is Clip for a string: the result never shares s's memory.
func ClipString(s string, n int) string {
	if len(s) <= n {
		return strings.Clone(s)
	}
	return Clip([]byte(s[:n+1]), n)
}

// runeStart backs n off to the start of the rune it falls in.
func runeStart(b []byte, n int) int {
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return n
}
