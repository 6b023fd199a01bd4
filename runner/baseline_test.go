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

// The fixture nodes described as profiles are, matched against the
// shipped baselines.
func TestBaselineFactsOfTheFixtureNodesMatchTheirProfile(t *testing.T) {
	store, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		node    string
		want    string // profile; "" for none
		nic     string
		link    string
		connect string
	}{
		{"h100x8-nvswitch-cx7-pix", "h100x8-ndr", "ConnectX-7", baseline.LinkInfiniBand, "NV18"},
		{"h200x2-nv18-vm", "h200x2-nv18", baseline.NoNIC, "", "NV18"},
		// The same H100s, two to a VM: no shipped profile of two.
		{"h100x2-vm-nccl-topo-file", "", "ConnectX-7", baseline.LinkInfiniBand, "NV18"},
		// Without NVML, no model and no NVLink: a match would be a guess.
		{"h100x8-nvml-version-mismatch", "", "ConnectX-7", baseline.LinkInfiniBand, "PCIe"},
	} {
		t.Run(tc.node, func(t *testing.T) {
			f := BaselineFacts(fixture(t, tc.node, false), "")
			if f.NICModel != tc.nic || f.LinkLayer != tc.link || f.Interconnect != tc.connect {
				t.Errorf("facts %+v: want NIC %q, link layer %q, interconnect %q", f, tc.nic, tc.link, tc.connect)
			}
			b, err := store.Match(f)
			switch {
			case tc.want == "" && (b != nil || err == nil):
				t.Errorf("matched %v (%v), want no profile", b, err)
			case tc.want != "" && (b == nil || b.Profile.Name != tc.want):
				t.Errorf("matched %v (%v), want %s", b, err, tc.want)
			}
		})
	}
}
