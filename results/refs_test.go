package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refJob writes a job directory whose results.json holds node0 in full
// (failed) and refs to node1 and node2, node2's with an added suite; it
// returns the merged file's path.
func refJob(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ev := json.RawMessage(`{"gpus": [1, 2]}`)
	for i, name := range []string{"node1", "node2"} {
		own := &Results{Schema: Schema, Nodes: []Node{{Name: name, Status: NodeEvaluated, Facts: []Fact{{Name: "gpus", Value: "8"}},
			Suites: []Suite{{Name: "kernel", Specs: []Spec{{Name: "loads", State: StatePassed}}}}, Evidence: ev,
			Runs: []Run{{Suite: "collectives", Tool: "all_reduce_perf", Log: "logs/run" + string(rune('0'+i)) + ".log"}}}}}
		if err := os.MkdirAll(filepath.Join(dir, "nodes", name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := own.Write(filepath.Join(dir, "nodes", name, "results.json")); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	e := NewLineEncoder(&b)
	e.Node(Node{Name: "node0", Status: NodeEvaluated, Suites: []Suite{{Name: "kernel", Specs: []Spec{{Name: "loads", State: StateFailed, Message: "no"}}}}})
	e.Ref("node1", nil)
	e.Ref("node2", []Suite{{Name: SuiteCompare, Specs: []Spec{{Name: "keeps its verdicts", State: StatePassed}}}})
	if err := e.End(&Results{Tool: Tool{Version: "t"}}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "results.json")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestScanReadsEachRefFromTheNodesOwnFileInItsPlace(t *testing.T) {
	p := refJob(t)
	r, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range r.Nodes {
		names = append(names, n.Name)
		if n.Ref != "" {
			t.Errorf("%s: a read node carries its ref %q", n.Name, n.Ref)
		}
	}
	if strings.Join(names, ",") != "node0,node1,node2" {
		t.Fatalf("nodes %v, want node0,node1,node2 in the file's order", names)
	}
	if got := r.Nodes[1].Runs[0].Log; got != filepath.Join("nodes", "node1", "logs", "run0.log") {
		t.Errorf("node1's log %q: want it relative to the merged file", got)
	}
	if string(r.Nodes[1].Evidence) == "" || r.Nodes[1].Fact("gpus") != "8" {
		t.Errorf("node1 is not its own file's node in full: %+v", r.Nodes[1])
	}
	if s := r.Nodes[2].Suites; len(s) != 2 || s[1].Name != SuiteCompare {
		t.Errorf("node2's suites %+v: want kernel, then the compare suite the ref added", s)
	}
}

func TestIndexReadsARefOnlyWhenAskedFor(t *testing.T) {
	p := refJob(t)
	if err := os.Remove(filepath.Join(filepath.Dir(p), "nodes", "node2", "results.json")); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(p)
	if err != nil {
		t.Fatalf("the index reads no ref: %v", err)
	}
	defer x.Close()
	if x.Len() != 3 || strings.Join(x.Names(), ",") != "node0,node1,node2" {
		t.Fatalf("index of %v", x.Names())
	}
	if n, ok, err := x.Node("node1"); err != nil || !ok || n.Fact("gpus") != "8" {
		t.Errorf("node1: %v %v %+v", ok, err, n)
	}
	if _, ok, err := x.Node("nope"); ok || err != nil {
		t.Errorf("a node not in the file: %v %v", ok, err)
	}
	_, _, err = x.Node("node2")
	if err == nil || !strings.Contains(err.Error(), filepath.Join("nodes", "node2", "results.json")) || !strings.Contains(err.Error(), p) {
		t.Errorf("a ref whose file is gone: %v; want an error naming both files", err)
	}
	if _, err := Read(p); err == nil {
		t.Error("Read of a job whose ref's file is gone passed")
	}
}

// writeMerged writes a results.json of the given node entries, each a
// line, under dir.
func writeMerged(t *testing.T, dir, schema string, entries ...string) string {
	t.Helper()
	p := filepath.Join(dir, "results.json")
	doc := `{"schema": "` + schema + `", "nodes": [` + "\n" + strings.Join(entries, ",\n") + "\n" + `], "tool": {"version": "t"}}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestARefIsUntrusted(t *testing.T) {
	outside := t.TempDir()
	own := `{"schema": "gdrcheck.results/v2", "nodes": [{"name": "node1", "status": "evaluated", "facts": [{"name": "gpus", "value": "8"}], "suites": []}]}`
	if err := os.WriteFile(filepath.Join(outside, "results.json"), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, schema, entry, want string
		setup                     func(dir string)
	}{
		{"a path other than its own file's", Schema, `{"name": "node1", "ref": "../../etc/passwd"}`, `nodes[0] (named "node1"): ref "../../etc/passwd": want "nodes/node1/results.json"`, nil},
		{"a name that is no host name", Schema, `{"name": "../x", "ref": "nodes/../x/results.json"}`, `nodes[0]: a ref's name`, nil},
		{"a ref that says more", Schema, `{"name": "node1", "ref": "nodes/node1/results.json", "status": "evaluated"}`, "a ref holds only name, ref and the suites", nil},
		{"a ref in a v1 file", SchemaV1, `{"name": "node1", "ref": "nodes/node1/results.json"}`, `a ref in a results.json of schema "gdrcheck.results/v1"`, nil},
		{"a link out of the job directory", Schema, `{"name": "node1", "ref": "nodes/node1/results.json"}`, "path escapes from parent", func(dir string) {
			os.MkdirAll(filepath.Join(dir, "nodes"), 0o755)
			if err := os.Symlink(outside, filepath.Join(dir, "nodes", "node1")); err != nil {
				t.Fatal(err)
			}
		}},
		{"another node's file", Schema, `{"name": "node2", "ref": "nodes/node2/results.json"}`, `reports node "node1": a copy of another node's results`, func(dir string) {
			os.MkdirAll(filepath.Join(dir, "nodes", "node2"), 0o755)
			os.WriteFile(filepath.Join(dir, "nodes", "node2", "results.json"), []byte(own), 0o644)
		}},
		{"a ref in the node's own file", Schema, `{"name": "node1", "ref": "nodes/node1/results.json"}`, "a ref in a file read without its job directory", func(dir string) {
			os.MkdirAll(filepath.Join(dir, "nodes", "node1"), 0o755)
			nested := `{"schema": "gdrcheck.results/v2", "nodes": [{"name": "node1", "ref": "nodes/node1/results.json"}]}`
			os.WriteFile(filepath.Join(dir, "nodes", "node1", "results.json"), []byte(nested), 0o644)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.setup != nil {
				c.setup(dir)
			}
			p := writeMerged(t, dir, c.schema, c.entry)
			_, err := Read(p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p+":2:") {
				t.Errorf("error %v\nwant one naming %s:2 and %q", err, p, c.want)
			}
		})
	}
}

func TestAV1MergedJobStillReads(t *testing.T) {
	dir := t.TempDir()
	p := writeMerged(t, dir, SchemaV1,
		`{"name": "node0", "status": "evaluated", "facts": [{"name": "gpus", "value": "8"}], "suites": [], "evidence": {"a": 1}}`,
		`{"name": "node1", "status": "missing", "reason": "never reported", "suites": []}`)
	r, err := Read(p)
	if err != nil || len(r.Nodes) != 2 || string(r.Nodes[0].Evidence) != `{"a": 1}` {
		t.Fatalf("a merged job of the previous release: %v", err)
	}
	x, err := OpenIndex(p)
	if err != nil || x.Len() != 2 {
		t.Fatalf("its index: %v", err)
	}
	defer x.Close()
	if n, ok, err := x.Node("node1"); !ok || err != nil || n.Status != NodeMissing {
		t.Errorf("node1 of the index: %v %v %+v", ok, err, n)
	}
}

func TestReadFoldedTakesAMergedJobsGroupsWithoutReadingItsRefs(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	e := NewLineEncoder(&b)
	f := NewFolder(0)
	for i := range 12 {
		name := "node" + string(rune('a'+i))
		n := Node{Name: name, Status: NodeEvaluated, Facts: []Fact{{Name: "gpus", Value: "8"}}, Evidence: json.RawMessage(`{"x": 1}`),
			Suites: []Suite{{Name: "kernel", Specs: []Spec{{Name: "loads", State: StatePassed}}}}}
		if i == 5 {
			n.Suites[0].Specs[0] = Spec{Name: "loads", State: StateFailed, Message: "no module on " + name}
			e.Node(n)
		} else {
			e.Ref(name, nil) // no file behind it: it must not be read
		}
		f.Add(n)
	}
	want := f.Nodes()
	if err := e.EndFolded(&Results{Tool: Tool{Version: "t"}}, want); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "results.json")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadFolded(p)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Folded() || r.NodeCount() != 12 || len(r.Nodes) != len(want) {
		t.Fatalf("folded %v, %d nodes in %d entries; want 12 in %d", r.Folded(), r.NodeCount(), len(r.Nodes), len(want))
	}
	got, _ := json.Marshal(r.Nodes)
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		t.Errorf("groups read back differ:\n got %s\nwant %s", got, exp)
	}
	for i := range want {
		if (want[i].Group == nil) != (r.Nodes[i].Group == nil) || want[i].Size() != r.Nodes[i].Size() {
			t.Errorf("entry %d: group %v of %d, want %v of %d", i, r.Nodes[i].Group != nil, r.Nodes[i].Size(), want[i].Group != nil, want[i].Size())
		}
	}
	// Groups naming a node the entries do not hold are refused.
	bad := bytes.Replace(b.Bytes(), []byte(`"groups": [`+"\n    "+`{"name":"nodea"`), []byte(`"groups": [`+"\n    "+`{"name":"nodez"`), 1)
	if bytes.Equal(bad, b.Bytes()) {
		t.Fatal("the test's edit did not apply")
	}
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFolded(p); err == nil || !strings.Contains(err.Error(), "do not stand for its node entries") {
		t.Errorf("groups of another node: %v", err)
	}
}
