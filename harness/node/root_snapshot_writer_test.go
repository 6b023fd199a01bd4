package node_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// The snapshot writer keeps every name under its directory, writes JSON
// as the recordings are read back, and keeps the first failure, naming
// its file, while the writes after it still land.
func TestSnapshotWriterStaysInsideAndKeepsTheFirstFailure(t *testing.T) {
	parent := t.TempDir()
	dst := filepath.Join(parent, "rec")
	w := node.NewSnapshotWriter(dst)
	w.WriteFile("../../outside", []byte("x"))
	w.JSON("gdrcheck/m.json", map[string]int{"a": 1})
	w.Symlink("sys/bus/pci/devices/0000:01:00.0", "../../../devices/pci0000:00/0000:01:00.0")
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(parent, "outside")); err == nil {
		t.Error("../../outside was written outside the recording")
	}
	if b, err := os.ReadFile(filepath.Join(dst, "outside")); err != nil || string(b) != "x" {
		t.Errorf("../../outside inside the recording: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "gdrcheck/m.json")); string(b) != "{\n  \"a\": 1\n}\n" {
		t.Errorf("JSON wrote %q", b)
	}
	if l, err := os.Readlink(filepath.Join(dst, "sys/bus/pci/devices/0000:01:00.0")); err != nil || !strings.HasPrefix(l, "../../../devices/") {
		t.Errorf("link %q %v", l, err)
	}

	// A file where a directory must go fails that write and no other.
	w.WriteFile("proc", []byte("a file"))
	w.WriteFile("proc/version", []byte("Linux"))
	w.WriteFile("sys/kernel/x", []byte("1"))
	w.Mkdir("proc/driver")
	if err := w.Err(); err == nil || !strings.Contains(err.Error(), "recording proc/version") {
		t.Errorf("Err = %v, want the first failure, naming proc/version", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "sys/kernel/x")); err != nil {
		t.Errorf("the write after a failure: %v", err)
	}
}
