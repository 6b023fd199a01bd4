package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

// Recording this (test) host into one archive leaves exactly that archive,
// readable by anyone, holding the recording's metadata: nothing of the
// staging directory or the temporary file is left beside it.
func TestSnapshotToAnArchiveLeavesOneCompleteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "node.ttar")
	r := gdrcheck(t, "snapshot", "--out", out)
	if r.code != 0 {
		t.Fatalf("snapshot exited %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "into "+out) {
		t.Errorf("stdout does not name the archive: %q", r.stdout)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "node.ttar" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("--out's directory holds %v, want only node.ttar", names)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("archive mode %v, want 0644", fi.Mode().Perm())
	}

	root := t.TempDir()
	if err := ttar.ExtractFile(out, root); err != nil {
		t.Fatalf("archive does not extract: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(root, "gdrcheck", "snapshot.json"))
	if err != nil {
		t.Fatalf("archive lacks the recording's metadata: %v", err)
	}
	var meta struct{ Hostname, Tool string }
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("snapshot.json: %v", err)
	}
	host, _ := os.Hostname()
	if meta.Hostname != host || !strings.HasPrefix(meta.Tool, "gdrcheck ") {
		t.Errorf("snapshot.json says host %q tool %q, want host %q and gdrcheck", meta.Hostname, meta.Tool, host)
	}
}

// A snapshot records what each device node is, as it found it before NVML
// ran: here, in a private /dev, a real nvidiactl (195:255) and /dev/null
// bind-mounted over nvidia-uvm. A replay reads those facts back, marked
// recorded, so it judges the recorded container's nodes, not its own.
func TestSnapshotRecordsWhatEachDeviceNodeIs(t *testing.T) {
	t.Parallel()
	needRoot(t)
	out := filepath.Join(t.TempDir(), "rec")
	run := "mount -t tmpfs tmpfs /dev && mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/nvidiactl c 195 255 && touch /dev/nvidia-uvm && mount --bind /dev/null /dev/nvidia-uvm && exec " + bin + " snapshot --out " + out
	r := runCmd(t, exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", run))
	if r.code != 0 {
		t.Fatalf("snapshot exited %d: %s", r.code, r.stderr)
	}
	h, err := node.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.CollectContainer(&node.Evidence{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Recorded {
		t.Fatalf("the replay does not read gdrcheck/container.json: %+v", c)
	}
	got := map[string]string{}
	for _, d := range c.Devices {
		got[d.Path] = fmt.Sprintf("%s %v", d.Type, d.Number)
	}
	for path, want := range map[string]string{"/dev/nvidiactl": "character device 195:255", "/dev/nvidia-uvm": "character device 1:3"} {
		if got[path] != want {
			t.Errorf("%s recorded as %q, want %q", path, got[path], want)
		}
	}
}
