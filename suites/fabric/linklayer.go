package fabric

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/node"
)

// linkType is mlxconfig's LINK_TYPE_P<n> value of a link layer.
var linkType = map[string]string{baseline.LinkInfiniBand: "1", baseline.LinkEthernet: "2"}

// linkLayerFindings judges the rail ports of one node against each other:
// a VPI port in the other mode never joins the fabric
// (claudebarthels/infinity#5, NVIDIA/nccl#958), and one card flipped by a
// firmware reset or a stray mlxconfig is the usual way it happens. Each
// port off the link layer most of them run fails, naming the majority and
// the mlxconfig setting back to it; with no majority the groups are
// named. A node all on one link layer passes whichever it is: profiles
// match by it (nic.link_layer), so a RoCE node is no InfiniBand node's
// failure. A port whose link layer sysfs does not say is a note; known
// counts the others.
func linkLayerFindings(rails []node.NIC) (bad, notes []string, known int) {
	on := map[string][]string{}
	for _, n := range rails {
		for _, p := range n.Ports {
			if p.LinkLayer == "" {
				notes = append(notes, fmt.Sprintf("%s: sysfs gives no link layer", portName(n, p)))
				continue
			}
			on[p.LinkLayer] = append(on[p.LinkLayer], portName(n, p))
		}
	}
	layers := make([]string, 0, len(on))
	total := 0
	for l, ports := range on {
		layers = append(layers, l)
		total += len(ports)
	}
	// Most ports first; ties in name order, so messages are stable.
	sort.Slice(layers, func(i, j int) bool {
		if a, b := len(on[layers[i]]), len(on[layers[j]]); a != b {
			return a > b
		}
		return layers[i] < layers[j]
	})
	switch {
	case len(layers) == 0:
		return nil, notes, 0
	case len(layers) == 1:
		return nil, append(notes, fmt.Sprintf("all %d rail ports on %s", total, layers[0])), total
	case len(on[layers[0]]) == len(on[layers[1]]):
		var groups []string
		for _, l := range layers {
			groups = append(groups, fmt.Sprintf("%s on %s", l, strings.Join(on[l], ", ")))
		}
		return []string{fmt.Sprintf("the rail ports split evenly between link layers: %s; set every card to the fabric's (mlxconfig -d <dev> set LINK_TYPE_P<port>=1 for InfiniBand, 2 for Ethernet) and reset it (mlxfwreset -d <dev> reset, or reboot)",
			strings.Join(groups, "; "))}, notes, total
	}
	want := layers[0]
	for _, n := range rails {
		for _, p := range n.Ports {
			if p.LinkLayer == "" || p.LinkLayer == want {
				continue
			}
			dev := n.BusID
			if dev == "" {
				dev = n.Name
			}
			fix := fmt.Sprintf("set it back to %s (mlxconfig -d %s set LINK_TYPE_P%d=%s; 1 InfiniBand, 2 Ethernet)", want, dev, p.Port, linkType[want])
			if linkType[want] == "" {
				fix = fmt.Sprintf("set its port type like the others' (mlxconfig -d %s query LINK_TYPE_P%d)", dev, p.Port)
			}
			bad = append(bad, fmt.Sprintf("%s runs %s, %d of the node's %d rail ports %s: its port type was flipped (a firmware reset or mlxconfig), so it never joins their fabric; %s and reset the card (mlxfwreset -d %s reset, or reboot)",
				portName(n, p), p.LinkLayer, len(on[want]), total, want, fix, dev))
		}
	}
	return bad, notes, total
}
