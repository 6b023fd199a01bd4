package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/filekind"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
)

// A job directory is untrusted: the nodes' steps write into it, and a
// collect may run on a copy someone handed over. jobFiles reads it through
// an os.Root, so no name and no link in it reaches outside; a file whose
// last component is a link, or that is not a regular file (a FIFO, a
// device), is refused rather than followed or blocked on; and every read
// is capped.
type jobFiles struct {
	root *os.Root
	dir  string
}

// errNotRegular is wrapped when a file of the job directory is a link, a
// FIFO, a device or a directory.
var errNotRegular = errors.New("not a regular file")

// Caps on what collect reads of a job directory.
var (
	jobFileLimit = bounded.Limit{Bytes: 64 << 20, What: "job.json or steps.json",
		Why: "they name each node of a job a few times: a few MB at 16,384 nodes"}
	nodeResultsLimit = bounded.Limit{Bytes: 256 << 20, What: "a node's results.json in a job directory",
		Why: "a node's is about 155 KB, the scaling suite's a few MB at 16,384 nodes"}
)

func openJobDir(dir string) (*jobFiles, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the job directory: %w", err)
	}
	return &jobFiles{root: r, dir: dir}, nil
}

func (j *jobFiles) Close() error { return j.root.Close() }

// path is name as a person finds it: under the job directory.
func (j *jobFiles) path(name string) string { return filepath.Join(j.dir, filepath.FromSlash(name)) }

// open opens name, slash-separated under the job directory, for reading.
// The root resolves the directories on the way inside the job directory;
// the file itself must be a regular file, not a link to one: it is
// looked at without following (Lstat), opened O_NONBLOCK (a FIFO swapped
// in does not block), and must be the file looked at (fstat).
func (j *jobFiles) open(name string) (*os.File, error) {
	lfi, err := j.root.Lstat(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: j.path(name), Err: unwrapPath(err)}
	}
	if !lfi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: j.path(name), Err: fmt.Errorf("%w: a %s, not read", errNotRegular, filekind.Of(lfi.Mode()))}
	}
	f, err := j.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: j.path(name), Err: unwrapPath(err)}
	}
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || !os.SameFile(lfi, fi)) {
		err = fmt.Errorf("%w: it was replaced while it was opened, not read", errNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: j.path(name), Err: err}
	}
	return f, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readJSON decodes name, at most jobFileLimit, into v.
func (j *jobFiles) readJSON(name string, v any) error {
	f, err := j.open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := bounded.ReadAll(f, jobFileLimit)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("reading %q: %w", j.path(name), err)
	}
	return nil
}

// readResults reads a node's (or the scaling suite's) results.json.
func (j *jobFiles) readResults(name string) (*results.Results, error) {
	f, err := j.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > nodeResultsLimit.Bytes {
		return nil, &fs.PathError{Op: "read", Path: j.path(name), Err: &bounded.TooLargeError{Limit: nodeResultsLimit, Size: fi.Size(), Offset: -1}}
	}
	return results.ReadOpened(f, nodeResultsLimit.Bytes)
}

// tail is the last n non-empty lines of the log name, "" where there is
// none; a log that is not a regular file is an error, not read.
func (j *jobFiles) tail(name string, n int) (string, error) {
	f, err := j.open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	return tailOf(f, n), nil
}

// checkNodeNames refuses node names that are no hostnames: job.json's
// names build the paths of the nodes' files, so "../../x" or "a/b" would
// read outside the node's place.
func checkNodeNames(where string, names []string) error {
	for i, n := range names {
		if err := hostlist.Valid(n); err != nil {
			return fmt.Errorf("%s: nodes[%d]: %w", where, i, err)
		}
	}
	return nil
}

// nodeFile is the slash-separated name of a node's file in the job
// directory, for a name checkNodeNames passed.
func nodeFile(node string, file ...string) string {
	return path.Join(append([]string{nodesDir, node}, file...)...)
}

// tailOf reads the last 64 KiB of f at most: a log may be as long as the
// run that wrote it.
func tailOf(f *os.File, n int) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	from := max(fi.Size()-64<<10, 0)
	b, _ := bounded.ReadAll(io.NewSectionReader(f, from, 64<<10), bounded.Limit{Bytes: 64 << 10})
	return lastLines(b, n, from > 0)
}
