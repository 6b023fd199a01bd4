package compare

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// job is the recorded node as a job of the named nodes, with the
// allocation's cross-node entry.
func job(t *testing.T, names ...string) *results.Results {
	t.Helper()
	r := load(t)
	one := r.Nodes[0]
	r.Nodes = nil
	for _, n := range names {
		c := one
		c.Name = n
		r.Nodes = append(r.Nodes, c)
	}
	r.Nodes = append(r.Nodes, results.Node{Name: results.AllocationNode, Status: results.NodeEvaluated})
	return r
}

func TestRunsWithNoNodeInCommonAreRefusedNodeNamesMatchedAsSlurmDoes(t *testing.T) {
	cases := []struct {
		name          string
		before, after []string
		refused       bool
		why           string
	}{
		{"renamed in case", []string{"gpu1", "gpu2"}, []string{"GPU1", "GPU2"}, true, `"gpu1" and "GPU1" differ in case only`},
		{"other nodes", []string{"gpu1", "gpu2"}, []string{"gpu3", "gpu4"}, true, "the run before has gpu1, gpu2, the run after gpu3, gpu4: nothing would be compared"},
		{"control: one in common", []string{"gpu1", "gpu2"}, []string{"gpu1", "GPU2"}, false, ""},
		{"control: the same nodes", []string{"gpu1", "gpu2"}, []string{"gpu2", "gpu1"}, false, ""},
	}
	for _, c := range cases {
		err := Common(job(t, c.before...), job(t, c.after...))
		if c.refused != errors.Is(err, ErrNoNodeInCommon) {
			t.Errorf("%s: %v, refused %v", c.name, err, c.refused)
			continue
		}
		if c.refused && !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %q lacks %q", c.name, err, c.why)
		}
	}
	// Single nodes pair whatever their names (a host renamed).
	b, a := load(t), load(t)
	a.Nodes[0].Name = strings.ToUpper(b.Nodes[0].Name)
	if err := Common(b, a); err != nil {
		t.Errorf("one node each: %v", err)
	}
	if !slices.Equal(nodeNames(memory(job(t, "x")).Names()), []string{"x"}) {
		t.Errorf("the allocation's entry counts as a node")
	}
}
