package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/inventory"
)

// The maps are inventory's encoders, tested there in process; the
// command writes exactly what they write, for the evidence it collects,
// and exits as the inventory does.
func TestInventoryMapsAreTheEncodersOutput(t *testing.T) {
	t.Parallel()
	root := nodes + "l40s8-pcie-cx7-pxb.ttar"
	ev := nodetest.Collected(t, nodetest.Extracted(t, root))
	inv := ev.Inventory()
	for format, encode := range map[string]func(*bytes.Buffer) error{
		"gres": func(b *bytes.Buffer) error { return inventory.WriteGres(b, inv, ev, version) },
		"env":  func(b *bytes.Buffer) error { return inventory.WriteEnv(b, inv, version) },
		"yaml": func(b *bytes.Buffer) error { return inventory.WriteYAML(b, inv) },
	} {
		var want bytes.Buffer
		if err := encode(&want); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		r := gdrcheck(t, "inventory", "--host-root", root, "--format", format)
		if r.code != 0 || r.stdout != want.String() || r.stderr != "" {
			t.Errorf("%s: exit %d, stderr %q, output\n%s\nwant\n%s", format, r.code, r.stderr, r.stdout, want.String())
		}
	}
}

// A GPU whose device minor nothing gives has no gres line, and the map
// exits 2 naming it.
func TestInventoryGresWithoutADeviceMinorExits2(t *testing.T) {
	t.Parallel()
	root := nodetest.Extracted(t, nodes+"h100x8-nvswitch-cx7-pix.ttar")
	nodetest.EditNVMLGPU(t, root, 2, func(g map[string]any) { delete(g, "minor") })
	if err := os.Remove(filepath.Join(root, "proc/driver/nvidia/gpus/0000:38:00.0/information")); err != nil {
		t.Fatal(err)
	}
	r := gdrcheck(t, "inventory", "--host-root", root, "--format", "gres")
	if r.code != 2 || strings.Count(r.stdout, "Name=gpu") != 7 || !strings.Contains(r.stdout, "# GPU 2 0000:38:00.0: left out: its device minor") || !strings.Contains(r.stderr, "device minor unknown for GPU(s) 0000:38:00.0") {
		t.Errorf("exit %d, want 2 and 7 lines without GPU 2:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
