package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// AddDir stages a directory for path (a run's logs/): it returns the
// staging directory, hidden beside path, for the caller to fill, and on
// Commit it takes path's place whole, in the order added, so that no file
// of an earlier set lingers among the new ones. A staging directory left
// empty removes path instead: the set has no such directory. On error
// nothing of the set is left behind.
func (s *FileSet) AddDir(path string) (string, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		s.Abort()
		return "", fmt.Errorf("staging %q: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		s.Abort()
		return "", fmt.Errorf("staging %q: %w", path, err)
	}
	s.staged = append(s.staged, staged{tmp: tmp, path: path, dir: true})
	return tmp, nil
}

// StagedDirs is the pattern of the staging directories AddDir makes for
// path, for a caller that holds the output directory's lock to remove
// those a killed run left.
func StagedDirs(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".*")
}

// commitDir puts the staged directory tmp in path's place: exchanged with
// what is there in one step (renameat2 RENAME_EXCHANGE), so a reader sees
// the old directory or the new, never neither; where the filesystem
// cannot exchange, moved aside and replaced.
func commitDir(tmp, path string) error {
	if empty, err := isEmptyDir(tmp); err != nil {
		return err
	} else if empty {
		os.Remove(tmp)
		return os.RemoveAll(path)
	}
	err := os.Rename(tmp, path)
	if err == nil {
		return nil
	}
	if _, serr := os.Lstat(path); serr != nil {
		return err
	}
	switch err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); {
	case err == nil:
		return os.RemoveAll(tmp) // now the old one
	case !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP):
		return err
	}
	old, err := os.MkdirTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if err := os.Rename(path, filepath.Join(old, "old")); err != nil {
		os.Remove(old)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

func isEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err != io.EOF {
		return false, err
	}
	return true, nil
}
