package node_test

import (
	"fmt"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// collect builds a fixture tree and collects it the way `gdrcheck run
// --host-root` does.
func collect(t *testing.T, build func(dir string) (*nodetest.Tree, error)) *node.Evidence {
	t.Helper()
	dir := t.TempDir()
	if _, err := build(dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return node.Collect(h, node.DefaultSources(h))
}

func TestH100x8PathsMatchThePublicMatrixTheFixtureWasModelledOn(t *testing.T) {
	ev := collect(t, func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d) })
	if err := ev.Fatal(); err != nil {
		t.Fatalf("fatal problems: %v", err)
	}
	if len(ev.GPUs) != 8 || len(ev.NICs) != 8 || len(ev.Paths) != 64 {
		t.Fatalf("got %d GPUs, %d NICs, %d paths; want 8, 8, 64", len(ev.GPUs), len(ev.NICs), len(ev.Paths))
	}
	want := nodetest.TopoMatrix(t, "../../fixtures/corpus/nvidia-smi-topo/gke-a4-b200-8gpu-nv18-8nic-cx7-pix-node-sys.txt")
	if len(want) != 8 {
		t.Fatalf("parsed %d GPU rows from the public matrix", len(want))
	}
	for _, p := range ev.Paths {
		if w := want[fmt.Sprintf("GPU%d", p.GPUIndex)][p.NIC]; string(p.Class) != w {
			t.Errorf("GPU%d -> %s: %s, public matrix says %s", p.GPUIndex, p.NIC, p.Class, w)
		}
	}
	for _, g := range ev.GPUs {
		p, ok := ev.PreferredPath(g.BusID)
		if !ok {
			t.Fatalf("GPU %d has no preferred NIC", g.Index)
		}
		if wantNIC := "mlx5_" + string(rune('0'+g.Index)); p.NIC != wantNIC || p.Class != node.PathPIX {
			t.Errorf("GPU %d prefers %s (%s), want %s (PIX): two GPUs on one switch take its two NICs in order", g.Index, p.NIC, p.Class, wantNIC)
		}
		if !p.SameNUMA {
			t.Errorf("GPU %d and %s on different NUMA nodes", g.Index, p.NIC)
		}
	}
}
