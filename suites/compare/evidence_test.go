package compare

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// evidence decodes through encoding/json/v2 for speed: every recorded
// node's evidence must come out as encoding/json decodes it.
func TestEvidenceDecodesAsEncodingJSONDoes(t *testing.T) {
	files, err := filepath.Glob("../../fixtures/results/*.results.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded results: %v", err)
	}
	seen := 0
	for _, f := range files {
		r, err := results.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range r.Nodes {
			if len(n.Evidence) == 0 {
				continue
			}
			var want node.Evidence
			if err := json.Unmarshal(n.Evidence, &want); err != nil {
				t.Fatalf("%s %s: %v", f, n.Name, err)
			}
			var fast node.Evidence
			if err := jsonv2.Unmarshal(n.Evidence, &fast, jsontext.AllowInvalidUTF8(true)); err != nil {
				t.Errorf("%s %s: encoding/json/v2 refuses the evidence, so compare takes the slow way: %v", f, n.Name, err)
			}
			got := evidence(n)
			if got == nil || !reflect.DeepEqual(*got, want) {
				t.Errorf("%s %s: the evidence decodes otherwise than encoding/json decodes it", f, n.Name)
			}
			seen++
		}
	}
	if seen == 0 {
		t.Fatal("no recorded node with evidence")
	}
}
