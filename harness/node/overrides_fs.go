package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/gdrcheck/gdrcheck/internal/filekind"
)

// errNotRegularFile is wrapped by the refusal of a configuration or
// topology file that is not a regular file: a FIFO, a device, a socket.
var errNotRegularFile = errors.New("not a regular file")

// regularFS is a file system whose files are opened O_NONBLOCK and
// judged by fstat on what was opened: anything but a regular file is
// refused. A FIFO named by NCCL_CONF_FILE or NCCL_TOPO_FILE would
// otherwise block the open for ever, and SIGTERM with it (the Go runtime
// cannot interrupt a blocked open(2)); a character device would be read
// without end. Lstat and ReadLink are the inner file system's, for
// chrootPath.
type regularFS struct {
	inner fs.FS
	open  func(name string) (*os.File, error) // name is fs.ValidPath's
}

// liveRegularFS is the live host's / as a regularFS.
func liveRegularFS() regularFS {
	return regularFS{inner: os.DirFS("/"), open: func(name string) (*os.File, error) {
		return os.OpenFile("/"+name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}}
}

// rootRegularFS is r's tree as a regularFS: names resolve inside r only.
func rootRegularFS(r *os.Root) regularFS {
	return regularFS{inner: r.FS(), open: func(name string) (*os.File, error) {
		return r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}}
}

func (r regularFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := r.open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w: a %s, not read", errNotRegularFile, filekind.Of(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, nil
}

func (r regularFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(r.inner, name) }

func (r regularFS) ReadLink(name string) (string, error) { return fs.ReadLink(r.inner, name) }
