package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// gpusEvidence stands for harness/node's Evidence: refJob's is
// {"gpus": [1, 2]}.
type gpusEvidence struct {
	GPUs []int `json:"gpus"`
}

// A ref's evidence decoded in the pass that reads the node is what
// decoding the node's raw evidence gives, and the node is At's but for
// the raw evidence; a node held in the merged file comes raw.
func TestAtEvidenceDecodesARefsEvidenceInTheOnePass(t *testing.T) {
	x, err := OpenIndex(refJob(t))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for i := range x.Len() {
		want, err := x.At(i)
		if err != nil {
			t.Fatal(err)
		}
		var ev gpusEvidence
		got, ok, err := x.AtEvidence(i, &ev)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// node0 is held in full, without evidence.
			if ok || !reflect.DeepEqual(got, want) {
				t.Errorf("node0: ok %v, %+v, want At's %+v", ok, got, want)
			}
			continue
		}
		var raw gpusEvidence
		if err := json.Unmarshal(want.Evidence, &raw); err != nil {
			t.Fatal(err)
		}
		if !ok || !reflect.DeepEqual(ev, raw) || len(ev.GPUs) != 2 {
			t.Errorf("%s: ok %v, evidence %+v, want %+v", want.Name, ok, ev, raw)
		}
		if got.Evidence != nil {
			t.Errorf("%s: the raw evidence is kept too (%d bytes)", got.Name, len(got.Evidence))
		}
		want.Evidence = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n%+v\nwant At's\n%+v", want.Name, got, want)
		}
		n, found, ok, err := x.NodeEvidence(want.Name, &gpusEvidence{})
		if err != nil || !found || !ok || n.Name != want.Name {
			t.Errorf("NodeEvidence(%s): %s %v %v %v", want.Name, n.Name, found, ok, err)
		}
	}
	if _, found, _, err := x.NodeEvidence("node9", &gpusEvidence{}); found || err != nil {
		t.Errorf("NodeEvidence(node9): found %v, %v", found, err)
	}
}

// Evidence the typed pass refuses (null, a value of another type) is no
// error of the node: it comes raw, as At reads it, for its reader to
// judge.
func TestAtEvidenceLeavesEvidenceItCannotTypeRaw(t *testing.T) {
	for _, ev := range []string{`null`, `{"gpus": "two"}`} {
		p := refJob(t)
		own := filepath.Join(filepath.Dir(p), "nodes", "node1", "results.json")
		r, err := Read(own)
		if err != nil {
			t.Fatal(err)
		}
		r.Nodes[0].Evidence = json.RawMessage(ev)
		if err := r.Write(own); err != nil {
			t.Fatal(err)
		}
		x, err := OpenIndex(p)
		if err != nil {
			t.Fatal(err)
		}
		n, ok, err := x.AtEvidence(1, &gpusEvidence{})
		x.Close()
		var compact bytes.Buffer
		json.Compact(&compact, n.Evidence)
		if err != nil || ok || n.Name != "node1" || compact.String() != strings.ReplaceAll(ev, " ", "") {
			t.Errorf("evidence %s: ok %v, raw %q, %v; want it raw", ev, ok, n.Evidence, err)
		}
	}
}

// A node file the one pass refuses is refused with the file, the line
// and column, the node and what was wrong, as it was when each value was
// scanned first and decoded after.
func TestABadNodeNamesTheFileLineNodeAndWhat(t *testing.T) {
	const head = "{\n  \"schema\": \"gdrcheck.results/v2\",\n  \"nodes\": [\n    {\"name\": \"gpu1\", \"status\": \"evaluated\", \"facts\": [{\"name\": \"a\", \"value\": \"b\"}]},\n"
	for _, c := range []struct{ name, node, want string }{
		{"a type", "    {\"name\": \"gpu2\", \"status\": \"evaluated\",\n     \"suites\": [{\"name\": 3}]}\n",
			`:6:26: nodes[1] (named "gpu2"): json: cannot unmarshal JSON number into Go string within "/suites/0/name"`},
		{"a time", "    {\"name\": \"gpu2\", \"status\": \"evaluated\",\n     \"started\": \"yesterday\"}\n",
			`:6:17: nodes[1] (named "gpu2"): json: cannot unmarshal JSON string into Go time.Time within "/started"`},
		{"a key twice in the evidence", "    {\"name\": \"gpu2\", \"status\": \"evaluated\", \"facts\": [{\"name\": \"a\", \"value\": \"b\"}],\n     \"evidence\": {\"a\": 1,\n \"a\": 2}}\n",
			`:7:2: nodes[1]/evidence (named "gpu2"): the key "a" is given twice`},
		{"a name twice", "    {\"name\": \"gpu2\", \"name\": \"gpu3\", \"status\": \"evaluated\"}\n",
			`:5:22: nodes[1] (named "gpu3"): the key "name" is given twice`},
		{"a syntax error", "    {\"name\": \"gpu2\", \"status\": \"evaluated\",\n     \"suites\": [{\"name\": \"x\"]}\n",
			`:6:29: invalid character ']' after object value (expecting ',' or '}')`},
		{"an end too early", "    {\"name\": \"gpu2\", \"status\": \"evaluated\",\n     \"suites\": [{\"name\": \"x\"",
			`:4:84: the document ends early: unexpected EOF`}, // after the node before, as ever
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "results.json")
			doc := head + c.node
			if c.name != "an end too early" {
				doc += "  ]\n}\n"
			}
			if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(p)
			// go-json-experiment says "cannot" or "unable to", picked
			// at random per process so that no one relies on either.
			got := ""
			if err != nil {
				got = strings.Replace(err.Error(), "json: unable to unmarshal", "json: cannot unmarshal", 1)
			}
			if want := "reading " + p + c.want; !strings.HasPrefix(got, want) {
				t.Errorf("Read: %v\nwant %s", err, want)
			}
		})
	}
}
