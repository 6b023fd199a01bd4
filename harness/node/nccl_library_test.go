package node

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// ncclTree is a host root holding only what the NCCL collector reads:
// files (recorded empty) and links, by path relative to the root.
func ncclTree(t *testing.T, files []string, links map[string]string) Host {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"sys", "proc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for l, target := range links {
		p := filepath.Join(root, l)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNCCLLibraryReadsTheVersionFromTheFileTheSonameLinksTo(t *testing.T) {
	// The layout of Debian's libnccl2 2.28.3 on the real one-H200 node:
	// libnccl.so -> libnccl.so.2 -> libnccl.so.2.28.3.
	h := ncclTree(t, []string{"usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3", "usr/lib/x86_64-linux-gnu/libnccl_static.a"}, map[string]string{
		"usr/lib/x86_64-linux-gnu/libnccl.so":   "libnccl.so.2",
		"usr/lib/x86_64-linux-gnu/libnccl.so.2": "libnccl.so.2.28.3",
	})
	got, err := h.NCCLLibrary()
	if err != nil {
		t.Fatal(err)
	}
	want := &NCCLLibrary{Path: "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3", Version: "2.28.3",
		Found: []NCCLFile{{Path: "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3", Version: "2.28.3"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestNCCLLibrarySearchesTheRecordedLDLibraryPathFirst(t *testing.T) {
	h := ncclTree(t, []string{
		"usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
		"opt/nccl-2.21/lib/libnccl.so.2.21.5",
	}, map[string]string{
		"usr/lib/x86_64-linux-gnu/libnccl.so.2": "libnccl.so.2.28.3",
		"opt/nccl-2.21/lib/libnccl.so.2":        "libnccl.so.2.21.5",
	})
	// As the real node's: a directory without NCCL and an empty entry
	// before the one holding it.
	if err := os.MkdirAll(h.path("gdrcheck"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.path(ldLibraryPathRecording), []byte("/usr/local/nvidia/lib64::/opt/nccl-2.21/lib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := h.NCCLLibrary()
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != "/opt/nccl-2.21/lib/libnccl.so.2.21.5" || got.Version != "2.21.5" {
		t.Errorf("in effect %s %s, want the LD_LIBRARY_PATH one, 2.21.5", got.Path, got.Version)
	}
	want := []NCCLFile{{"/opt/nccl-2.21/lib/libnccl.so.2.21.5", "2.21.5"}, {"/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3", "2.28.3"}}
	if !reflect.DeepEqual(got.Found, want) {
		t.Errorf("found %+v, want %+v in loader order", got.Found, want)
	}
}

func TestNCCLLibraryOfAWheelHasNoVersionInItsName(t *testing.T) {
	// pip's nvidia-nccl-cu12 ships libnccl.so.2 as a file of its own.
	h := ncclTree(t, []string{"usr/local/lib/libnccl.so.2"}, nil)
	got, err := h.NCCLLibrary()
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != "/usr/local/lib/libnccl.so.2" || got.Version != "" {
		t.Errorf("got %+v, want the file with no version", got)
	}
}

func TestNCCLLibraryWithoutASonameLinkIsTheNewestVersionedFile(t *testing.T) {
	h := ncclTree(t, []string{"usr/lib64/libnccl.so.2.9.9", "usr/lib64/libnccl.so.2.18.1"}, nil)
	got, err := h.NCCLLibrary()
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "2.18.1" || len(got.Found) != 2 {
		t.Errorf("got %+v, want 2.18.1 of two found", got)
	}
}

func TestNCCLLibraryAbsentAndLinksOutOfTheRoot(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "libnccl.so.2.99.0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := ncclTree(t, nil, map[string]string{
		// A recording must not reach the machine replaying it.
		"usr/local/nccl/lib":   outside,
		"usr/lib/libnccl.so.2": filepath.Join(outside, "libnccl.so.2.99.0"),
	})
	got, err := h.NCCLLibrary()
	if !errors.Is(err, ErrAbsent) || got != nil {
		t.Errorf("got %+v, %v; want ErrAbsent: nothing inside the root", got, err)
	}
}

// A snapshot records NCCL by name (links as links, the library as an
// empty file) and the LD_LIBRARY_PATH it was searched with, so the
// replay finds the same NCCL.
func TestSnapshotRecordsNCCLByName(t *testing.T) {
	h := ncclTree(t, []string{"sys/bus/pci/devices/.keep", "sys/module/nvidia/version", "proc/sys/kernel/hostname", "usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"}, map[string]string{
		"usr/lib/x86_64-linux-gnu/libnccl.so.2": "libnccl.so.2.28.3",
		"opt/nccl/lib/libnccl.so.2":             "/opt/nccl/lib/libnccl.so.2.21.5",
	})
	if err := os.WriteFile(h.path("opt/nccl/lib/libnccl.so.2.21.5"), []byte("\x7fELF not read"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(h.path("gdrcheck"), 0o755)
	if err := os.WriteFile(h.path(ldLibraryPathRecording), []byte("/opt/nccl/lib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := h.NCCLLibrary()
	if err != nil {
		t.Fatal(err)
	}
	// An absolute link in a tree names a path of the tree, as in a
	// chroot.
	if want.Version != "2.21.5" {
		t.Fatalf("before the snapshot: %+v", want)
	}
	dst := t.TempDir()
	if _, err := h.Snapshot(dst, Sources{NVML: ReplayNVML(NVMLRecording{InitError: "ERROR_DRIVER_NOT_LOADED"})}, "test"); err != nil {
		t.Fatal(err)
	}
	hs, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	got, err := hs.NCCLLibrary()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replayed %+v\nrecorded %+v", got, want)
	}
	if b, err := os.ReadFile(hs.path("opt/nccl/lib/libnccl.so.2.21.5")); err != nil || len(b) != 0 {
		t.Errorf("library recorded as %q, %v; want an empty file", b, err)
	}
	if l, err := os.Readlink(hs.path("opt/nccl/lib/libnccl.so.2")); err != nil || l != "libnccl.so.2.21.5" {
		t.Errorf("soname link recorded as %q, %v; want it relative", l, err)
	}
}

// On the live host the process's own LD_LIBRARY_PATH comes first, and its
// absolute paths are read as they are.
func TestNCCLLibraryOnTheLiveHostSearchesLDLibraryPathFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "libnccl.so.2.21.5"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libnccl.so.2.21.5", filepath.Join(dir, "libnccl.so.2")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LD_LIBRARY_PATH", "/nonexistent/lib:"+dir)
	h, err := Open("/")
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.NCCLLibrary()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "libnccl.so.2.21.5"); got.Path != want || got.Version != "2.21.5" || got.Found[0].Path != want {
		t.Errorf("got %+v, want %s first", got, want)
	}
}
