// Package dirlock gives one gdrcheck command at a time an output
// directory (run --out, a job directory), so that two runs into it never
// leave a set mixed of both. It is flock(2) on DIR/.gdrcheck.lock, held for
// the whole command: the kernel drops it when the process ends however it
// ends, so a killed run never leaves the directory locked. The file holds
// the holder's pid, for the one that waits to say whom it waits for; it is
// never removed, since removing a lock file lets two holders lock two
// different files.
//
// golang.org/x/sys/unix's Flock, not a lock library: the pid is written to
// and read from the locked file's own descriptor, which github.com/gofrs/flock
// keeps to itself, and what it adds, a polling loop, is the few lines of
// Acquire.
package dirlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// File is the lock file's name in the directory it locks.
const File = ".gdrcheck.lock"

// ErrLocked is wrapped by the error of an Acquire that gave up waiting.
var ErrLocked = errors.New("locked by another gdrcheck run")

// poll is how often a waiting Acquire tries the lock again.
const poll = 100 * time.Millisecond

// Lock is a held directory lock.
type Lock struct{ f *os.File }

// Acquire locks dir, which must exist. When another process holds it,
// Acquire says so on progress (once, naming its pid) and waits up to
// timeout, or until ctx is done; timeout 0 refuses at once. The error of
// one that gave up wraps ErrLocked; of one ctx ended, ctx's cause.
//
// A filesystem without flock (some FUSE and NFS mounts: ENOLCK,
// EOPNOTSUPP) cannot lock: Acquire says so on progress and returns a Lock
// that holds nothing, so gdrcheck still works there, unguarded.
func Acquire(ctx context.Context, dir string, timeout time.Duration, progress io.Writer) (*Lock, error) {
	path := filepath.Join(dir, File)
	// O_NOFOLLOW: a link planted in the directory under the lock's name
	// would have root write the pid through it.
	flags := syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|flags, 0o644)
	if errors.Is(err, os.ErrPermission) {
		// Another user's lock file in a shared directory: flock needs
		// only a read, the pid is then not recorded.
		f, err = os.OpenFile(path, os.O_RDONLY|flags, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("locking %q: %w", dir, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("locking %q: %s is not a regular file", dir, path)
	}
	var deadline <-chan time.Time
	waited := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			l := &Lock{f: f}
			l.writePID()
			return l, nil
		case errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS):
			f.Close()
			say(progress, "gdrcheck: %s is not locked: its filesystem has no flock (%v); do not start two runs into it at once\n", dir, err)
			return &Lock{}, nil
		case !errors.Is(err, unix.EWOULDBLOCK):
			f.Close()
			return nil, fmt.Errorf("locking %q: %w", path, err)
		}
		holder := holderOf(f)
		if timeout <= 0 {
			f.Close()
			return nil, fmt.Errorf("%s: %w%s (--lock-timeout 0: not waiting)", dir, ErrLocked, holder)
		}
		if !waited {
			waited, deadline = true, time.After(timeout)
			say(progress, "gdrcheck: waiting for %s, %s%s (up to %s, --lock-timeout)\n", dir, ErrLocked, holder, timeout)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s, %s%s: %w", dir, ErrLocked, holder, context.Cause(ctx))
		case <-deadline:
			f.Close()
			return nil, fmt.Errorf("%s: %w%s, still after %s (--lock-timeout)", dir, ErrLocked, holder, timeout)
		case <-time.After(poll):
		}
	}
}

// Release drops the lock, clearing the pid first; it is safe on a nil
// Lock and on one that holds nothing.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = l.f.Close() // closing the only descriptor drops the flock
	l.f = nil
}

// writePID records the holder, for a waiting run to name.
func (l *Lock) writePID() {
	if l.f.Truncate(0) == nil {
		_, _ = l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
}

// holderOf is " (pid N)" from the lock file, "" when it does not say
// (the holder has only just locked it). The file is the holder's to
// write, so only a number is taken from it.
func holderOf(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return ""
	}
	return fmt.Sprintf(" (pid %d)", pid)
}

func say(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format, a...)
	}
}
