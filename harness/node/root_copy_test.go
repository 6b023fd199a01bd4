package node

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

const largestFixture = "../../fixtures/nodes/h100x8-iommu-passthrough.ttar"

// unpacked is a fixture node unpacked into a fresh directory.
func unpacked(t testing.TB, archive string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ttar.ExtractFile(archive, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func packed(t *testing.T, dir string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ttar.Write(&b, dir); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The copy is the recording, entry for entry: files, links (as links,
// dangling ones included) and directories.
func TestCopyRootCopiesARecordingWhole(t *testing.T) {
	src := unpacked(t, largestFixture)
	if err := os.Symlink("../../../bus/pci/drivers/nvidia", filepath.Join(src, "sys/bus/pci/devices/driver")); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := CopyRoot(src, dst, false); err != nil {
		t.Fatal(err)
	}
	if a, b := packed(t, src), packed(t, dst); !bytes.Equal(a, b) {
		t.Errorf("the copy differs from the recording (%d bytes packed, want %d)", len(b), len(a))
	}
	if _, err := Open(dst); err != nil {
		t.Errorf("the copy: %v", err)
	}
}

// What could block a read, lead it outside or be changed by someone else
// is refused, naming the entry; a trusted root may be writable by others,
// but never holds a pipe or a hard link.
func TestCopyRootRefusesWhatCouldBlockLeadOutsideOrChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting a device node and a file of another user's needs root")
	}
	const hostname = "proc/sys/kernel/hostname"
	replace := func(make func(p string) error) func(string) error {
		return func(root string) error {
			p := filepath.Join(root, hostname)
			if err := os.Remove(p); err != nil {
				return err
			}
			return make(p)
		}
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("SECRET-SENTINEL\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		plant     func(root string) error
		want      string // the error's text, ROOT for the root
		untrusted bool   // refused only when the root is not trusted
	}{
		{"a named pipe", replace(func(p string) error { return syscall.Mkfifo(p, 0o644) }),
			`"ROOT/proc/sys/kernel/hostname" is a named pipe, not a recorded file`, false},
		{"a character device", replace(func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|3) }),
			`"ROOT/proc/sys/kernel/hostname" is a character device, not a recorded file`, false},
		{"a hard link to a file outside", replace(func(p string) error { return os.Link(outside, p) }),
			`"ROOT/proc/sys/kernel/hostname" has 2 hard links`, false},
		{"a group-writable directory", func(root string) error { return os.Chmod(filepath.Join(root, "proc/sys"), 0o775) },
			`"ROOT/proc/sys" has mode 0775, which its group or others can write: writable by another user; chmod -R go-w it, or pass --trust-root`, true},
		{"a world-writable file", func(root string) error { return os.Chmod(filepath.Join(root, hostname), 0o666) },
			`"ROOT/proc/sys/kernel/hostname" has mode 0666`, true},
		{"a file of another user's", func(root string) error { return os.Chown(filepath.Join(root, hostname), 65534, 65534) },
			`"ROOT/proc/sys/kernel/hostname" belongs to uid 65534, not to root or uid 0 running gdrcheck: writable by another user; chown -R it, or pass --trust-root`, true},
		{"a root of another user's", func(root string) error { return os.Chown(root, 65534, 65534) },
			`"ROOT" belongs to uid 65534`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := unpacked(t, "../../fixtures/nodes/h200x2-nv18-vm.ttar")
			if err := c.plant(root); err != nil {
				t.Fatal(err)
			}
			err := CopyRoot(root, t.TempDir(), false)
			want := strings.ReplaceAll(c.want, "ROOT", root)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("CopyRoot = %v, want an error saying %s", err, want)
			}
			if errors.Is(err, ErrUntrusted) != c.untrusted {
				t.Errorf("errors.Is(%v, ErrUntrusted) = %v", err, !c.untrusted)
			}
			err = CopyRoot(root, t.TempDir(), true)
			if c.untrusted && err != nil {
				t.Errorf("trusted: %v", err)
			}
			if !c.untrusted && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("trusted: CopyRoot = %v, want an error saying %s", err, want)
			}
		})
	}
}

// The live host is a mounted host; a tree whose proc and sys only link
// to the live host's is not, and is copied and walked like any other.
func TestLinksToTheKernelsProcAndSysAreNoMountedHost(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"proc", "sys"} {
		if err := os.Symlink("/"+d, filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	if MountedHost(root) {
		t.Error("links to /proc and /sys were taken for a mounted host")
	}
	if !MountedHost("/") {
		t.Error("/ has procfs at /proc and sysfs at /sys")
	}
	if err := CheckMountedHost("/"); err != nil {
		t.Error(err)
	}
}

// The copy of the largest fixture node, as run and inventory make it of a
// recorded directory:
//
//	go test -run '^$' -bench CopyRoot ./harness/node/
func BenchmarkCopyRoot(b *testing.B) {
	src := unpacked(b, largestFixture)
	for b.Loop() {
		dst, err := os.MkdirTemp(b.TempDir(), "copy-")
		if err != nil {
			b.Fatal(err)
		}
		if err := CopyRoot(src, dst, false); err != nil {
			b.Fatal(err)
		}
	}
}
