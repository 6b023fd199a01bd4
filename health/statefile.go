package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/dirlock"
	"github.com/gdrcheck/gdrcheck/results"
)

// The state directory's files (health.json, deep.json, prolog.json) are
// each a JSON document with its "schema" first, read without a lock (a
// write renames a whole file into place) and written under the
// directory's lock.

// readDoc reads name in dir into doc; false, and no error, where there is
// no such file yet. The caller checks the schema.
func readDoc(dir, name string, lim bounded.Limit, doc any) (bool, error) {
	b, err := readStateFile(dir, name, lim)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return false, fmt.Errorf("reading %q: %w", filepath.Join(dir, name), err)
	}
	return true, nil
}

// writeDoc writes doc as name in dir atomically (a temporary file renamed
// into place); the caller holds dir's lock. what names it in an error.
func writeDoc(dir, name, what string, doc any) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("storing %s: %w", what, err)
	}
	return results.WriteFile(filepath.Join(dir, name), append(b, '\n'))
}

// underLock runs write holding dir's lock (internal/dirlock), creating
// dir if needed, so two gdrcheck processes never write at once; progress
// hears a wait for the lock, and may be nil.
func underLock(ctx context.Context, dir string, progress io.Writer, write func() error) error {
	if err := ensureStateDir(dir); err != nil {
		return err
	}
	l, err := dirlock.Acquire(ctx, dir, lockWait, progress)
	if err != nil {
		return err
	}
	defer l.Release()
	return write()
}

// ensureStateDir makes the state directory, readable by root alone,
// where it is missing (packages create it: examples/).
func ensureStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state directory %q: %w", dir, err)
	}
	return nil
}

// readStateFile reads name in the state directory through os.Root, so a
// link planted there under the name never leads the read elsewhere, and
// non-blocking, so a FIFO in its place cannot hang the run.
func readStateFile(dir, name string, lim bounded.Limit) ([]byte, error) {
	path := filepath.Join(dir, name)
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("state directory %q: %w", dir, err)
	}
	defer r.Close()
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading %q: not a regular file", path)
	}
	b, err := bounded.ReadAll(f, lim)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	return b, nil
}
