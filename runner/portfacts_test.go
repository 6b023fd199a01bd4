package runner

import (
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

// portFacts writes a value every port shares once, else each port's, and
// leaves out the NICs no GPU's rail uses.
func TestPortFactsSayWhatTheRailPortsRun(t *testing.T) {
	ib, eth := baseline.LinkInfiniBand, baseline.LinkEthernet
	for _, tc := range []struct {
		name string
		ev   func(t *testing.T) *node.Evidence
		want []results.Fact
	}{
		{"eight InfiniBand rails: one value each",
			func(t *testing.T) *node.Evidence { return fixture(t, "h100x8-nvswitch-cx7-pix", false) },
			[]results.Fact{{Name: "link_layer", Value: ib}, {Name: "hca_fw", Value: "28.39.1002"}}},
		{"an NCCL without a net plugin says none",
			func(t *testing.T) *node.Evidence { return fixture(t, "h100x8-nccl221-peermem-only", false) },
			[]results.Fact{{Name: "link_layer", Value: ib}, {Name: "hca_fw", Value: "28.39.1002"}, {Name: "nccl_net_plugin", Value: "none"}}},
		{"no GPU: every NIC counts, a RoCE port adds its GID index and MTU",
			func(t *testing.T) *node.Evidence { return nodetest.Probed(t, nodetest.IBAndRoCE) },
			[]results.Fact{{Name: "link_layer", Value: "mlx5_0:1=InfiniBand mlx5_1:1=Ethernet"},
				{Name: "roce_gid_index", Value: "3"}, {Name: "roce_active_mtu", Value: "4096"}, {Name: "hca_fw", Value: "28.39.1002"}}},
		{"the front-end NIC no GPU prefers is left out",
			func(*testing.T) *node.Evidence { return railNode(eth, ib, ib) },
			[]results.Fact{{Name: "link_layer", Value: ib}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := portFacts(tc.ev(t)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestPerPortStringIsTheSharedValueElseEachPorts(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   []string
		vals []string
		want string
	}{
		{"no port", nil, nil, ""},
		{"an empty value is not added", []string{"mlx5_0:1"}, []string{""}, ""},
		{"one value on every port", []string{"mlx5_0:1", "mlx5_1:1"}, []string{"4096", "4096"}, "4096"},
		{"values that differ, each port's", []string{"mlx5_0:1", "mlx5_1:1"}, []string{"4096", "1024"}, "mlx5_0:1=4096 mlx5_1:1=1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p perPort
			for i := range tc.at {
				p.add(tc.at[i], tc.vals[i])
			}
			if got := p.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
