package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

// RootPolicy is how a command reads the host root it is given
// (--host-root, --trust-root): the live host, a host mounted for
// gdrcheck, a recorded node's directory or its .ttar archive. Its errors
// name the --host-root flag, as the user gave it.
type RootPolicy struct {
	Path  string // as given: "/", a directory, or a .ttar archive
	Trust bool   // read a directory others can write (copied first)
}

// Resolve resolves the root to a directory that nobody but root and this
// user can change while the command reads it by path. A recorded
// directory is read where it lies if it is one already (CheckRoot),
// else refused, or with Trust copied (CopyRoot); a .ttar archive is
// unpacked. Copies and archives go to a scratch directory that done
// removes (root_scratch.go), after those that killed processes left are
// removed. The live host / and a host mounted for gdrcheck (a
// container's /host, with the kernel's own procfs and sysfs) are read
// where they are.
func (p RootPolicy) Resolve() (dir string, done func(), err error) {
	removeStaleHostDirs()
	archive := strings.HasSuffix(p.Path, ".ttar")
	if !archive {
		dir, err := p.recordedDir()
		if dir != "" || err != nil {
			if err != nil {
				return "", nil, fmt.Errorf("--host-root %s: %w", p.Path, err)
			}
			if err := p.checkTree(dir); err != nil {
				return "", nil, err
			}
			return dir, func() {}, nil
		}
	}
	dir, done, err = newHostDir()
	if err != nil {
		return "", nil, fmt.Errorf("--host-root %s: %w", p.Path, err)
	}
	if archive {
		err = ttar.ExtractFile(p.Path, dir)
	} else {
		err = CopyRoot(p.Path, dir, true)
	}
	if err == nil {
		err = p.checkTree(dir)
	}
	if err != nil {
		done()
		if errors.Is(err, ErrNotANode) {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("--host-root: %w", err)
	}
	return dir, done, nil
}

// ErrNotANode is wrapped by the error for a root that holds no sys and
// proc directories.
var ErrNotANode = errors.New("not a recorded node")

// checkTree says, in the terms of what was given, when --host-root holds
// no sys and proc directories (an empty archive, the wrong directory),
// before a temporary directory's name could reach the message.
func (p RootPolicy) checkTree(dir string) error {
	if p.Path == "/" {
		return nil
	}
	for _, sub := range []string{"sys", "proc"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return fmt.Errorf("--host-root %s: %w: it holds no %s/ directory (gdrcheck snapshot records a node with sys/ and proc/)", p.Path, ErrNotANode, sub)
		}
	}
	return nil
}

// recordedDir is the directory --host-root is read at in place, or ""
// where it must be copied first: someone else can write it and
// --trust-root says that is fine.
func (p RootPolicy) recordedDir() (string, error) {
	abs, err := filepath.Abs(p.Path)
	if err != nil {
		return "", err
	}
	if abs == "/" {
		return p.Path, nil
	}
	if MountedHost(abs) {
		if err := CheckMountedHost(abs); err != nil && !p.Trust {
			return "", err
		}
		return p.Path, nil
	}
	// Read at its real path: a link above it may be someone else's.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("host root %q: %w", abs, err)
	}
	err = CheckRoot(real)
	if errors.Is(err, ErrUntrusted) && p.Trust {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return real, nil
}

// Open opens dir, the directory Resolve gave, naming the root as it was
// given in the error: the archive, or the directory a copy was made of.
func (p RootPolicy) Open(dir string) (Host, error) {
	h, err := Open(dir)
	switch {
	case err == nil:
	case strings.HasSuffix(p.Path, ".ttar"):
		err = fmt.Errorf("%s: %w", p.Path, err)
	case dir != p.Path:
		// A copied directory is named as the user gave it.
		err = errors.New(strings.ReplaceAll(err.Error(), dir, p.Path))
	}
	return h, err
}
