package results

import (
	"sort"
	"strings"
)

// PathTransport names how a run's data moved: between nodes, the network
// classes NCCL used joined by "+" (NET/IB/GDRDMA; inside each node P2P
// outnumbers them, so the dominant class would hide them); on one node,
// or where the log shows no network class, its dominant Transport.
func (r Run) PathTransport() string {
	if len(r.Nodes) >= 2 {
		var net []string
		for c := range r.Transports {
			if strings.HasPrefix(c, "NET/") || c == "CollNet" {
				net = append(net, c)
			}
		}
		if len(net) > 0 {
			sort.Strings(net)
			return strings.Join(net, "+")
		}
	}
	return r.Transport
}
