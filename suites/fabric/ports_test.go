package fabric

import (
	"fmt"
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

func TestLinkLayerFindingsNameTheOddPortTheMajorityAndTheFix(t *testing.T) {
	nic := func(name, bus, layer string) node.NIC {
		return node.NIC{Name: name, BusID: bus, Ports: []node.NICPort{{Port: 1, LinkLayer: layer, NetDev: "ib" + name}}}
	}
	ib := func(i int) node.NIC {
		return nic(fmt.Sprintf("mlx5_%d", i), fmt.Sprintf("0000:%02x:00.0", 0x18+i), "InfiniBand")
	}
	eth := func(i int) node.NIC {
		return nic(fmt.Sprintf("mlx5_%d", i), fmt.Sprintf("0000:%02x:00.0", 0x18+i), "Ethernet")
	}

	bad, _, known := linkLayerFindings([]node.NIC{ib(0), ib(1), ib(2), eth(3)})
	if len(bad) != 1 || known != 4 || !strings.HasPrefix(bad[0], "mlx5_3 port 1 (ibmlx5_3) runs Ethernet, 3 of the node's 4 rail ports InfiniBand") ||
		!strings.Contains(bad[0], "mlxconfig -d 0000:1b:00.0 set LINK_TYPE_P1=1") || !strings.Contains(bad[0], "mlxfwreset -d 0000:1b:00.0 reset") {
		t.Errorf("one port flipped to Ethernet: %q", bad)
	}
	bad, _, _ = linkLayerFindings([]node.NIC{eth(0), ib(1), eth(2)})
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "mlx5_1 port 1 (ibmlx5_1) runs InfiniBand, 2 of the node's 3 rail ports Ethernet") || !strings.Contains(bad[0], "LINK_TYPE_P1=2") {
		t.Errorf("one port flipped to InfiniBand among RoCE rails: %q", bad)
	}
	bad, _, _ = linkLayerFindings([]node.NIC{ib(0), eth(1), ib(2), eth(3)})
	if want := "the rail ports split evenly between link layers: Ethernet on mlx5_1 port 1 (ibmlx5_1), mlx5_3 port 1 (ibmlx5_3); InfiniBand on mlx5_0 port 1 (ibmlx5_0), mlx5_2 port 1 (ibmlx5_2)"; len(bad) != 1 || !strings.HasPrefix(bad[0], want) {
		t.Errorf("an even split: %q, want %q", bad, want)
	}
	// A whole node on either link layer passes: profiles match by it.
	for _, rails := range [][]node.NIC{{ib(0), ib(1)}, {eth(0), eth(1)}} {
		if bad, notes, _ := linkLayerFindings(rails); len(bad) != 0 || len(notes) != 1 || !strings.HasPrefix(notes[0], "all 2 rail ports on ") {
			t.Errorf("%s rails: findings %q, notes %q", rails[0].Ports[0].LinkLayer, bad, notes)
		}
	}
	unknown := nic("mlx5_9", "", "")
	if bad, notes, known := linkLayerFindings([]node.NIC{ib(0), unknown}); len(bad) != 0 || known != 1 || notes[0] != "mlx5_9 port 1 (ibmlx5_9): sysfs gives no link layer" {
		t.Errorf("a port sysfs names no link layer of: %q %q %d", bad, notes, known)
	}
}
