package node_test

import (
	"reflect"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

func ports(t *testing.T, h node.Host) map[string]node.NICPort {
	t.Helper()
	nics, err := h.NICs(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]node.NICPort{}
	for _, n := range nics {
		out[n.Name] = n.Ports[0]
	}
	return out
}

// A RoCE port reports its used GID entries, the RoCE v2 IPv4 one NCCL
// selects, its netdev's MTU and the active MTU derived from it; an IB
// port reports none of them.
func TestRoCEPortReportsGIDIndexAndActiveMTU(t *testing.T) {
	dir, h := openTree(t, nodetest.IBAndRoCE)
	p := ports(t, h)
	roce := p["mlx5_1"]
	if roce.NCCLGIDIndex == nil || *roce.NCCLGIDIndex != 3 || len(roce.GIDs) != 4 || roce.GIDs[3].Type != "RoCE v2" {
		t.Fatalf("RoCE port: GID index %v, table %+v; want 3 of 4 used entries", roce.NCCLGIDIndex, roce.GIDs)
	}
	if roce.NetDev != "ens2np0" || roce.NetMTU != 9000 || roce.ActiveMTU != 4096 {
		t.Errorf("RoCE port: netdev %q MTU %d active %d; want ens2np0, 9000, 4096", roce.NetDev, roce.NetMTU, roce.ActiveMTU)
	}
	if ib := p["mlx5_0"]; ib.GIDs != nil || ib.NCCLGIDIndex != nil || ib.ActiveMTU != 0 {
		t.Errorf("IB port has RoCE facts: %+v", ib)
	}

	// The v2 IPv4 GID moved to 5 and a netdev left at 1500: what one
	// odd node of a job shows.
	if err := nodetest.SetRoCEGIDs(dir, "mlx5_1", "ens2np0", 5); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.SetNetMTU(dir, "ens2np0", 1500); err != nil {
		t.Fatal(err)
	}
	roce = ports(t, h)["mlx5_1"]
	if roce.NCCLGIDIndex == nil || *roce.NCCLGIDIndex != 5 || roce.ActiveMTU != 1024 {
		t.Errorf("odd RoCE port: GID index %v, active MTU %d; want 5 and 1024", roce.NCCLGIDIndex, roce.ActiveMTU)
	}
}

// The snapshot keeps the used GID entries and the netdev MTU: the replay
// reads the same RoCE facts as the node.
func TestSnapshotKeepsTheGIDTable(t *testing.T) {
	dir, h := openTree(t, nodetest.IBAndRoCE)
	if err := nodetest.SetRoCEGIDs(dir, "mlx5_1", "ens2np0", 7); err != nil {
		t.Fatal(err)
	}
	want := ports(t, h)
	dst := t.TempDir()
	if _, err := h.Snapshot(dst, node.DefaultSources(h), "test"); err != nil {
		t.Fatal(err)
	}
	hs, err := node.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	got := ports(t, hs)
	if !reflect.DeepEqual(got["mlx5_1"], want["mlx5_1"]) {
		t.Errorf("replayed RoCE port\n%+v\nwant\n%+v", got["mlx5_1"], want["mlx5_1"])
	}
	if got["mlx5_1"].NCCLGIDIndex == nil || *got["mlx5_1"].NCCLGIDIndex != 7 {
		t.Errorf("replayed GID index %v, want 7", got["mlx5_1"].NCCLGIDIndex)
	}
}
