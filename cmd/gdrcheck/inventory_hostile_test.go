package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/inventory"
)

// The encoders' hostile-input tests run in process (inventory/); these
// keep what only the command does: the exit code, the flag that names
// the refusal on stderr, and the table's title.

// hostileRoot is the 8 x H100 node with one recorded string changed by edit.
func hostileRoot(t *testing.T, edit func(root string)) string {
	t.Helper()
	root := nodetest.Extracted(t, nodes+"h100x8-nvswitch-cx7-pix.ttar")
	edit(root)
	return root
}

func writeRecorded(t *testing.T, root, rel, v string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, rel), []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// renameNIC gives mlx5_0 (GPU 0's rail) another name.
func renameNIC(t *testing.T, root, name string) { nodetest.RenameNIC(t, root, "mlx5_0", name) }

// A refused identifier exits 2 with --format and the field named on
// stderr, cleaned of the recording's ESC and CR, and no map: env writes
// the fragment that fails.
func TestInventoryMapsRefuseAHostileIdentifierWithExit2(t *testing.T) {
	t.Parallel()
	root := hostileRoot(t, func(root string) {
		nodetest.EditNVMLGPU(t, root, 0, func(g map[string]any) {
			g["uuid"] = "GPU-6a1c0f3e-0000-4000-8000-000000000000\n$(touch X)\r\x1b]0;pwned\x07"
		})
	})
	for format, want := range map[string]string{"env": inventory.RefusedEnv, "gres": ""} {
		r := gdrcheck(t, "inventory", "--host-root", root, "--format", format)
		if r.code != 2 || !strings.Contains(r.stderr, "--format "+format+": gpus[0]: uuid") || !strings.Contains(r.stderr, "; the map is not written") || r.stdout != want {
			t.Errorf("%s: exit %d, want 2 naming the uuid\nstderr: %s\nstdout: %s", format, r.code, r.stderr, r.stdout)
		}
		if strings.ContainsAny(r.stderr, "\x1b\r") {
			t.Errorf("%s: stderr carries the recording's ESC or CR: %q", format, r.stderr)
		}
	}
}

// The inventory's table title and its stderr lines print a recorded host
// name's ESC and newline as escapes.
func TestInventoryTitlePrintsAHostileHostnameAsText(t *testing.T) {
	t.Parallel()
	root := hostileRoot(t, func(root string) {
		writeRecorded(t, root, "proc/sys/kernel/hostname", "evil\x1b]0;pwned\x07\r\n## forged")
	})
	r := gdrcheck(t, "inventory", "--host-root", root)
	if r.code != 0 || strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07\r") || !strings.Contains(r.stdout, `GPU rails on evil\x1b]0;pwned\x07\r\n## forged`+"\n") {
		t.Errorf("exit %d:\n%q\n%q", r.code, r.stdout, r.stderr)
	}
}
