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

// NCCL's own GID choice (net_ib.cc ncclIbGetGidIndex) and
// NCCL_IB_GID_INDEX over it, on the tables a RoCE port shows.
func TestNCCLGIDFollowsNCCLsSelection(t *testing.T) {
	ll := "fe80:0000:0000:0000:0ac0:ebff:fe3b:4f52"
	v4 := "0000:0000:0000:0000:0000:ffff:0a00:0001"
	v4b := "0000:0000:0000:0000:0000:ffff:0a00:0002"
	usual := []node.GID{{Index: 0, GID: ll, Type: "IB/RoCE v1"}, {Index: 1, GID: ll, Type: "RoCE v2"}, {Index: 2, GID: v4, Type: "IB/RoCE v1"}, {Index: 3, GID: v4, Type: "RoCE v2"}}
	conf := func(kv ...string) *node.Overrides {
		o := &node.Overrides{}
		for i := 0; i+1 < len(kv); i += 2 {
			o.Settings = append(o.Settings, node.Setting{Name: kv[i], Value: kv[i+1], Source: "/etc/nccl.conf", Line: 1 + i/2})
		}
		return o
	}
	cases := []struct {
		name    string
		gids    []node.GID
		o       *node.Overrides
		index   int
		version int // of the entry; 0: no entry
		set     bool
		err     bool
	}{
		{"mlx5's usual table: RoCE v2 IPv4 at 3", usual, nil, 3, 2, false, false},
		{"two IPv4 addresses: the first v2", append(usual, node.GID{Index: 4, GID: v4b, Type: "IB/RoCE v1"}, node.GID{Index: 5, GID: v4b, Type: "RoCE v2"}), nil, 3, 2, false, false},
		{"no IPv4 on the netdev: back to entry 0, v1 link-local", usual[:2], nil, 0, 1, false, false},
		{"IPv4 only as RoCE v1: the family wins", usual[:3], nil, 2, 1, false, false},
		{"NCCL_IB_GID_INDEX on a v2 link-local entry", usual, conf("NCCL_IB_GID_INDEX", "1"), 1, 2, true, false},
		{"NCCL_IB_GID_INDEX on an unused entry", usual, conf("NCCL_IB_GID_INDEX", "7"), 7, 0, true, false},
		{"NCCL_IB_GID_INDEX=-1 is NCCL's own choice", usual, conf("NCCL_IB_GID_INDEX", "-1"), 3, 2, false, false},
		{"NCCL_IB_GID_INDEX not a number", usual, conf("NCCL_IB_GID_INDEX", "three"), 3, 2, false, true},
		{"RoCE v1 asked for", usual, conf("NCCL_IB_ROCE_VERSION_NUM", "1"), 2, 1, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := node.NCCLGID(c.gids, c.o)
			if !ok || got.Index != c.index || (got.Set != nil) != c.set || (got.Err != "") != c.err {
				t.Fatalf("NCCLGID = %+v, %t; want index %d, set %t, error %t", got, ok, c.index, c.set, c.err)
			}
			switch {
			case c.version == 0 && got.Entry != nil:
				t.Errorf("entry %+v, want none", got.Entry)
			case c.version != 0 && (got.Entry == nil || got.Entry.RoCEVersion() != c.version):
				t.Errorf("entry %+v, want RoCE v%d", got.Entry, c.version)
			}
		})
	}
	if _, ok := node.NCCLGID(nil, nil); ok {
		t.Error("an empty table gave a choice")
	}
	if !usual[0].LinkLocal() || usual[3].LinkLocal() || !usual[3].RoCEv2IPv4() || usual[1].RoCEv2IPv4() {
		t.Error("LinkLocal or RoCEv2IPv4 misread the usual table")
	}
}
