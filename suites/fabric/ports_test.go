package fabric

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

const (
	linkLocal = "fe80:0000:0000:0000:0ac0:ebff:fe3b:4f52"
	ipv4      = "0000:0000:0000:0000:0000:ffff:0a00:0001"
)

// roceNIC is a RoCE rail with mlx5's usual GID table (v2 IPv4 at v2,
// unless v2 < 0: no IPv4 address) and a netdev at netMTU.
func roceNIC(name string, v2, netMTU, activeMTU int) node.NIC {
	gids := []node.GID{{Index: 0, GID: linkLocal, Type: "IB/RoCE v1"}, {Index: 1, GID: linkLocal, Type: "RoCE v2"}}
	if v2 > 0 {
		gids = append(gids, node.GID{Index: v2 - 1, GID: ipv4, Type: "IB/RoCE v1"}, node.GID{Index: v2, GID: ipv4, Type: "RoCE v2"})
	}
	return node.NIC{Name: name, BusID: "0000:1a:00.0", Ports: []node.NICPort{{Port: 1, State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "Ethernet",
		GIDs: gids, NetDev: "ens" + name[len(name)-1:] + "np0", NetMTU: netMTU, ActiveMTU: activeMTU}}}
}

func TestGIDFindingsFailV1LinkLocalAndUnusedEntries(t *testing.T) {
	conf := func(v string) *node.Overrides {
		return &node.Overrides{Settings: []node.Setting{{Name: "NCCL_IB_GID_INDEX", Value: v, Source: "/etc/nccl.conf", Line: 4}}}
	}
	cases := []struct {
		name string
		nics []node.NIC
		o    *node.Overrides
		says []string // substrings of the one finding; none: passes
	}{
		{"the usual table", []node.NIC{roceNIC("mlx5_0", 3, 9000, 4096), roceNIC("mlx5_1", 3, 9000, 4096)}, nil, nil},
		{"its v2 IPv4 entry elsewhere", []node.NIC{roceNIC("mlx5_0", 5, 9000, 4096)}, nil, nil},
		{"a netdev without IPv4: entry 0, v1 link-local", []node.NIC{roceNIC("mlx5_0", 3, 9000, 4096), roceNIC("mlx5_1", -1, 9000, 4096)},
			nil, []string{"mlx5_1 port 1 (ens1np0): NCCL would use GID 0 (NCCL's own choice)", "RoCE v1", "give ens1np0 its IPv4 address"}},
		{"NCCL_IB_GID_INDEX on the v2 link-local entry", []node.NIC{roceNIC("mlx5_0", 3, 9000, 4096)}, conf("1"),
			[]string{"GID 1 (NCCL_IB_GID_INDEX=1 (/etc/nccl.conf line 4))", "link-local fe80", "set NCCL_IB_GID_INDEX=3 (/etc/nccl.conf line 4"}},
		{"NCCL_IB_GID_INDEX on an unused entry", []node.NIC{roceNIC("mlx5_0", 3, 9000, 4096)}, conf("9"),
			[]string{"GID 9", "an unused entry"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad, notes, unknown := gidFindings(c.nics, c.o)
			if len(unknown) != 0 {
				t.Errorf("unknown %q", unknown)
			}
			if len(c.says) == 0 {
				if len(bad) != 0 || len(notes) != len(c.nics) {
					t.Errorf("findings %q, notes %q; want none and a note per port", bad, notes)
				}
				return
			}
			if len(bad) != 1 {
				t.Fatalf("findings %q, want one", bad)
			}
			for _, w := range c.says {
				if !strings.Contains(bad[0], w) {
					t.Errorf("%q lacks %q", bad[0], w)
				}
			}
		})
	}
	ib := node.NIC{Name: "mlx5_0", Ports: []node.NICPort{{Port: 1, LinkLayer: "InfiniBand"}}}
	if bad, notes, unknown := gidFindings([]node.NIC{ib}, nil); bad != nil || notes != nil || unknown != nil {
		t.Errorf("an InfiniBand rail was judged: %q %q %q", bad, notes, unknown)
	}
	noTable := roceNIC("mlx5_0", 3, 9000, 4096)
	noTable.Ports[0].GIDs = nil
	if _, _, unknown := gidFindings([]node.NIC{noTable}, nil); len(unknown) != 1 {
		t.Errorf("a port without a GID table: unknown %q", unknown)
	}
}

func TestMTUFindingsNameTheLowRailAndWarnWhenAllAreLow(t *testing.T) {
	bad, warn, _ := mtuFindings([]node.NIC{roceNIC("mlx5_0", 3, 9000, 4096), roceNIC("mlx5_1", 3, 1500, 1024), roceNIC("mlx5_2", 3, 9000, 4096)})
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "mlx5_1 port 1 (ens1np0) runs at active MTU 1024 (netdev MTU 1500), the node's other RoCE rails at 4096") || len(warn) != 0 {
		t.Errorf("one rail at 1024: findings %q, warnings %q", bad, warn)
	}
	bad, warn, _ = mtuFindings([]node.NIC{roceNIC("mlx5_0", 3, 1500, 1024), roceNIC("mlx5_1", 3, 1500, 1024)})
	if len(bad) != 0 || len(warn) != 1 || !strings.HasPrefix(warn[0], "every RoCE rail runs at active MTU 1024") {
		t.Errorf("all rails at 1024: findings %q, warnings %q", bad, warn)
	}
	if bad, warn, _ = mtuFindings([]node.NIC{roceNIC("mlx5_0", 3, 9000, 4096), roceNIC("mlx5_1", 3, 4200, 4096)}); len(bad)+len(warn) != 0 {
		t.Errorf("all rails at 4096: findings %q, warnings %q", bad, warn)
	}
}

func TestLinkLayerFindingsNameThePortAndTheFix(t *testing.T) {
	ib := node.NIC{Name: "mlx5_0", BusID: "0000:18:00.0", Ports: []node.NICPort{{Port: 1, LinkLayer: "InfiniBand"}}}
	eth := node.NIC{Name: "mlx5_3", BusID: "0000:9a:00.0", Ports: []node.NICPort{{Port: 1, LinkLayer: "Ethernet"}}}
	bad, _ := linkLayerFindings([]node.NIC{ib, eth}, "InfiniBand", "h100x8-ndr")
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "mlx5_3 port 1 runs Ethernet; baseline h100x8-ndr expects InfiniBand") || !strings.Contains(bad[0], "mlxconfig -d 0000:9a:00.0 set LINK_TYPE_P1=1") {
		t.Errorf("an Ethernet port on an InfiniBand profile: %q", bad)
	}
	if bad, _ := linkLayerFindings([]node.NIC{ib, eth}, "Ethernet", "x-roce"); len(bad) != 1 || !strings.Contains(bad[0], "LINK_TYPE_P1=2") {
		t.Errorf("an InfiniBand port on a RoCE profile: %q", bad)
	}
}
