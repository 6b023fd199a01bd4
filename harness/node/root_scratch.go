package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// An archive given as a host root (RootPolicy), or a directory copied
// with Trust, is unpacked to a directory of its own under os.TempDir,
// removed when the command ends. A process killed with SIGKILL cannot
// remove it, so every Resolve first removes those their owner left: the
// directory is named gdrcheck-host-<pid>-<start>-* (the process id and
// its start time, in clock ticks after boot, as /proc/<pid>/stat gives
// it) and is locked with flock for as long as the process lives, the
// kernel dropping the lock when it dies. A directory is stale when its
// lock is free and its process is gone. Both are needed: the name is what
// protects a directory in the instant between its mkdir and its flock,
// and the lock is what protects it from a gdrcheck in another PID
// namespace sharing /tmp, where the pid means nothing.
// HostDirPrefix begins the name of every scratch directory.
const HostDirPrefix = "gdrcheck-host-"

// newHostDir makes and locks the directory an archive is unpacked to.
// release removes it.
func newHostDir() (dir string, release func(), err error) {
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp("", fmt.Sprintf("%s%d-%d-*", HostDirPrefix, pid, start))
	if err != nil {
		return "", nil, err
	}
	lock, err := os.Open(dir)
	if err == nil {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("locking %q: %w", dir, err)
	}
	return dir, func() {
		os.RemoveAll(dir)
		lock.Close()
	}, nil
}

// removeStaleHostDirs removes the host directories of this user's dead
// gdrcheck processes. Only real directories with the prefix directly under
// os.TempDir are considered, never through a symlink, and nothing is
// reported: it is housekeeping.
func removeStaleHostDirs() {
	tmp := os.TempDir()
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, start, ok := parseHostDir(e.Name())
		// The type is the entry's own (lstat): a link is no directory.
		if !ok || !e.IsDir() || running(pid, start) {
			continue
		}
		p := filepath.Join(tmp, e.Name())
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		st, isUnix := fi.Sys().(*syscall.Stat_t)
		if err == nil && isUnix && int(st.Uid) == os.Getuid() && unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			// os.RemoveAll never follows the links inside.
			os.RemoveAll(p)
		}
		f.Close()
	}
}

// parseHostDir reads the pid and start time out of a host directory's name.
func parseHostDir(name string) (pid int, start uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, HostDirPrefix)
	if !ok {
		return 0, 0, false
	}
	f := strings.SplitN(rest, "-", 3)
	if len(f) != 3 {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(f[1], 10, 64)
	return pid, start, err == nil
}

// running says whether process pid is alive and is the one that started at
// start, not a later process given the same pid.
func running(pid int, start uint64) bool {
	s, err := startTime(pid)
	return err == nil && s == start
}

// startTime is the process's start time from /proc/<pid>/stat.
func startTime(pid int) (uint64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.Starttime, nil
}
