package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/gdrcheck/gdrcheck/internal/filekind"
)

// checkContained walks a recorded root once and refuses it if anything in
// it could make a read land outside it: a symlink that resolves outside
// (absolute, climbing out, or a chain that does once resolved), or a
// device, pipe or socket. gdrcheck runs as root and replays recordings
// other people made, and most of what reads a root reads by path (procfs
// and sysfs, filepath.Glob and EvalSymlinks, rdmamap), following links as
// the kernel does; a tree that holds no such entry gives every one of those
// reads a file inside it. The tree must not change while it is read: an
// unpacked archive or a copy (CopyRoot) lives in a directory only this
// process writes, and a tree read in place is one only root and the
// running user can change (CheckRoot; see cmd/gdrcheck's root.go).
//
// Each top-level directory must keep its own links: sys/ and dev/ are also
// bind-mounted alone over /sys and /dev for rdmamap (rdma_namespace.go), where a
// link from sys/ into the root's proc/ would reach the host's /proc. A
// real sysfs's links stay inside it (class/infiniband/mlx5_0 ->
// ../../devices/...), and so do a snapshot's. Links that resolve to
// nothing are kept: a snapshot records a device's driver link, not the
// driver.
func checkContained(root string) error {
	if MountedHost(root) {
		return nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	ents, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !readByPath[e.Name()] {
			continue
		}
		if !e.IsDir() {
			if err := checkEntry(r, root, e.Name(), e.Type()); err != nil {
				return err
			}
			continue
		}
		if err := walkContained(r, root, e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// MaxTreeDepth is how deep directories may nest in a recorded root. A
// sysfs's deepest device directories are about 20 down
// (devices/pci0000:00/.../net/eth0/queues/rx-0); a tree nested thousands
// deep is built to make every walk over it slow, and is refused.
const MaxTreeDepth = 256

// errTooDeep is wrapped by the refusal of a tree nested deeper than
// MaxTreeDepth.
var errTooDeep = errors.New("directories nested too deep")

func tooDeep(p string) error {
	return fmt.Errorf("%q: %w: more than %d levels below the root, where a recording's deepest (sysfs's device tree) are about 20", p, errTooDeep, MaxTreeDepth)
}

// walkContained checks every entry under the directory name of r (the
// root at root). It walks one directory fd at a time (openat, never a
// path from the top), so the walk costs one open per directory, linear in
// the tree; fs.WalkDir over an os.Root resolves each entry's whole path
// again, which is quadratic in the depth.
func walkContained(r *os.Root, root, name string) error {
	sub, err := r.OpenRoot(name)
	if err != nil {
		return err
	}
	defer sub.Close()
	dir := filepath.Join(root, name)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	w := containWalk{sub: sub, dir: dir}
	return w.walk(fd, ".", 1)
}

type containWalk struct {
	sub *os.Root // the top-level directory, resolving links as the kernel would
	dir string   // its path, for errors
}

// walk checks the entries of the directory open as fd (rel below w.dir,
// depth levels below the root) and those below it, and closes fd.
func (w containWalk) walk(fd int, rel string, depth int) error {
	f := os.NewFile(uintptr(fd), filepath.Join(w.dir, rel))
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("reading %q: %w", filepath.Join(w.dir, rel), err)
	}
	for _, n := range names {
		p := path.Join(rel, n)
		// As io/fs refuses such a path: sysfs and procfs name nothing
		// outside UTF-8, and a name that is not would reach labels and
		// reports as another name.
		if !utf8.ValidString(n) {
			return fmt.Errorf("%q: %w: the name is not UTF-8, which no kernel's sysfs or procfs and no gdrcheck snapshot writes", filepath.Join(w.dir, p), fs.ErrInvalid)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "fstatat", Path: filepath.Join(w.dir, p), Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := checkEntry(w.sub, w.dir, p, statType(st.Mode)); err != nil {
				return err
			}
			continue
		}
		if depth >= MaxTreeDepth {
			return tooDeep(filepath.Join(w.dir, p))
		}
		child, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "openat", Path: filepath.Join(w.dir, p), Err: err}
		}
		if err := w.walk(child, p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// statType is a stat(2) st_mode's type as an fs.FileMode's.
func statType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// readByPath are the parts of a root read by path: sysfs, procfs, the
// device names and the recorded answers. The rest (the NCCL library's
// directories, the whole rootfs of a host mounted at /host) is read
// through os.Root, which resolves an absolute link inside the root as a
// chroot does, so its links need no walk.
var readByPath = map[string]bool{"sys": true, "proc": true, "dev": true, "gdrcheck": true}

// MountedHost says root is a host's filesystem mounted for gdrcheck (a
// container's /host): its proc and sys are the kernel's own procfs and
// sysfs, which no archive can plant and whose links are the kernel's. They
// must be the directories themselves, not links: a link to the running
// host's /proc would make any tree pass for a mounted host and skip the
// walk.
func MountedHost(root string) bool {
	const procMagic, sysfsMagic = 0x9fa0, 0x62656572
	return fsType(root, "proc") == procMagic && fsType(root, "sys") == sysfsMagic
}

// fsType is the type of the file system the directory root/name, not
// followed if a link, lies on; 0 if it cannot be opened.
func fsType(root, name string) int64 {
	fd, err := unix.Open(filepath.Join(root, name), unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var s unix.Statfs_t
	if unix.Fstatfs(fd, &s) != nil {
		return 0
	}
	return s.Type
}

// CheckMountedHost refuses a mounted host whose root directory another
// user can change (wrapping ErrUntrusted): its proc and sys are mount
// points nobody but root can replace, and what else is read in it
// (gdrcheck/, the NCCL library's directories) is read where it lies.
func CheckMountedHost(root string) error {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: root, Err: err}
	}
	c := &copier{src: root, euid: os.Geteuid(), dev: st.Dev}
	return c.check(".", &st)
}

// checkEntry refuses one entry of r (the directory dir) that a read could
// follow out of it.
func checkEntry(r *os.Root, dir, name string, typ fs.FileMode) error {
	p := filepath.Join(dir, name)
	switch {
	case typ&fs.ModeSymlink != 0:
		// os.Root resolves the link as the kernel would, refusing to
		// leave r. A missing or non-directory component stops the
		// kernel too; anything else (escaping, more links than
		// os.Root follows) is refused.
		_, err := r.Stat(name)
		if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		target, _ := r.Readlink(name)
		return fmt.Errorf("%q links to %q, which does not resolve inside %q: %w", p, target, dir, err)
	case typ&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeIrregular) != 0:
		return fmt.Errorf("%q is a %s, not a recorded file", p, filekind.Of(typ))
	}
	return nil
}
