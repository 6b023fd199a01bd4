package node

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/filekind"
)

// ErrUntrusted is wrapped by every refusal of a root that someone other
// than the running user or root could change while it is read.
var ErrUntrusted = errors.New("writable by another user")

// What one copy of a recorded root may hold. A recording is kilobytes to a
// few megabytes; sysfs and procfs files are a page.
var (
	copyFileLimit = bounded.Limit{Bytes: 64 << 20, What: "one file of a recorded root",
		Why: "a sysfs or procfs file is a page, a recorded kernel log a few MiB"}
	copyTotalLimit = bounded.Limit{Bytes: 256 << 20, What: "a recorded root",
		Why: "a recording (gdrcheck snapshot) is a few MiB"}
)

const maxCopyEntries = 1 << 20

// CopyRoot copies the recorded tree src into dst, an empty directory that
// only this process writes, so that every later read by path (procfs,
// sysfs, filepath.Glob, rdmamap's bind mount) reads a tree nobody else can
// change; Open's containment walk then runs on the copy. src may be
// someone else's and change while it is copied: it is read one directory
// fd at a time with openat and O_NOFOLLOW, so no name resolves through a
// link or leaves src; a link is recorded as a link (Readlink), never
// followed. A file is opened O_NONBLOCK and judged by fstat on what was
// opened, so a pipe, device or socket swapped in is refused instead of
// blocking, and a link swapped in fails the open (ELOOP). Refused too: a
// regular file with more than one link (a hard link made into src from
// outside it), and files or the tree over copyFileLimit or
// copyTotalLimit.
//
// Unless trust is set, src is refused (wrapping ErrUntrusted, naming the
// entry) if any directory or file in it belongs to someone other than the
// running user or root, can be written by its group or others, or is a
// mount point: such a user could swap entries while gdrcheck reads.
func CopyRoot(src, dst string, trust bool) error {
	out, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	return walkRoot(&copier{src: src, out: out, trust: trust})
}

// CheckRoot walks src as CopyRoot does, without copying, and refuses it
// in the same words; it also refuses it (ErrUntrusted) if a directory
// above it lets another user replace it: owned by someone else, or
// writable by others without the sticky bit. A root it accepts can be
// changed by nobody but root and the running user, so it may be read
// where it lies, by path. src must be absolute, its links resolved.
func CheckRoot(src string) error {
	if err := walkRoot(&copier{src: src}); err != nil {
		return err
	}
	c := &copier{euid: os.Geteuid()}
	for dir := filepath.Dir(src); ; dir = filepath.Dir(dir) {
		var st unix.Stat_t
		if err := unix.Lstat(dir, &st); err != nil {
			return &os.PathError{Op: "lstat", Path: dir, Err: err}
		}
		c.src, c.dev = dir, st.Dev
		// A sticky directory (/tmp) lets others add entries, not
		// replace this user's or root's.
		if st.Mode&unix.S_ISVTX != 0 {
			st.Mode &^= 0o022
		}
		if err := c.check(".", &st); err != nil {
			return fmt.Errorf("above %q: %w", src, err)
		}
		if dir == "/" {
			return nil
		}
	}
}

// walkRoot walks c.src, copying it to c.out unless that is nil.
func walkRoot(c *copier) error {
	c.euid = os.Geteuid()
	fd, err := unix.Open(c.src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: c.src, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return &os.PathError{Op: "fstat", Path: c.src, Err: err}
	}
	c.dev = st.Dev
	if err := c.check(".", &st); err != nil {
		unix.Close(fd)
		return err
	}
	return c.dir(fd, ".")
}

type copier struct {
	src   string
	out   *os.Root // nil: only check
	trust bool
	euid  int
	dev   uint64 // src's file system
	n     int    // entries copied
	total int64  // bytes copied
}

// path names an entry of src for errors.
func (c *copier) path(rel string) string { return filepath.Join(c.src, rel) }

// dir copies the directory open as fd, relative path rel, and closes fd.
func (c *copier) dir(fd int, rel string) error {
	f := os.NewFile(uintptr(fd), c.path(rel))
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("reading %q: %w", c.path(rel), err)
	}
	slices.Sort(names)
	for _, name := range names {
		if c.n++; c.n > maxCopyEntries {
			return fmt.Errorf("%q: more than %d entries: a recording (gdrcheck snapshot) holds a few thousand", c.src, maxCopyEntries)
		}
		if err := c.entry(fd, path.Join(rel, name), name); err != nil {
			return err
		}
	}
	return nil
}

// entry copies one entry, name in the directory open as dirfd.
func (c *copier) entry(dirfd int, rel, name string) error {
	p := c.path(rel)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return changed(p, "fstatat", err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		if c.out == nil {
			return nil
		}
		target, err := readlinkat(dirfd, name)
		if err != nil {
			return changed(p, "readlinkat", err)
		}
		if c.out == nil {
			return nil
		}
		return c.out.Symlink(target, rel)
	case unix.S_IFDIR:
		if strings.Count(rel, "/")+1 > MaxTreeDepth {
			return tooDeep(p)
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return changed(p, "openat", err)
		}
		if err := c.opened(fd, rel, unix.S_IFDIR); err != nil {
			unix.Close(fd)
			return err
		}
		if c.out != nil {
			if err := c.out.Mkdir(rel, 0o755); err != nil {
				unix.Close(fd)
				return err
			}
		}
		return c.dir(fd, rel)
	case unix.S_IFREG:
		if c.out == nil {
			// Only checking: nobody else may change what passes.
			return c.checkStat(rel, &st, unix.S_IFREG)
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return changed(p, "openat", err)
		}
		f := os.NewFile(uintptr(fd), p)
		defer f.Close()
		if err := c.opened(fd, rel, unix.S_IFREG); err != nil || c.out == nil {
			return err
		}
		return c.file(f, rel)
	}
	return fmt.Errorf("%q is a %s, not a recorded file", p, filekind.OfStat(st.Mode))
}

// opened checks what fd, opened for rel, really is (checkStat): the entry
// may have been swapped since it was listed.
func (c *copier) opened(fd int, rel string, want uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: c.path(rel), Err: err}
	}
	return c.checkStat(rel, &st, want)
}

// checkStat checks that rel is of the type want, has one link if a file,
// and is owned and writable as check allows.
func (c *copier) checkStat(rel string, st *unix.Stat_t, want uint32) error {
	p := c.path(rel)
	if got := st.Mode & unix.S_IFMT; got != want {
		return fmt.Errorf("%q is a %s, not a recorded file: it changed while it was copied", p, filekind.OfStat(st.Mode))
	}
	if want == unix.S_IFREG && st.Nlink > 1 {
		return fmt.Errorf("%q has %d hard links: one may be a file outside the recording; a recording's files have one", p, st.Nlink)
	}
	return c.check(rel, st)
}

// check refuses, unless the root is trusted, an entry another user could
// change: owned by someone other than the running user or root, writable
// by its group or others, or a mount point (another file system, which a
// user may mount there with FUSE).
func (c *copier) check(rel string, st *unix.Stat_t) error {
	if c.trust {
		return nil
	}
	p := c.path(rel)
	switch {
	case st.Dev != c.dev:
		return fmt.Errorf("%q is on another file system than %q (a mount point): %w; copy the recording out of the mount, or pass --trust-root", p, c.src, ErrUntrusted)
	case int(st.Uid) != c.euid && st.Uid != 0:
		return fmt.Errorf("%q belongs to uid %d, not to root or uid %d running gdrcheck: %w; chown -R it, or pass --trust-root if that user is trusted", p, st.Uid, c.euid, ErrUntrusted)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%q has mode %04o, which its group or others can write: %w; chmod -R go-w it, or pass --trust-root if they are trusted", p, st.Mode&0o7777, ErrUntrusted)
	}
	return nil
}

// file copies the open regular file f to rel, within the caps.
func (c *copier) file(f *os.File, rel string) error {
	w, err := c.out.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(w, io.LimitReader(f, copyFileLimit.Bytes+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying %q: %w", f.Name(), err)
	}
	if n > copyFileLimit.Bytes {
		return &os.PathError{Op: "read", Path: f.Name(), Err: &bounded.TooLargeError{Limit: copyFileLimit, Offset: -1}}
	}
	if c.total += n; c.total > copyTotalLimit.Bytes {
		return fmt.Errorf("%q: %w", c.src, &bounded.TooLargeError{Limit: copyTotalLimit, Size: c.total, Offset: -1})
	}
	return nil
}

// changed is the error for an entry that an open or stat of it by name
// could not reach as the directory listed it: it is gone, or became a link.
func changed(p, op string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%q changed while it was copied: %w", p, &os.PathError{Op: op, Path: p, Err: err})
	}
	return &os.PathError{Op: op, Path: p, Err: err}
}

func readlinkat(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		k, err := unix.Readlinkat(dirfd, name, b)
		if err != nil {
			return "", err
		}
		if k < n {
			return string(b[:k]), nil
		}
	}
}
