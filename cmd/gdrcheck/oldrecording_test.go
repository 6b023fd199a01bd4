package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

// A recording made before gdrcheck read PCI config space (the 8-GPU
// fixture without its config files, packed again as an archive) says so
// once per cause, naming neither a missing file per device nor the
// private directory the archive was unpacked to.
func TestARecordingWithoutConfigSpaceSaysItIsOldOncePerCause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := ttar.ExtractFile(nodes+"h100x8-nvswitch-cx7-pix.ttar", dir); err != nil {
		t.Fatal(err)
	}
	removed := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "config" && !d.IsDir() && strings.Contains(p, "/sys/") {
			removed++
			return os.Remove(p)
		}
		return err
	})
	if err != nil || removed < 16 {
		t.Fatalf("removed %d config files (%v), want the GPUs', NICs' and bridges'", removed, err)
	}
	old := filepath.Join(t.TempDir(), "old.ttar")
	f, err := os.Create(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := ttar.Write(f, dir); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := gdrcheck(t, "run", "--host-root", old, "--out", t.TempDir(), "--suites", "topology,kernel,bar1")
	out := r.stdout + r.stderr
	const msg = "this recording holds no PCI config space (made by an older gdrcheck; snapshot the node again)"
	if strings.Contains(out, "no such file") || strings.Contains(out, "gdrcheck-host-") {
		t.Errorf("the output names missing files or the unpacked archive:\n%s", out)
	}
	// One line per cause: the ACS specs', and device control's.
	joined := strings.Join(strings.Fields(out), " ")
	for _, cause := range []string{"ACS could not be read: " + msg, "PCI config space could not be read: " + msg} {
		if n := strings.Count(joined, cause); n != 1 {
			t.Errorf("%q said %d times, want once:\n%s", cause, n, out)
		}
	}
}
