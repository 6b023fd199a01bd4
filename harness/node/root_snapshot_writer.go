package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// SnapshotWriter writes the files of a recording into its directory: the
// one writer of snapshots, used by Host.Snapshot and by what records its
// facts beside them (harness/mpi's Record). Names are cleaned under the
// directory, so none leads outside it. A failed write does not stop the
// others; the first error is kept for Err, since a recording that lacks
// a file is unusable.
type SnapshotWriter struct {
	dst string
	err error
}

// NewSnapshotWriter writes under dst.
func NewSnapshotWriter(dst string) *SnapshotWriter { return &SnapshotWriter{dst: dst} }

// Err is the first write that failed, naming its file; nil when none did.
func (w *SnapshotWriter) Err() error { return w.err }

func (w *SnapshotWriter) path(rel string) string {
	return filepath.Join(w.dst, filepath.FromSlash(path.Clean("/"+rel)))
}

func (w *SnapshotWriter) keep(rel string, err error) {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("recording %s: %w", rel, err)
	}
}

// WriteFile writes b as the file rel, making its directories.
func (w *SnapshotWriter) WriteFile(rel string, b []byte) {
	p := w.path(rel)
	w.keep(rel, os.MkdirAll(filepath.Dir(p), 0o755))
	w.keep(rel, os.WriteFile(p, b, 0o644))
}

// Symlink recreates a link at rel pointing to target.
func (w *SnapshotWriter) Symlink(rel, target string) {
	p := w.path(rel)
	w.keep(rel, os.MkdirAll(filepath.Dir(p), 0o755))
	os.Remove(p)
	w.keep(rel, os.Symlink(target, p))
}

// Mkdir makes the directory rel and those above it.
func (w *SnapshotWriter) Mkdir(rel string) {
	w.keep(rel, os.MkdirAll(w.path(rel), 0o755))
}

// JSON writes v indented, with a final newline, as the file rel.
func (w *SnapshotWriter) JSON(rel string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	w.keep(rel, err)
	w.WriteFile(rel, append(b, '\n'))
}
