package node_test

import (
	"bufio"
	"os"
	"strings"
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

// topoMatrix reads the GPU rows of an `nvidia-smi topo -m` output: GPU
// index -> NIC name -> class.
func topoMatrix(t *testing.T, path string) map[int]map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var header []string
	nicNames := map[string]string{}
	rows := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) > 0 && fs[0] == "GPU0" && header == nil:
			header = fs
		case len(fs) > 1 && strings.HasPrefix(fs[0], "GPU") && header != nil:
			rows[fs[0]] = fs[1:]
		case len(fs) == 2 && strings.HasPrefix(fs[0], "NIC") && strings.HasSuffix(fs[0], ":"):
			nicNames[strings.TrimSuffix(fs[0], ":")] = fs[1]
		}
	}
	out := map[int]map[string]string{}
	for g := 0; ; g++ {
		row, ok := rows["GPU"+string(rune('0'+g))]
		if !ok {
			break
		}
		out[g] = map[string]string{}
		for i, col := range header {
			if strings.HasPrefix(col, "NIC") && i < len(row) {
				out[g][nicNames[col]] = row[i]
			}
		}
	}
	return out
}

func TestH100x8PathsMatchThePublicMatrixTheFixtureWasModelledOn(t *testing.T) {
	ev := collect(t, func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d) })
	if err := ev.Fatal(); err != nil {
		t.Fatalf("fatal problems: %v", err)
	}
	if len(ev.GPUs) != 8 || len(ev.NICs) != 8 || len(ev.Paths) != 64 {
		t.Fatalf("got %d GPUs, %d NICs, %d paths; want 8, 8, 64", len(ev.GPUs), len(ev.NICs), len(ev.Paths))
	}
	want := topoMatrix(t, "../../fixtures/corpus/nvidia-smi-topo/gke-a4-b200-8gpu-nv18-8nic-cx7-pix-node-sys.txt")
	if len(want) != 8 {
		t.Fatalf("parsed %d GPU rows from the public matrix", len(want))
	}
	for _, p := range ev.Paths {
		if w := want[p.GPUIndex][p.NIC]; string(p.Class) != w {
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
