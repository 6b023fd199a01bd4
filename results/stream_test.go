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
		r.Nodes = append(r.Nodes, Node{Name: fmt.Sprintf("node%d", i), Status: NodeEvaluated, Suites: []Suite{}, Evidence: ev})
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
	want := fmt.Sprintf("reading %q: after byte 54: larger than the 8 MiB limit on one node or run of a results.json: the node of an 8-GPU host with every suite is about 90 KB", p)
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
		b.WriteString(`{"name": "n"}`)
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
	doc := `{"schema": "gdrcheck.results/v1", "later": {"a": [1, {"b": "` + strings.Repeat("x", 100) + `"}]}, "runs": null, "nodes": [{"name": "n", "status": "evaluated", "suites": []}]}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Read(p)
	if err != nil || len(r.Nodes) != 1 || r.Runs != nil {
		t.Errorf("Read: %v, %+v", err, r)
	}
}
