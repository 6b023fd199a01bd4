package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// A job whose nodes/n2/results.json is a copy of vm's and whose n3 holds
// a foreign node's: collect merges vm once, makes n2 and n3 unevaluable
// saying why, and exits 2, where it merged vm twice and exited 0.
func TestCollectRefusesACopiedAndAForeignResults(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(realResults + "h200x2-nv18-collectives-negative.results.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.json"), []byte(`{"id": "4711", "nodes": ["vm", "n2", "n3"]}`), 0o644)
	for name, body := range map[string]string{
		"vm": string(good),
		"n2": string(good),
		"n3": strings.Replace(string(good), `"name": "vm"`, `"name": "gpu-other-cluster"`, 1),
	} {
		os.MkdirAll(filepath.Join(dir, "nodes", name), 0o755)
		os.WriteFile(filepath.Join(dir, "nodes", name, "results.json"), []byte(body), 0o644)
	}
	r := gdrcheck(t, "collect", dir)
	res, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.stderr)
	}
	var names []string
	for _, n := range res.Nodes {
		names = append(names, n.Name+"="+n.Status)
	}
	if got := strings.Join(names, " "); r.code != 2 || got != "vm=evaluated n2=unevaluable n3=unevaluable" {
		t.Fatalf("exit %d, nodes %s; want 2 and vm once", r.code, got)
	}
	if why := res.Nodes[1].Reason; !strings.Contains(why, `results.json reports node "vm", not n2: a copy of another node's results or a foreign node's`) {
		t.Errorf("n2: %q", why)
	}
	if why := res.Nodes[2].Reason; !strings.Contains(why, `reports node "gpu-other-cluster", not n3`) {
		t.Errorf("n3: %q", why)
	}
}
