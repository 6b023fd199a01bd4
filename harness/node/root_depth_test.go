package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// deepTree makes root/sys/<d/d/.../d> depth deep, one mkdirat at a time
// from the last directory's fd, so building it is linear in depth.
func deepTree(t testing.TB, depth int) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"sys", "proc"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fd, err := unix.Open(filepath.Join(root, "sys"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < depth; i++ {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
	return root
}

// A tree thousands of directories deep is refused, naming the limit, by
// the check of a tree read in place, by CopyRoot and by Open's
// containment walk; each walks one directory fd at a time, so refusing
// costs the 256 levels it reads, not the depth squared. (BenchmarkDeepTree
// times 10,000 levels; 2,000 here keep the test's mkdir and cleanup short.)
func TestATreeNestedThousandsDeepIsRefused(t *testing.T) {
	root := deepTree(t, 2000)
	for name, f := range map[string]func() error{
		"CheckRoot": func() error { return CheckRoot(root) },
		"CopyRoot":  func() error { return CopyRoot(root, t.TempDir(), true) },
		"Open":      func() error { _, err := Open(root); return err },
	} {
		err := f()
		if !errors.Is(err, errTooDeep) || !strings.Contains(err.Error(), "more than 256 levels") {
			t.Errorf("%s: %v, want refused as nested more than 256 levels", name, errLine(err))
		}
	}
}

func TestATreeWithinTheDepthLimitIsRead(t *testing.T) {
	root := deepTree(t, 200)
	if err := CheckRoot(root); err != nil {
		t.Fatalf("CheckRoot: %v", err)
	}
	if _, err := Open(root); err != nil {
		t.Fatalf("Open: %v", err)
	}
	// A pipe at the bottom is still found.
	p := filepath.Join(root, "sys", strings.Repeat("d/", 200), "fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("Open with a pipe 200 deep: %v, want refused", err)
	}
}

// BenchmarkDeepTree times Open over trees 64 and 250 deep and its
// refusal of one 10,000 deep: about 2 ms each on a 2-core machine, where
// the fs.WalkDir walk over an os.Root took 4.6 s at 1,000 levels, 17 s at
// 2,000 and 67 s at 4,000 (quadratic: each entry's path resolved again).
func BenchmarkDeepTree(b *testing.B) {
	for _, depth := range []int{64, 250, 10000} {
		root := deepTree(b, depth)
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			for range b.N {
				_, err := Open(root)
				if (depth > MaxTreeDepth) != errors.Is(err, errTooDeep) {
					b.Fatal(err)
				}
			}
		})
	}
}

func errLine(err error) string {
	if err == nil {
		return "nil"
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:100] + "..." + s[len(s)-100:]
	}
	return s
}
