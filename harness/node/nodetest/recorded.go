package nodetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

// Extracted unpacks a recorded node (fixtures/nodes/<name>.ttar) into a
// temporary directory of t and returns it, for a test to edit or open.
func Extracted(t testing.TB, archive string) string {
	t.Helper()
	root := t.TempDir()
	if err := ttar.ExtractFile(archive, root); err != nil {
		t.Fatal(err)
	}
	return root
}

// Collected opens the node tree at root and collects it the way
// `gdrcheck inventory --host-root` does.
func Collected(t testing.TB, root string) *node.Evidence {
	t.Helper()
	h, err := node.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return node.Collect(h, node.DefaultSources(h))
}

// EditNVML rewrites the gdrcheck/nvml.json recording of the tree at root.
func EditNVML(t testing.TB, root string, edit func(rec map[string]any)) {
	t.Helper()
	p := filepath.Join(root, "gdrcheck/nvml.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	edit(rec)
	if b, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// EditNVMLGPU rewrites GPU i of the tree's NVML recording.
func EditNVMLGPU(t testing.TB, root string, i int, edit func(gpu map[string]any)) {
	t.Helper()
	EditNVML(t, root, func(rec map[string]any) { edit(rec["gpus"].([]any)[i].(map[string]any)) })
}

// RenameNIC gives the RDMA device old another name, in its device
// directory and its sys/class/infiniband link: a file name holds any byte
// but '/' and NUL, so a recording can name a NIC anything.
func RenameNIC(t testing.TB, root, old, name string) {
	t.Helper()
	link := filepath.Join(root, "sys/class/infiniband", old)
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	dev := filepath.Join(filepath.Dir(link), target)
	if err := os.Rename(dev, filepath.Join(filepath.Dir(dev), name)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(filepath.Dir(target), name), filepath.Join(root, "sys/class/infiniband", name)); err != nil {
		t.Fatal(err)
	}
}
