package runner

import (
	"fmt"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/node"
)

// railNode is a node of len(layers) GPUs, each preferring its own NIC
// whose one port runs layers[i], plus a front-end NIC no GPU prefers.
func railNode(frontEnd string, layers ...string) *node.Evidence {
	ev := &node.Evidence{}
	for i, l := range layers {
		gpu, nic := fmt.Sprintf("0000:%02x:00.0", 0x10+i), fmt.Sprintf("mlx5_%d", i)
		ev.GPUs = append(ev.GPUs, node.GPU{BusID: gpu})
		ev.NICs = append(ev.NICs, node.NIC{Name: nic, HCAType: "MT4129", Ports: []node.NICPort{{Port: 1, LinkLayer: l, RateGbps: 400}}})
		ev.Paths = append(ev.Paths, node.Path{GPU: gpu, NIC: nic, Preferred: true},
			node.Path{GPU: gpu, NIC: "mlx5_fe"})
	}
	ev.NICs = append(ev.NICs, node.NIC{Name: "mlx5_fe", HCAType: "MT4125", Ports: []node.NICPort{{Port: 1, LinkLayer: frontEnd, RateGbps: 100}}})
	return ev
}

func TestBaselineFactsCarryTheRailPortsLinkLayer(t *testing.T) {
	ib, eth := baseline.LinkInfiniBand, baseline.LinkEthernet
	for _, tc := range []struct {
		name string
		ev   *node.Evidence
		want string
	}{
		{"InfiniBand rails beside an Ethernet front-end NIC", railNode(eth, ib, ib, ib, ib), ib},
		{"RoCE rails beside an InfiniBand storage NIC", railNode(ib, eth, eth, eth, eth), eth},
		{"one rail flipped: the most ports' link layer", railNode(eth, ib, eth, ib, ib), ib},
		{"as many on each", railNode(eth, ib, eth, eth, ib), baseline.LinkMixed},
		{"no rail port names its link layer", railNode(eth, "", ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := BaselineFacts(tc.ev, "")
			if f.LinkLayer != tc.want || f.NICModel != "ConnectX-7" || f.NICRateGbps != 400 {
				t.Errorf("facts %+v, want link layer %q of the ConnectX-7 rails", f, tc.want)
			}
		})
	}
}
