package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeUCXLogCorpusGoldens runs analyze ucx-log on every real
// excerpt in fixtures/corpus/ucx and checks the exit its golden, written
// before the code, gives.
func TestAnalyzeUCXLogCorpusGoldens(t *testing.T) {
	t.Parallel()
	goldens, err := filepath.Glob(corpusDir + "golden/ucx/*.json")
	if err != nil || len(goldens) < 4 {
		t.Fatalf("want at least 4 ucx goldens, found %d (%v)", len(goldens), err)
	}
	for _, g := range goldens {
		name := strings.TrimSuffix(filepath.Base(g), ".json")
		t.Run(name, func(t *testing.T) {
			var want struct{ Exit int }
			b, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			r := gdrcheck(t, "analyze", "ucx-log", filepath.Join(corpusDir, "ucx", name+".txt"))
			if r.code != want.Exit {
				t.Errorf("exit %d, golden says %d\nstdout: %s\nstderr: %s", r.code, want.Exit, r.stdout, r.stderr)
			}
		})
	}
}
