package results

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Read loads and checks a results.json, nodes and all.
func Read(path string) (*Results, error) {
	var nodes []Node
	r, err := Scan(path, func(n Node) error { nodes = append(nodes, n); return nil })
	if err != nil {
		return nil, err
	}
	r.Nodes = nodes
	return r, nil
}

// ReadOpened is Read of a file its caller opened, reading at most max
// bytes of it (ScanFile).
func ReadOpened(f *os.File, max int64) (*Results, error) {
	var nodes []Node
	r, err := ScanFile(f, max, func(n Node) error { nodes = append(nodes, n); return nil })
	if err != nil {
		return nil, err
	}
	r.Nodes = nodes
	return r, nil
}

// Encode is results.json's bytes, as the Encoder writes them.
func (r *Results) Encode() ([]byte, error) {
	var b bytes.Buffer
	e := NewEncoder(&b)
	for _, n := range r.Nodes {
		e.Node(n)
	}
	if err := e.End(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write writes results.json atomically.
func (r *Results) Write(path string) error {
	b, err := r.Encode()
	if err != nil {
		return err
	}
	return WriteFile(path, b)
}

// WriteFile writes data to path atomically: a temporary file in the same
// directory, synced, then renamed, so a reader (Jenkins, a Slurm collector)
// never sees half a report.
func WriteFile(path string, data []byte) error {
	var s FileSet
	if err := s.Add(path, data); err != nil {
		return err
	}
	return s.Commit()
}

// FileSet writes files that belong together (results.json, junit.xml,
// report.html) as one set: each is staged in a synced temporary file
// beside its target, and only once all are staged are they renamed into
// place, in the order added. Add the file readers trust most last: a
// failure before it leaves that file, and so the previous set, as it was.
type FileSet struct {
	staged []staged
}

type staged struct {
	tmp, path string
	dir       bool // a directory (AddDir)
}

// Add stages data for path; on error nothing of the set is left behind.
func (s *FileSet) Add(path string, data []byte) error {
	return s.AddFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// AddFunc stages what write writes for path, streamed to the temporary
// file; on error nothing of the set is left behind.
func (s *FileSet) AddFunc(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		s.Abort()
		return fmt.Errorf("writing %q: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	werr := write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(f.Name(), 0o644)); err != nil {
		os.Remove(f.Name())
		s.Abort()
		return fmt.Errorf("writing %q: %w", path, err)
	}
	s.staged = append(s.staged, staged{tmp: f.Name(), path: path})
	return nil
}

// Path is the target of the i-th staged file.
func (s *FileSet) Path(i int) string { return s.staged[i].path }

// Append moves other's staged files to the end of s, to be committed
// after the ones s holds.
func (s *FileSet) Append(other *FileSet) {
	s.staged = append(s.staged, other.staged...)
	other.staged = nil
}

// Commit renames every staged file into place, in order.
func (s *FileSet) Commit() error {
	defer s.Abort()
	for i, f := range s.staged {
		commit := os.Rename
		if f.dir {
			commit = commitDir
		}
		if err := commit(f.tmp, f.path); err != nil {
			return fmt.Errorf("writing %q: %w", f.path, err)
		}
		s.staged[i].tmp = ""
	}
	return nil
}

// Abort removes whatever is staged and not yet committed.
func (s *FileSet) Abort() {
	for _, f := range s.staged {
		if f.tmp != "" {
			os.RemoveAll(f.tmp) // a staged directory with what is in it
		}
	}
	s.staged = nil
}
