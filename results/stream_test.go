package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// writeJob writes a results.json of n nodes, each with evidence of size
// bytes, and returns its path.
func writeJob(t *testing.T, n, size int) string {
	t.Helper()
	r := &Results{Schema: Schema, Runs: []Run{{Suite: "scaling", Nodes: []string{"node0", "node1"}}}}
	ev := json.RawMessage(`"` + strings.Repeat("e", size) + `"`)
	for i := range n {
		r.Nodes = append(r.Nodes, Node{Name: fmt.Sprintf("node%d", i), Status: NodeEvaluated, Facts: []Fact{{Name: "gpus", Value: "8"}}, Suites: []Suite{}, Evidence: ev})
	}
	p := filepath.Join(t.TempDir(), "results.json")
	if err := r.Write(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTakesAMergedJobLargerThanTheLimitNodeByNode(t *testing.T) {
	p := writeJob(t, 12, 1<<20)
	if fi, err := os.Stat(p); err != nil || fi.Size() <= ValueLimit.Bytes {
		t.Fatalf("the job should be over %d bytes: %v", ValueLimit.Bytes, err)
	}
	r, err := Read(p)
	if err != nil || len(r.Nodes) != 12 || len(r.Nodes[11].Evidence) != 1<<20+2 || len(r.Runs) != 1 {
		t.Fatalf("Read: %v", err)
	}
	if s, err := ReadSlim(p); err != nil || len(s.Nodes) != 12 || s.Nodes[0].Evidence != nil {
		t.Errorf("ReadSlim: %v", err)
	}
}

func TestReadRefusesANodeOverTheLimitNamingWhere(t *testing.T) {
	p := writeJob(t, 2, 9<<20)
	_, err := Read(p)
	if !errors.Is(err, bounded.ErrTooLarge) {
		t.Fatalf("a 9 MiB node: %v", err)
	}
	want := fmt.Sprintf("reading %q: after byte 49: larger than the 8 MiB limit on one node or run of a results.json: the node of an 8-GPU host with every suite is about 90 KB", p)
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestReadRefusesMoreThanMaxNodes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.json")
	var b strings.Builder
	b.WriteString(`{"schema": "gdrcheck.results/v1", "nodes": [`)
	for i := range MaxNodes + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name": "n", "status": "missing", "reason": "r"}`)
	}
	b.WriteString(`]}`)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadSlim(p)
	if !errors.Is(err, bounded.ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d nodes", MaxNodes)) {
		t.Errorf("%d nodes: %v", MaxNodes+1, err)
	}
}

func TestReadSkipsUnknownKeysAndTakesNullRuns(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.json")
	doc := `{"schema": "gdrcheck.results/v1", "later": {"a": [1, {"b": "` + strings.Repeat("x", 100) + `"}]}, "runs": null, "nodes": [{"name": "n", "status": "evaluated", "facts": [{"name": "a", "value": "b"}]}]}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Read(p)
	if err != nil || len(r.Nodes) != 1 || r.Runs != nil {
		t.Errorf("Read: %v, %+v", err, r)
	}
}

// A document that judges nothing, or says a key twice, is bad input,
// named with the place: encoding/json alone would take each of these.
func TestReadRefusesDocumentsThatSayNothingOrSayAKeyTwice(t *testing.T) {
	const node = `{"name": "gpu1", "status": "evaluated", "facts": [{"name": "gpus", "value": "8"}], "suites": []}`
	for _, c := range []struct{ name, doc, want string }{
		{"no nodes key", `{"schema": "gdrcheck.results/v1"}`, `no node: a results.json holds at least one`},
		{"empty nodes", `{"schema": "gdrcheck.results/v1", "nodes": []}`, `no node: a results.json holds at least one`},
		{"node without facts or specs", `{"schema": "gdrcheck.results/v1", "nodes": [{"name": "gpu1", "status": "evaluated", "suites": []}]}`, `:1:98: nodes[0] (named "gpu1"): evaluated, yet it holds neither facts nor specs`},
		{"missing node without a reason", `{"schema": "gdrcheck.results/v1", "nodes": [{"name": "gpu1", "status": "missing", "suites": []}]}`, `nodes[0] (named "gpu1"): missing with neither facts, specs nor a reason`},
		{"node without a name", `{"schema": "gdrcheck.results/v1", "nodes": [{"status": "evaluated", "facts": [{"name": "a", "value": "b"}]}]}`, `nodes[0]: the node has no name`},
		{"unknown status", `{"schema": "gdrcheck.results/v1", "nodes": [{"name": "gpu1", "status": "fine", "facts": [{"name": "a", "value": "b"}]}]}`, `nodes[0] (named "gpu1"): status "fine"`},
		{"nodes twice", `{"schema": "gdrcheck.results/v1", "nodes": [` + node + `],` + "\n" + `"nodes": [` + node + `]}`, `:2:8: the top-level key "nodes" is given twice`},
		{"schema twice", `{"schema": "gdrcheck.results/v1", "schema": "gdrcheck.results/v1", "nodes": [` + node + `]}`, `the top-level key "schema" is given twice`},
		{"a node's name twice", `{"schema": "gdrcheck.results/v1", "nodes": [` + node + `, {"name": "gpu2", "name": "gpu3", "status": "evaluated", "facts": [{"name": "a", "value": "b"}]}]}`, `nodes[1] (named "gpu3"): the key "name" is given twice`},
		{"a spec's state twice", `{"schema": "gdrcheck.results/v1", "nodes": [{"name": "gpu1", "status": "evaluated", "suites": [{"name": "kernel", "specs": [{"name": "x", "state": "failed", "state": "passed"}]}]}]}`, `nodes[0]/suites/0/specs/0 (named "gpu1"): the key "state" is given twice`},
		{"a tool's version twice", `{"schema": "gdrcheck.results/v1", "tool": {"version": "1", "version": "2"}, "nodes": [` + node + `]}`, `tool: the key "version" is given twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "results.json")
			if err := os.WriteFile(p, []byte(c.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("Read: %v\nwant the file and %q", err, c.want)
			}
		})
	}
}

// Eight "nodes" arrays of MaxNodes/8+1 each were once taken, each under
// its own cap: the first repeated key now ends the read.
func TestRepeatedNodesArraysAreNotCountedApart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.json")
	var b strings.Builder
	b.WriteString(`{"schema": "gdrcheck.results/v1"`)
	for range 8 {
		b.WriteString(`, "nodes": [`)
		for i := range MaxNodes/8 + 1 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"name": "n", "status": "evaluated", "facts": [{"name": "a", "value": "b"}]}`)
		}
		b.WriteString(`]`)
	}
	b.WriteString(`}`)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := 0
	_, err := Scan(p, func(Node) error { seen++; return nil })
	if err == nil || !strings.Contains(err.Error(), `the top-level key "nodes" is given twice`) || seen != MaxNodes/8+1 {
		t.Errorf("8 nodes arrays: %v after %d nodes", err, seen)
	}
}
