package node_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// A snapshot must hold everything the collector reads: collecting the
// snapshot of a node gives the evidence of the node itself.
func TestSnapshotOfANodeCollectsToTheSameEvidence(t *testing.T) {
	for _, f := range nodetest.Fixtures() {
		t.Run(f.Name, func(t *testing.T) {
			src := t.TempDir()
			if _, err := f.Build(src); err != nil {
				t.Fatal(err)
			}
			h, err := node.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			sources := node.DefaultSources(h)
			want := node.Collect(h, sources)
			want.ProbeGPUDirect(sources.GPUDirect, sources.GPUDirectErr)

			dst := t.TempDir()
			lib := sources.NVML
			if lib == nil {
				t.Fatalf("fixture has no NVML recording: %v", sources.NVMLErr)
			}
			if _, err := h.Snapshot(dst, sources, "test"); err != nil {
				t.Fatal(err)
			}
			hs, err := node.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			ss := node.DefaultSources(hs)
			got := node.Collect(hs, ss)
			got.ProbeGPUDirect(ss.GPUDirect, ss.GPUDirectErr)
			want.Host.Root, got.Host.Root = "", ""
			relabel(want, src)
			relabel(got, dst)
			a, _ := json.MarshalIndent(want, "", " ")
			b, _ := json.MarshalIndent(got, "", " ")
			if string(a) != string(b) {
				os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0)
				t.Errorf("evidence from the snapshot differs:\n--- node\n%s\n--- snapshot\n%s", a, b)
			}
		})
	}
}

// relabel removes the root from problem messages so two roots compare.
func relabel(e *node.Evidence, root string) {
	e.Host.Root = root
	e.Relabel("ROOT")
	e.Host.Root = ""
}
