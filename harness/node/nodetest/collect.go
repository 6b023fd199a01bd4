package nodetest

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// Probed builds a node in a temporary directory of t and collects and
// probes it the way `gdrcheck run --host-root` does with the kernel suite
// selected.
func Probed(t testing.TB, build func(dir string) (*Tree, error)) *node.Evidence {
	t.Helper()
	dir := t.TempDir()
	if _, err := build(dir); err != nil {
		t.Fatal(err)
	}
	return ProbedRoot(t, dir)
}

// ProbedRoot collects and probes the node whose tree is root (built, or a
// recording Extracted) as Probed does.
func ProbedRoot(t testing.TB, root string) *node.Evidence {
	t.Helper()
	h, err := node.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	src := node.DefaultSources(h)
	ev := node.Collect(h, src)
	ev.ProbeGPUDirect(src.GPUDirect, src.GPUDirectErr)
	return ev
}

// Named returns the builder of the fixture node of that name; it fails t
// when there is none.
func Named(t testing.TB, name string) func(dir string) (*Tree, error) {
	t.Helper()
	for _, f := range Fixtures() {
		if f.Name == name {
			return f.Build
		}
	}
	t.Fatalf("no fixture node %q in nodetest.Fixtures", name)
	return nil
}
