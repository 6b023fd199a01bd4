package results

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

func TestAStagedDirectoryReplacesTheOldOneWhole(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(logs, "old.log"), []byte("old"), 0o644)
	var s FileSet
	tmp, err := s.AddDir(logs)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tmp, "new.log"), []byte("new"), 0o644)
	if got := names(t, logs); !slices.Equal(got, []string{"old.log"}) {
		t.Errorf("before Commit logs/ holds %q", got)
	}
	if err := s.Add(filepath.Join(dir, "results.json"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, logs); !slices.Equal(got, []string{"new.log"}) {
		t.Errorf("logs/ holds %q, want only the new set's", got)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"logs", "results.json"}) {
		t.Errorf("%s holds %q: staging left behind", dir, got)
	}
}

func TestAnEmptyStagedDirectoryRemovesTheOldAndAbortRemovesStaging(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	os.MkdirAll(logs, 0o755)
	os.WriteFile(filepath.Join(logs, "old.log"), []byte("old"), 0o644)
	var s FileSet
	if _, err := s.AddDir(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("%s holds %q, want nothing: the set has no logs", dir, got)
	}
	var a FileSet
	tmp, err := a.AddDir(logs)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tmp, "x.log"), []byte("x"), 0o644)
	a.Abort()
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("after Abort %s holds %q", dir, got)
	}
}
