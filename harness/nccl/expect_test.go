package nccl_test

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

func TestExpectationForFollowsTheTopology(t *testing.T) {
	cases := []struct {
		name     string
		build    func(string) (*nodetest.Tree, error)
		p2p, gdr nccl.Expect
	}{
		{"NVSwitch with PIX NICs", func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d) }, nccl.ExpectYes, nccl.ExpectYes},
		{"NICs on the other socket", func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d, nodetest.NICsOnOtherSocket()) }, nccl.ExpectYes, nccl.ExpectNo},
		{"workstation GPUs without peer access", nodetest.RTX6000Ada2, nccl.ExpectNo, nccl.ExpectYes},
	}
	for _, c := range cases {
		dir := t.TempDir()
		if _, err := c.build(dir); err != nil {
			t.Fatal(err)
		}
		h, err := node.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		exp, why := nccl.ExpectationFor(node.Collect(h, node.DefaultSources(h)), 2)
		if exp.P2P != c.p2p || exp.GDR != c.gdr || exp.Nodes != 2 {
			t.Errorf("%s: %+v, want P2P %v GDR %v; because %q", c.name, exp, c.p2p, c.gdr, why)
		}
	}
}
