// Package ttar reads and writes text archives in the format of ideaship's
// ttar, which prometheus/procfs and node_exporter use for sysfs fixtures: a
// plain-text, diffable archive that keeps directories, file modes and
// symlinks (sysfs topology is symlinks). NUL bytes are written as NULLBYTE,
// and a last line without a newline ends in EOF.
package ttar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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

// Extract unpacks an archive into dir; name is used in error messages, which
// give the line. The archive is untrusted: gdrcheck unpacks recordings
// other people made, as root. So every directory, file, mode change and
// symlink is made through an os.Root opened on dir, which refuses any name
// that resolves outside it (an absolute name, "..", or a symlink the archive
// planted earlier, such as esc -> /etc followed by esc/passwd), and a
// symlink's target is checked as it is made: it must be relative and stay
// inside dir seen from the link's directory, as sysfs's own links do
// (bus/pci/devices/X -> ../../../devices/pci0000:00/X). That check is
// lexical, because a target may come later in the archive; a chain of links
// that climbs out only once resolved (l -> ., x -> l/..) is still harmless
// here, os.Root refusing to write through it, and node.Open refuses to read
// a tree holding one.
func Extract(r io.Reader, name, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("extracting %s: %w", name, err)
	}
	defer root.Close()
	x := &extractor{root: root, name: name, sc: bufio.NewScanner(r)}
	x.sc.Buffer(make([]byte, 1<<20), maxLine)
	for {
		l, err := x.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := x.entry(l); err != nil {
			return err
		}
	}
}

// extractor is one archive being written under its root.
type extractor struct {
	root *os.Root
	name string
	sc   *bufio.Scanner
	line int
	path string // the entry the following lines describe, relative to dir
}

// next returns the next line; at the end it says why there is none: io.EOF
// at the end of the archive, else the reader's error.
func (x *extractor) next() (string, error) {
	if x.sc.Scan() {
		x.line++
		return x.sc.Text(), nil
	}
	switch err := x.sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return "", fmt.Errorf("line %d of %s is longer than %d MiB: %w", x.line+1, x.name, maxLine>>20, err)
	case err != nil:
		return "", fmt.Errorf("%s: after line %d: %w", x.name, x.line, err)
	}
	return "", io.EOF
}

func (x *extractor) fail(format string, a ...any) error {
	return fmt.Errorf("%s:%d: %w", x.name, x.line, fmt.Errorf(format, a...))
}

// entry acts on one line outside a file's contents.
func (x *extractor) entry(l string) error {
	var err error
	switch {
	case l == "" || strings.HasPrefix(l, "#"):
	case strings.HasPrefix(l, "Directory: "):
		if x.path, err = local(strings.TrimPrefix(l, "Directory: ")); err != nil {
			return x.fail("%w", err)
		}
		if err := x.root.MkdirAll(x.path, 0o755); err != nil {
			return x.fail("directory %q: %w", x.path, err)
		}
	case strings.HasPrefix(l, "Path: "):
		if x.path, err = local(strings.TrimPrefix(l, "Path: ")); err != nil {
			return x.fail("%w", err)
		}
	case strings.HasPrefix(l, "SymlinkTo: "):
		if x.path == "" {
			return x.fail("SymlinkTo without Path")
		}
		target := strings.TrimPrefix(l, "SymlinkTo: ")
		if err := symlink(x.root, target, x.path); err != nil {
			return x.fail("symlink %q -> %q: %w", x.path, target, err)
		}
	case strings.HasPrefix(l, "Lines: "):
		return x.file(l)
	case strings.HasPrefix(l, "Mode: "):
		return x.mode(l)
	default:
		return x.fail("unexpected line %q", l)
	}
	return nil
}

// file writes the entry's contents: the count of lines l gives, the last
// one ending in EOF where the file has no final newline.
func (x *extractor) file(l string) error {
	n, err := strconv.Atoi(strings.TrimPrefix(l, "Lines: "))
	if err != nil || n < 0 {
		return x.fail("bad line count %q", l)
	}
	if x.path == "" {
		return x.fail("Lines without Path")
	}
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		c, err := x.next()
		if err == io.EOF {
			return x.fail("archive ends inside %q", x.path)
		}
		if err != nil {
			return err
		}
		if i == n-1 && strings.HasSuffix(c, "EOF") {
			buf.WriteString(strings.TrimSuffix(c, "EOF"))
		} else {
			buf.WriteString(c)
			buf.WriteByte('\n')
		}
	}
	if err := x.root.MkdirAll(filepath.Dir(x.path), 0o755); err != nil {
		return x.fail("file %q: %w", x.path, err)
	}
	b := bytes.ReplaceAll(buf.Bytes(), []byte("NULLBYTE"), []byte{0})
	if err := x.root.WriteFile(x.path, b, 0o644); err != nil {
		return x.fail("file %q: %w", x.path, err)
	}
	return nil
}

// mode sets the entry's permission bits. Directories stay traversable and
// files readable by the owner whatever was recorded, so tests can clean
// up; no setuid, setgid or sticky bit.
func (x *extractor) mode(l string) error {
	m, err := strconv.ParseUint(strings.TrimPrefix(l, "Mode: "), 8, 32)
	if err != nil {
		return x.fail("bad mode %q", l)
	}
	if x.path == "" {
		return x.fail("Mode without Path")
	}
	mode := fs.FileMode(m) & fs.ModePerm
	if fi, err := x.root.Lstat(x.path); err == nil && fi.IsDir() {
		mode |= 0o700
	}
	if err := x.root.Chmod(x.path, mode); err != nil {
		return x.fail("mode of %q: %w", x.path, err)
	}
	return nil
}

// maxLine is the longest line Extract reads (a sysfs attribute is a page,
// a recorded JSON answer a few MiB).
const maxLine = 64 << 20

// local checks an entry's name: relative, and not climbing out of the
// archive.
func local(name string) (string, error) {
	p := filepath.FromSlash(name)
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("name %q leaves the archive", name)
	}
	p = filepath.Clean(p)
	if n := strings.Count(p, string(filepath.Separator)) + 1; n > MaxDepth {
		return "", fmt.Errorf("name %.80q... is %d directories deep, more than %d: a recording's deepest (sysfs's device tree) are about 20", name, n, MaxDepth)
	}
	return p, nil
}

// MaxDepth is how deep an archive's names may nest: each entry is made
// from the top (os.Root's MkdirAll), so a tree thousands deep would cost
// time quadratic in its depth. node.MaxTreeDepth is the same bound.
const MaxDepth = 256

// symlink makes the link name -> target through root, replacing what was
// there; the target must stay inside root, seen from the link's directory.
func symlink(root *os.Root, target, name string) error {
	switch {
	case target == "":
		return errors.New("empty target")
	case filepath.IsAbs(target):
		return errors.New("the target is absolute; a recording's links must stay inside it")
	case !filepath.IsLocal(filepath.Join(filepath.Dir(name), target)):
		return errors.New("the target climbs out of the archive")
	}
	if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return root.Symlink(target, name)
}

// ExtractFile unpacks the archive at path into dir. The archive must be a
// regular file: it is opened O_NONBLOCK, so a FIFO named x.ttar is refused
// rather than waited on for ever.
func ExtractFile(path, dir string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%q is not a regular file (%s): an archive is a file gdrcheck snapshot wrote", path, fi.Mode().Type())
	}
	return Extract(f, path, dir)
}
