package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// Job directories and results.json files are untrusted (issue 20): a
// name in them builds no path outside, a link is not followed, a FIFO
// blocks nothing, and a document that judges nothing or says a key twice
// is bad input, named with its place.

// marker is planted outside the job directory; no output may carry it.
const marker = "OUTSIDE-SECRET-7f3a"

// passedNode is a node's results.json that passed, with a fact that says
// value (the marker, where it must not be read).
func passedNode(t *testing.T, name, value string) []byte {
	t.Helper()
	r := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: name, Status: results.NodeEvaluated,
		Facts:  []results.Fact{{Name: "gpu_model", Value: value}},
		Suites: []results.Suite{{Name: "topology", Specs: []results.Spec{{Name: "x", State: results.StatePassed}}}}}}}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// untrustedJob is base/a/job, a job directory of the given node names
// where node1 reported and passed, with the marker planted beside it, in
// base/ and base/a/: where "../../x" and its likes would lead.
func untrustedJob(t *testing.T, names ...string) (base, dir string) {
	t.Helper()
	base = t.TempDir()
	dir = filepath.Join(base, "a", "job")
	must(t, os.MkdirAll(filepath.Join(dir, "nodes", "node1"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "nodes", "node1", "results.json"), passedNode(t, "node1", "H200"), 0o644))
	for _, d := range []string{base, filepath.Join(base, "a")} {
		must(t, os.WriteFile(filepath.Join(d, "outside-secret.log"), []byte("last words "+marker+"\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(d, "outside-secret.json"), passedNode(t, "node1", marker), 0o644))
	}
	job, err := json.Marshal(map[string]any{"id": "4711", "nodes": names, "config": map[string]any{}, "version": "test"})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "job.json"), job, 0o644))
	return base, dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// plantedFiles is every file under base: what a test put there.
func plantedFiles(base string) map[string]bool {
	m := map[string]bool{}
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		m[p] = true
		return nil
	})
	return m
}

// noMarker fails if the marker is in the output or in any file under
// base but those planted before the run.
func noMarker(t *testing.T, base string, before map[string]bool, r result) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, marker) {
		t.Errorf("the marker reached the output:\n%s%s", r.stdout, r.stderr)
	}
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || before[p] {
			return nil
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), marker) {
			t.Errorf("the marker reached %s", p)
		}
		return nil
	})
}

func TestCollectRefusesNodeNamesThatAreNoHostnames(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"../../outside-secret", "a/b", "..", "node2\nnode3", "../outside-secret"} {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			base, dir := untrustedJob(t, "node1", bad)
			// What the old paths led to, inside and out.
			must(t, os.MkdirAll(filepath.Join(dir, "nodes", "a"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "nodes", "a", "b.log"), []byte(marker), 0o644))
			before := plantedFiles(base)
			r := gdrcheck(t, "collect", dir)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
			}
			want := fmt.Sprintf("%s: nodes[1]: not a node name: %q", filepath.Join(dir, "job.json"), bad)
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr %q\nwant %q", r.stderr, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
				t.Errorf("results.json written for bad input")
			}
			noMarker(t, base, before, r)
		})
	}
}

// A node's results.json and a node's log that are links to a file
// outside are not followed: each node is unevaluable, saying so.
func TestCollectFollowsNoLinkOutOfTheJobDirectory(t *testing.T) {
	t.Parallel()
	base, dir := untrustedJob(t, "node1", "node2", "node3")
	must(t, os.MkdirAll(filepath.Join(dir, "nodes", "node2"), 0o755))
	must(t, os.Symlink(filepath.Join(base, "outside-secret.json"), filepath.Join(dir, "nodes", "node2", "results.json")))
	must(t, os.Symlink(filepath.Join(base, "outside-secret.log"), filepath.Join(dir, "nodes", "node3.log")))
	before := plantedFiles(base)
	r := gdrcheck(t, "collect", dir)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	res, err := results.Read(filepath.Join(dir, "results.json"))
	must(t, err)
	got := map[string]results.Node{}
	for _, n := range res.Nodes {
		got[n.Name] = n
	}
	if n := got["node1"]; n.Status != results.NodeEvaluated {
		t.Errorf("node1: %s %s", n.Status, n.Reason)
	}
	for name, want := range map[string]string{
		"node2": "nodes/node2/results.json: not a regular file: a symbolic link, not read",
		"node3": "its log is refused: open " + filepath.Join(dir, "nodes", "node3.log") + ": not a regular file: a symbolic link, not read",
	} {
		if n := got[name]; n.Status != results.NodeUnevaluable || !strings.Contains(n.Reason, want) {
			t.Errorf("%s: %s %q\nwant unevaluable, %q", name, n.Status, n.Reason, want)
		}
	}
	validateJUnit(t, filepath.Join(dir, "junit.xml"))
	noMarker(t, base, before, r)
}

// A FIFO as a node's log or results.json is refused without opening it
// for a blocking read: collect ends.
func TestCollectDoesNotBlockOnAFIFO(t *testing.T) {
	t.Parallel()
	base, dir := untrustedJob(t, "node1", "node2", "node3")
	must(t, syscall.Mkfifo(filepath.Join(dir, "nodes", "node2.log"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "nodes", "node3"), 0o755))
	must(t, syscall.Mkfifo(filepath.Join(dir, "nodes", "node3", "results.json"), 0o644))
	before := plantedFiles(base)
	r := gdrcheck(t, "collect", dir)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	res, err := results.Read(filepath.Join(dir, "results.json"))
	must(t, err)
	for _, n := range res.Nodes[1:] {
		if n.Status != results.NodeUnevaluable || !strings.Contains(n.Reason, "not a regular file: a named pipe, not read") {
			t.Errorf("%s: %s %q", n.Name, n.Status, n.Reason)
		}
	}
	noMarker(t, base, before, r)
}

// report and compare refuse a document that judges nothing or says a key
// twice, naming the file and the place; either side of compare.
func TestReportAndCompareRefuseEmptyAndRepeatedDocuments(t *testing.T) {
	t.Parallel()
	const good = "../../fixtures/results/h200x2-nv18-all-suites.results.json"
	node := `{"name": "gpu1", "status": "evaluated", "facts": [{"name": "gpus", "value": "8"}], "suites": []}`
	for _, c := range []struct{ name, doc, want string }{
		{"schema alone", `{"schema":"gdrcheck.results/v1"}`, `no node: a results.json holds at least one`},
		{"no nodes", `{"schema":"gdrcheck.results/v1","nodes":[]}`, `no node: a results.json holds at least one`},
		{"a node without facts or specs", `{"schema":"gdrcheck.results/v1","nodes":[{"name":"gpu1","status":"evaluated","suites":[]}]}`, `nodes[0] (named "gpu1"): evaluated, yet it holds neither facts nor specs`},
		{"nodes twice", `{"schema":"gdrcheck.results/v1","nodes":[` + node + `],"nodes":[` + node + `]}`, `the top-level key "nodes" is given twice`},
		{"a node's name twice", `{"schema":"gdrcheck.results/v1","nodes":[{"name":"gpu1","name":"gpu2","status":"evaluated","facts":[{"name":"gpus","value":"8"}]}]}`, `nodes[0] (named "gpu2"): the key "name" is given twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "results.json")
			must(t, os.WriteFile(bad, []byte(c.doc), 0o644))
			for _, args := range [][]string{{"report", bad}, {"report", bad, "--format", "junit"}, {"compare", good, bad}, {"compare", bad, good}} {
				r := gdrcheck(t, args...)
				if r.code != 2 || !strings.Contains(r.stderr, bad) || !strings.Contains(r.stderr, c.want) {
					t.Errorf("%s: exit %d, stderr %q\nwant 2 and %q", strings.Join(args[:1], " "), r.code, r.stderr, c.want)
				}
				if strings.Contains(r.stdout, "no regression") {
					t.Errorf("%v: %s", args, r.stdout)
				}
			}
		})
	}
}

// compare GOOD against GOOD less one passed spec: a regression, named.
func TestCompareCallsAPassedSpecGoneARegression(t *testing.T) {
	t.Parallel()
	res, err := results.Read("../../fixtures/results/h200x2-nv18-all-suites.results.json")
	must(t, err)
	s := &res.Nodes[0].Suites[0]
	gone := s.Name + " / " + s.Specs[0].Name
	if s.Specs[0].State != results.StatePassed {
		t.Fatalf("%s is %s: pick a passed spec", gone, s.Specs[0].State)
	}
	s.Specs = s.Specs[1:]
	after := resultsDir(t, res)
	r := gdrcheck(t, "compare", "../../fixtures/results/h200x2-nv18-all-suites.results.json", after)
	if r.code != 1 || !strings.Contains(r.stdout, "passed -> absent") || !strings.Contains(r.stdout, "REGRESSED") {
		t.Errorf("exit %d, want 1 naming %s\n%s%s", r.code, gone, r.stdout, r.stderr)
	}
}
