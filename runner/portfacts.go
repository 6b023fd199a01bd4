package runner

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// portFacts are the properties that must agree across the nodes of a job
// (suites/allocation judges them in the merged report): each rail port's
// link layer, RoCE GID index and active MTU, the HCA firmware, and the NCCL
// net plugin. A value the same on every port is written once, so nodes
// compare by one short string.
func portFacts(ev *node.Evidence) []results.Fact {
	rails := map[string]bool{}
	for _, nics := range ev.Rails() {
		for _, n := range nics {
			rails[n] = true
		}
	}
	var layer, gid, mtu, fw perPort
	for _, n := range ev.NICs {
		if len(rails) > 0 && !rails[n.Name] {
			continue // a storage or management NIC: no job traffic
		}
		fw.add(n.Name, n.FirmwareVer)
		for _, p := range n.Ports {
			at := n.Name + ":" + strconv.FormatUint(uint64(p.Port), 10)
			layer.add(at, p.LinkLayer)
			if p.LinkLayer != "Ethernet" {
				continue
			}
			// The index NCCL uses: NCCL_IB_GID_INDEX where the job
			// inherits one, else NCCL's own choice from the table.
			if c, ok := node.NCCLGID(p.GIDs, ev.Overrides); ok {
				gid.add(at, strconv.Itoa(c.Index))
			}
			if p.ActiveMTU > 0 {
				mtu.add(at, strconv.Itoa(p.ActiveMTU))
			}
		}
	}
	var f []results.Fact
	add := func(k, v string) {
		if v != "" {
			f = append(f, results.Fact{Name: k, Value: v})
		}
	}
	add("link_layer", layer.String())
	add("roce_gid_index", gid.String())
	add("roce_active_mtu", mtu.String())
	add("hca_fw", fw.String())
	if l := ev.NCCL; l != nil {
		var names []string
		for _, p := range l.NetPlugins {
			names = append(names, path.Base(p))
		}
		if len(names) == 0 {
			names = []string{"none"}
		}
		add("nccl_net_plugin", strings.Join(names, ", "))
	}
	return f
}

// perPort is one property over the ports or NICs of a node.
type perPort struct{ at, vals []string }

func (p *perPort) add(at, v string) {
	if v != "" {
		p.at, p.vals = append(p.at, at), append(p.vals, v)
	}
}

// String is the one value every port has, else each port's: "4096", or
// "mlx5_0:1=4096 mlx5_1:1=1024".
func (p perPort) String() string {
	same := true
	for _, v := range p.vals {
		same = same && v == p.vals[0]
	}
	if same && len(p.vals) > 0 {
		return p.vals[0]
	}
	parts := make([]string, len(p.vals))
	for i := range p.vals {
		parts[i] = fmt.Sprintf("%s=%s", p.at[i], p.vals[i])
	}
	return strings.Join(parts, " ")
}
