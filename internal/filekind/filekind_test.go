package filekind

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Real files of each kind are named as the errors name them, from an
// Lstat and from a raw st_mode alike.
func TestOfNamesRealFiles(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f")
	fifo := filepath.Join(dir, "p")
	link := filepath.Join(dir, "l")
	if err := os.WriteFile(reg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{reg: "regular file", fifo: "named pipe", link: "symbolic link", dir: "directory", "/dev/null": "character device"} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := Of(fi.Mode()); got != want {
			t.Errorf("Of(%s) = %q, want %q", path, got, want)
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		if got := OfStat(st.Mode); got != want {
			t.Errorf("OfStat(%s) = %q, want %q", path, got, want)
		}
	}
}
