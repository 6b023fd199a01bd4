// Package ttar reads and writes text archives in the format of ideaship's
// ttar, which prometheus/procfs and node_exporter use for sysfs fixtures: a
// plain-text, diffable archive that keeps directories, file modes and
// symlinks (sysfs topology is symlinks). NUL bytes are written as NULLBYTE,
// and a last line without a newline ends in EOF.
package ttar

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const separator = "# ttar - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -"

// Write archives the tree under dir; names in the archive are relative to
// dir, in sorted order so the archive diffs cleanly.
func Write(w io.Writer, dir string) error {
	bw := bufio.NewWriter(w)
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("walking %q: %w", dir, err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(bw, "Path: %s\nSymlinkTo: %s\n", rel, t)
		case fi.IsDir():
			fmt.Fprintf(bw, "Directory: %s\nMode: %o\n", rel, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(bw, "Path: %s\n", rel)
			writeContent(bw, b)
			fmt.Fprintf(bw, "Mode: %o\n", fi.Mode().Perm())
		default:
			continue // devices, sockets: not part of a fixture
		}
		fmt.Fprintln(bw, separator)
	}
	return bw.Flush()
}

func writeContent(w *bufio.Writer, b []byte) {
	if len(b) == 0 {
		fmt.Fprintln(w, "Lines: 0")
		return
	}
	s := strings.ReplaceAll(string(b), "\x00", "NULLBYTE")
	trailing := strings.HasSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	if !trailing {
		lines[len(lines)-1] += "EOF"
	}
	fmt.Fprintf(w, "Lines: %d\n", len(lines))
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// Extract unpacks an archive into dir, refusing names that climb out of it.
// name is used in error messages, which give the line.
func Extract(r io.Reader, name, dir string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
	}
	var path string
	for {
		l, ok := next()
		if !ok {
			break
		}
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		case strings.HasPrefix(l, "Directory: "):
			p, err := safeJoin(dir, strings.TrimPrefix(l, "Directory: "))
			if err != nil {
				return fail("%v", err)
			}
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fail("%v", err)
			}
			path = p
		case strings.HasPrefix(l, "Path: "):
			p, err := safeJoin(dir, strings.TrimPrefix(l, "Path: "))
			if err != nil {
				return fail("%v", err)
			}
			path = p
		case strings.HasPrefix(l, "SymlinkTo: "):
			if path == "" {
				return fail("SymlinkTo without Path")
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fail("%v", err)
			}
			os.Remove(path)
			if err := os.Symlink(strings.TrimPrefix(l, "SymlinkTo: "), path); err != nil {
				return fail("%v", err)
			}
		case strings.HasPrefix(l, "Lines: "):
			n, err := strconv.Atoi(strings.TrimPrefix(l, "Lines: "))
			if err != nil || n < 0 {
				return fail("bad line count %q", l)
			}
			var buf bytes.Buffer
			for i := 0; i < n; i++ {
				c, ok := next()
				if !ok {
					return fail("archive ends inside %q", path)
				}
				if i == n-1 && strings.HasSuffix(c, "EOF") {
					buf.WriteString(strings.TrimSuffix(c, "EOF"))
				} else {
					buf.WriteString(c)
					buf.WriteByte('\n')
				}
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fail("%v", err)
			}
			b := bytes.ReplaceAll(buf.Bytes(), []byte("NULLBYTE"), []byte{0})
			if err := os.WriteFile(path, b, 0o644); err != nil {
				return fail("%v", err)
			}
		case strings.HasPrefix(l, "Mode: "):
			m, err := strconv.ParseUint(strings.TrimPrefix(l, "Mode: "), 8, 32)
			if err != nil {
				return fail("bad mode %q", l)
			}
			// Keep directories traversable and files readable by the
			// owner whatever was recorded, so tests can clean up.
			mode := fs.FileMode(m)
			if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
				mode |= 0o700
			}
			if err := os.Chmod(path, mode); err != nil {
				return fail("%v", err)
			}
		default:
			return fail("unexpected line %q", l)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func safeJoin(dir, rel string) (string, error) {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if p != dir && !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
		return "", fmt.Errorf("name %q leaves the archive", rel)
	}
	return p, nil
}

// ExtractFile unpacks the archive at path into dir.
func ExtractFile(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return Extract(f, path, dir)
}
