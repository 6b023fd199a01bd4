package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/sysfs"
)

// ErrAbsent says a subsystem or optional file is not there at all (no
// InfiniBand class, no nvidia_peermem module). Specs decide whether absent
// means skip or fail; it is never the same as "present but unreadable".
var ErrAbsent = errors.New("absent")

// Host reads one node's sysfs and procfs under a root directory: "/" for the
// live host, or a recorded tree whose sys/ and proc/ stand in for /sys and
// /proc.
type Host struct {
	root string
	Sys  sysfs.FS
	Proc procfs.FS
}

// Open checks that root holds readable sys and proc directories, the way
// procfs.NewFS checks its mount point. An empty root means "/". A root other
// than "/" is a recording, and Open refuses one holding a symlink that
// resolves outside it (checkContained), so that every read under it, by
// gdrcheck, procfs, sysfs or rdmamap, stays inside it.
func Open(root string) (Host, error) {
	if root == "" {
		root = "/"
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Host{}, fmt.Errorf("host root %q: %w", root, err)
	}
	for _, sub := range []string{"sys", "proc"} {
		p := filepath.Join(abs, sub)
		fi, err := os.Stat(p)
		if err != nil {
			return Host{}, fmt.Errorf("host root %q: %w", abs, err)
		}
		if !fi.IsDir() {
			return Host{}, fmt.Errorf("host root %q: %q is not a directory", abs, p)
		}
	}
	// A recorded tree is someone else's: nothing in it may lead a read
	// outside it. The live host's own links are its business.
	if abs != "/" {
		if err := checkContained(abs); err != nil {
			return Host{}, fmt.Errorf("host root %q: %w", abs, err)
		}
	}
	for _, sub := range []string{"sys", "proc"} {
		if _, err := os.ReadDir(filepath.Join(abs, sub)); err != nil {
			return Host{}, fmt.Errorf("host root %q: %w", abs, err)
		}
	}
	s, err := sysfs.NewFS(filepath.Join(abs, "sys"))
	if err != nil {
		return Host{}, fmt.Errorf("host root %q: %w", abs, err)
	}
	p, err := procfs.NewFS(filepath.Join(abs, "proc"))
	if err != nil {
		return Host{}, fmt.Errorf("host root %q: %w", abs, err)
	}
	return Host{root: abs, Sys: s, Proc: p}, nil
}

// Root is the absolute root directory the host is read under.
func (h Host) Root() string { return h.root }

// Live reports whether this is the running host rather than a recorded tree;
// only then may live sources (NVML, libcuda, rdmamap's fixed paths) be used.
func (h Host) Live() bool { return h.root == "/" }

// path joins elements under the root.
func (h Host) path(elem ...string) string {
	return filepath.Join(append([]string{h.root}, elem...)...)
}

// sys joins elements under the root's sys directory.
func (h Host) sys(elem ...string) string { return h.path(append([]string{"sys"}, elem...)...) }

// proc joins elements under the root's proc directory.
func (h Host) proc(elem ...string) string { return h.path(append([]string{"proc"}, elem...)...) }

// readString reads a small sysfs or procfs file and trims it. A missing file
// is reported as ErrAbsent, wrapped with the path actually opened.
func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("reading %q: %w", path, ErrAbsent)
		}
		return "", fmt.Errorf("reading %q: %w", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}
