package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

// Recording this (test) host into one archive leaves exactly that archive,
// readable by anyone, holding the recording's metadata: nothing of the
// staging directory or the temporary file is left beside it.
func TestSnapshotToAnArchiveLeavesOneCompleteFile(t *testing.T) {
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
