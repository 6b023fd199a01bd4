package topology

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// translating builds the named fixture node with every device in one
// translating (DMA) IOMMU group and, where kernel is not "", that kernel.
func translating(t *testing.T, name, kernel string) *node.Evidence {
	t.Helper()
	dir := t.TempDir()
	tree, err := nodetest.Named(t, name)(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree.IOMMUGroup("DMA", tree.Addresses()...)
	if kernel != "" {
		if err := os.WriteFile(filepath.Join(dir, "proc/sys/kernel/osrelease"), []byte(kernel+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev := node.Collect(h, node.DefaultSources(h))
	if len(ev.GPUs) == 0 || ev.GPUs[0].IOMMU.Mode != node.IOMMUTranslating {
		t.Fatalf("%s: the GPUs are not behind a translating IOMMU: %+v", name, ev.GPUs)
	}
	return ev
}

func TestGraceBefore611TranslatingIsANoteNotAFailure(t *testing.T) {
	ev := translating(t, "gh200x4-c2c-cx7", "")
	bad, note := iommuFindings(ev)
	if len(bad) != 0 {
		t.Errorf("Grace on kernel %s: findings %q", ev.Host.Kernel, bad)
	}
	if !strings.Contains(note, "iommu.passthrough=0") || !strings.Contains(note, graceACSSource) || !strings.Contains(note, "6.8.0-1021-nvidia-64k") {
		t.Errorf("note %q", note)
	}
}

func TestGraceOn611TranslatingStillFails(t *testing.T) {
	bad, note := iommuFindings(translating(t, "gh200x4-c2c-cx7", "6.11.0-1007-nvidia-64k"))
	if len(bad) == 0 || note != "" {
		t.Errorf("findings %q, note %q", bad, note)
	}
}

func TestX86TranslatingStillFails(t *testing.T) {
	bad, note := iommuFindings(translating(t, "h100x8-iommu-translating", ""))
	if len(bad) == 0 || note != "" || !strings.Contains(bad[0], "translating") {
		t.Errorf("findings %q, note %q", bad, note)
	}
}
