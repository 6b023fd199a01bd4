package reports_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// The three files are one set: when one cannot be written, results.json,
// which every other view is rebuilt from, stays the previous run's, and
// nothing staged is left behind.
func TestWriteAllLeavesThePreviousSetWhenAFileCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	old := &results.Results{Schema: results.Schema, Tool: results.Tool{Version: "old"}}
	if err := reports.WriteAll(dir, old, reports.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	// junit.xml cannot be replaced: a directory holding a file is there.
	os.Remove(filepath.Join(dir, "junit.xml"))
	os.MkdirAll(filepath.Join(dir, "junit.xml", "x"), 0o755)
	next := &results.Results{Schema: results.Schema, Tool: results.Tool{Version: "new"}}
	if err := reports.WriteAll(dir, next, reports.WriteOptions{}); err == nil || !strings.Contains(err.Error(), "junit.xml") {
		t.Fatalf("error %v, want one naming junit.xml", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if string(after) != string(before) {
		t.Errorf("results.json changed although the set was not written")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("staged file %s left behind", e.Name())
		}
	}
}
