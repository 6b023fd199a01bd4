package nccl

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// ExpectationFor derives the path NCCL should take from the node evidence:
// NVLink or NVSwitch peers use P2P; a GPU with a PIX or PXB NIC uses NET
// with GDRDMA; beyond PXB NCCL stages through the host unless
// NCCL_NET_GDR_LEVEL says otherwise. The sentences say why, for reports.
func ExpectationFor(ev *node.Evidence, nodes int) (Expectation, []string) {
	exp := Expectation{Nodes: nodes}
	var why []string
	nvlinked := 0
	for _, g := range ev.GPUs {
		if g.NVLinks.Up > 0 {
			nvlinked++
		}
	}
	p2pOK := len(ev.GPUPairs) > 0
	for _, p := range ev.GPUPairs {
		if p.P2PRead != "OK" || p.P2PWrite != "OK" {
			p2pOK = false
		}
	}
	switch {
	case len(ev.GPUs) < 2:
		why = append(why, "one GPU per node: no intra-node peers")
	case nvlinked == len(ev.GPUs) && p2pOK:
		exp.P2P = ExpectYes
		why = append(why, fmt.Sprintf("%d GPUs joined by NVLink with working peer access: P2P expected between them", len(ev.GPUs)))
	case p2pOK:
		exp.P2P = ExpectYes
		why = append(why, "GPUs report working PCIe peer access: P2P expected between them")
	default:
		exp.P2P = ExpectNo
		why = append(why, "GPUs report no peer access: SHM is the expected intra-node path")
	}
	if len(ev.NICs) == 0 {
		why = append(why, "no RDMA NICs: no GPUDirect RDMA path to expect")
		return exp, why
	}
	exp.GDR = ExpectYes
	for _, g := range ev.GPUs {
		p, ok := ev.PreferredPath(g.BusID)
		if !ok || !p.Class.GDRByDefault() {
			exp.GDR = ExpectNo
			cls := "no NIC"
			if ok {
				cls = string(p.Class)
			}
			why = append(why, fmt.Sprintf("GPU %s reaches its NIC at %s: NCCL stages through the host (no GDRDMA) unless NCCL_NET_GDR_LEVEL allows it", g.BusID, cls))
		}
	}
	if exp.GDR == ExpectYes {
		why = append(why, "every GPU has a PIX/PXB NIC: NET with GDRDMA expected on every inter-node channel")
		for _, p := range ev.Paths {
			if p.Preferred && p.Class == node.PathP2C {
				why = append(why, "the NICs are reached over NVLink-C2C (P2C): NCCL 2.27 and later use GDRDMA there by default, earlier ones only with NCCL_NET_GDR_C2C=1")
				break
			}
		}
	}
	return exp, why
}
