package fabric

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/node"
)

// portName names a rail port in messages: "mlx5_3 port 1 (ens3np0)".
func portName(n node.NIC, p node.NICPort) string {
	s := fmt.Sprintf("%s port %d", n.Name, p.Port)
	if p.NetDev != "" {
		s += " (" + p.NetDev + ")"
	}
	return s
}

// roceRails are the rail ports in Ethernet mode (RoCE), each with its NIC.
func roceRails(rails []node.NIC) (nics []node.NIC, ports []node.NICPort) {
	for _, n := range rails {
		for _, p := range n.Ports {
			if p.LinkLayer == baseline.LinkEthernet {
				nics, ports = append(nics, n), append(ports, p)
			}
		}
	}
	return nics, ports
}

// gidFindings judges the GID NCCL uses on each RoCE rail port
// (node.NCCLGID: NCCL_IB_GID_INDEX where the job inherits it, else NCCL's
// own choice): it must be a used RoCE v2 entry that is not link-local.
// RoCE v1, a link-local fe80 address or an unused index fail the
// connection (ibv_modify_qp timeouts, completion error 12:
// NVIDIA/nccl#426, NVIDIA/nccl#1510, openucx/ucx#7785). unknown lists the
// ports whose table could not be read.
func gidFindings(rails []node.NIC, o *node.Overrides) (bad, notes, unknown []string) {
	nics, ports := roceRails(rails)
	for i, p := range ports {
		n := nics[i]
		if p.RoCEError != "" {
			unknown = append(unknown, fmt.Sprintf("%s: %s", portName(n, p), p.RoCEError))
			continue
		}
		c, ok := node.NCCLGID(p.GIDs, o)
		if !ok {
			unknown = append(unknown, portName(n, p)+": no GID table (a recording made before gdrcheck kept it)")
			continue
		}
		if c.Err != "" {
			bad = append(bad, fmt.Sprintf("%s: %s; NCCL reads it as a number, so set it to the index of a RoCE v2 GID or unset it", portName(n, p), c.Err))
		}
		from := "NCCL's own choice"
		if c.Set != nil {
			from = fmt.Sprintf("NCCL_IB_GID_INDEX=%d (%s)", c.Index, c.Set.Where())
		}
		why := ""
		switch g := c.Entry; {
		case g == nil:
			why = "an unused entry: no address to connect from"
		case g.RoCEVersion() != 2:
			why = fmt.Sprintf("%s, %s: RoCE v1 is not routed and peers on RoCE v2 cannot reach it", g.GID, orUnknown(g.Type))
		case g.LinkLocal():
			why = fmt.Sprintf("%s, RoCE v2 with a link-local fe80 address: it routes nowhere past the port's own link", g.GID)
		default:
			notes = append(notes, fmt.Sprintf("%s: GID %d (%s) %s, RoCE v2", portName(n, p), c.Index, from, g.GID))
			continue
		}
		bad = append(bad, fmt.Sprintf("%s: NCCL would use GID %d (%s), %s; connections time out (completion error 12). %s",
			portName(n, p), c.Index, from, why, gidFix(p, c)))
	}
	return bad, notes, unknown
}

// gidFix names the fix: the index of a RoCE v2 IPv4 entry the port has,
// else the address its netdev lacks.
func gidFix(p node.NICPort, c node.GIDChoice) string {
	good := slices.IndexFunc(p.GIDs, node.GID.RoCEv2IPv4)
	netdev := p.NetDev
	if netdev == "" {
		netdev = "the port's netdev"
	}
	switch {
	case good >= 0 && c.Set != nil:
		return fmt.Sprintf("Fix: set NCCL_IB_GID_INDEX=%d (%s, the RoCE v2 IPv4 entry; show_gids lists them) or unset it", p.GIDs[good].Index, c.Set.Where())
	case good >= 0:
		return fmt.Sprintf("Fix: set NCCL_IB_GID_INDEX=%d, the RoCE v2 IPv4 entry (show_gids lists them)", p.GIDs[good].Index)
	}
	return fmt.Sprintf("Fix: give %s its IPv4 address, so the kernel adds a RoCE v2 GID for it, and check NCCL_IB_GID_INDEX (show_gids lists the entries)", netdev)
}

// mtuFindings judges the RoCE rails' active MTUs against each other. A
// rail below the node's others fails, naming it: NCCL 2.20.3 and later
// no longer renegotiate the MTU with a peer and hang
// (NVIDIA/nccl#1524, NVIDIA/nccl#2135). Every rail below 4096 (1024 from
// a netdev left at 1500) warns: it works, in smaller packets.
func mtuFindings(rails []node.NIC) (bad, warn, notes []string) {
	nics, ports := roceRails(rails)
	top := 0
	for _, p := range ports {
		top = max(top, p.ActiveMTU)
	}
	if top == 0 {
		return nil, nil, nil
	}
	var at []string
	for i, p := range ports {
		n := nics[i]
		switch {
		case p.ActiveMTU == 0:
			notes = append(notes, fmt.Sprintf("%s: active MTU unknown (no netdev MTU read)", portName(n, p)))
		case p.ActiveMTU < top:
			bad = append(bad, fmt.Sprintf("%s runs at active MTU %d (netdev MTU %d), the node's other RoCE rails at %d: NCCL 2.20.3 and later do not renegotiate it and hang with IBV_WC_LOC_LEN_ERR; set the netdev's MTU like the others' (ip link set dev %s mtu <theirs>, persistently in its network config)",
				portName(n, p), p.ActiveMTU, p.NetMTU, top, netdevOf(p)))
		default:
			at = append(at, portName(n, p))
		}
	}
	notes = append(notes, fmt.Sprintf("active MTU %d on %s", top, strings.Join(at, ", ")))
	if len(bad) == 0 && top < 4096 {
		warn = append(warn, fmt.Sprintf("every RoCE rail runs at active MTU %d (netdev MTU below 4200; 1500 gives 1024): RoCE moves data in %d-byte packets instead of 4096; set the rail netdevs' MTU to 4200 or more (9000 is usual) on every node alike", top, top))
	}
	return bad, warn, notes
}

func netdevOf(p node.NICPort) string {
	if p.NetDev == "" {
		return "<its netdev>"
	}
	return p.NetDev
}

func orUnknown(s string) string {
	if s == "" {
		return "type unknown"
	}
	return s
}
