package node

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

// A recorded tree planted with an entry that would lead a read outside it
// is refused by Open, naming the entry, before anything reads through it.
func TestOpenRefusesATreeThatLeadsOutside(t *testing.T) {
	const secret = "SECRET-SENTINEL"
	osrelease := "proc/sys/kernel/osrelease"
	link := func(target string) func(root, out string) error {
		return func(root, out string) error {
			p := filepath.Join(root, osrelease)
			os.Remove(p)
			return os.Symlink(strings.ReplaceAll(target, "OUT", out), p)
		}
	}
	cases := []struct {
		name  string
		plant func(root, out string) error
		want  string
		leaks bool // a read by path through the tree gets the secret
	}{
		{"osrelease linked to a host file", link("OUT/secret"), `"ROOT/proc/sys/kernel/osrelease" links to "OUT/secret", which does not resolve inside "ROOT/proc": statat sys/kernel/osrelease: path escapes from parent`, true},
		{"osrelease climbing out", link("../../../../outside/secret"), `"ROOT/proc/sys/kernel/osrelease" links to "../../../../outside/secret"`, true},
		{"a link from proc into sys", link("../../../sys/kernel/osrelease"), `links to "../../../sys/kernel/osrelease", which does not resolve inside "ROOT/proc"`, false},
		// Each of l1...l8 resolves inside on its own; osrelease climbs
		// out through all of them, nine links in all: more than os.Root
		// follows, fewer than the kernel does.
		{"a chain of links longer than os.Root follows", func(root, out string) error {
			prev := "."
			for i := 1; i <= 8; i++ {
				if err := os.Symlink(prev, filepath.Join(root, "proc", fmt.Sprint("l", i))); err != nil {
					return err
				}
				prev = fmt.Sprint("l", i)
			}
			return link("../../l8/../../outside/secret")(root, out)
		}, `links to "../../l8/../../outside/secret", which does not resolve inside "ROOT/proc": statat sys/kernel/osrelease: too many levels of symbolic links`, true},
		{"a named pipe", func(root, _ string) error {
			p := filepath.Join(root, osrelease)
			os.Remove(p)
			return syscall.Mkfifo(p, 0o644)
		}, `"ROOT/proc/sys/kernel/osrelease" is a named pipe, not a recorded file`, false},
		{"sys itself a link to the host's", func(root, _ string) error {
			if err := os.RemoveAll(filepath.Join(root, "sys")); err != nil {
				return err
			}
			return os.Symlink("/sys", filepath.Join(root, "sys"))
		}, `"ROOT/sys" links to "/sys", which does not resolve inside "ROOT"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			root, out := filepath.Join(base, "root"), filepath.Join(base, "outside")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, "secret"), []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := ttar.ExtractFile("../../fixtures/nodes/h200x2-nv18-vm.ttar", root); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(root); err != nil {
				t.Fatalf("the fixture itself: %v", err)
			}
			if err := c.plant(root, out); err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Lstat(filepath.Join(root, osrelease)); fi.Mode()&fs.ModeNamedPipe == 0 {
				// A pipe would block the read, as it would block gdrcheck.
				if b, _ := os.ReadFile(filepath.Join(root, osrelease)); c.leaks != strings.Contains(string(b), secret) {
					t.Fatalf("read by path through the planted tree: %q", b)
				}
			}
			_, err := Open(root)
			want := strings.NewReplacer("ROOT", root, "OUT", out).Replace(c.want)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Open = %v, want an error saying %s", err, want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the file outside: %v", err)
			}
		})
	}
}

// Links that resolve to nothing inside the tree, as a snapshot's driver
// links do, are no reason to refuse it; the live host is not walked.
func TestOpenKeepsDanglingLinksInside(t *testing.T) {
	root := t.TempDir()
	if err := ttar.ExtractFile("../../fixtures/nodes/h200x2-nv18-vm.ttar", root); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../bus/pci/drivers/nvidia", filepath.Join(root, "sys/bus/pci/devices/driver")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("/"); err != nil {
		t.Fatal(err)
	}
}

// A rootfs holds absolute links outside what is read by path (a
// container image's /usr/lib); they are read through os.Root, as in a
// chroot, and are no reason to refuse the tree.
func TestOpenWalksOnlyWhatIsReadByPath(t *testing.T) {
	root := t.TempDir()
	if err := ttar.ExtractFile("../../fixtures/nodes/h200x2-nv18-vm.ttar", root); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/alternatives/libblas.so.3", filepath.Join(lib, "libblas.so.3")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err != nil {
		t.Errorf("a rootfs with an absolute library link: %v", err)
	}
	// The same link where a read follows it by path is refused.
	if err := os.Symlink("/etc/alternatives/libblas.so.3", filepath.Join(root, "sys", "blas")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err == nil {
		t.Error("an absolute link under sys/ was accepted")
	}
}

// The live host's proc and sys are the kernel's: a host mounted at /host
// opens without a walk of its whole filesystem.
func TestTheKernelsOwnProcAndSysAreAMountedHost(t *testing.T) {
	if !MountedHost("/") {
		t.Error("/ has procfs at /proc and sysfs at /sys")
	}
	root := t.TempDir()
	if err := ttar.ExtractFile("../../fixtures/nodes/h200x2-nv18-vm.ttar", root); err != nil {
		t.Fatal(err)
	}
	if MountedHost(root) {
		t.Error("an unpacked recording is not a mounted host")
	}
}
