package reports

import (
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// What the page says first about each node: its status as one word, and
// whether GPUDirect RDMA was proven there (GDRTable's row for it).

// Node badges: a node's status in one word, as the text tables spell it.
const (
	badgePass        = "PASS"
	badgeFail        = "FAIL"
	badgeSkip        = "SKIP"
	badgeMissing     = "MISSING"
	badgeUnevaluable = "UNEVALUABLE"
)

// nodeBadge is the node's status in one word and its class: a node that
// ran but failed a spec reads FAIL, not "evaluated"; one whose every spec
// skipped reads SKIP, not PASS.
func nodeBadge(n results.Node) (word, class string) {
	switch n.Status {
	case results.NodeMissing:
		return badgeMissing, "bad"
	case results.NodeEvaluated:
	default:
		return badgeUnevaluable, "bad"
	}
	c := n.Counts()
	switch {
	case c.Failed > 0:
		return badgeFail, "bad"
	case c.Tests > 0 && c.Skipped == c.Tests:
		return badgeSkip, "skip"
	}
	return badgePass, "good"
}

// htmlGDR is one node's "GPUDirect RDMA" row: the mechanism, whether GPU
// memory registered with the rail NICs, the path NCCL took through the
// NICs, and the verdict.
type htmlGDR struct {
	Mechanism, Registered, Through string
	Verdict, Class                 string
}

// gdrRows reads GDRTable's rows, by node label, so the page and the
// console never disagree.
func gdrRows(r *results.Results) map[string][]string {
	out := map[string][]string{}
	for _, row := range GDRTable(r).Rows {
		out[row[0]] = row
	}
	return out
}

// gdrOf is the node's GPUDirect RDMA row. A node GDRTable has no row for
// was not proven either, and says why: it never reported, could not be
// evaluated, or the proof skipped or did not run. Only a node without RDMA
// NICs has nothing to prove (nil).
func gdrOf(n results.Node, rows map[string][]string) *htmlGDR {
	if row, ok := rows[nodeLabel(n)]; ok {
		g := &htmlGDR{Mechanism: row[1], Registered: row[2], Through: row[3], Verdict: row[4], Class: "good"}
		if g.Verdict != "proven" {
			g.Class = "bad"
		}
		return g
	}
	g := &htmlGDR{Mechanism: dash(n.Fact("mechanism")), Registered: "-", Through: "-", Class: "bad"}
	proofName := gdrProofSpec
	if n.Name == results.AllocationNode {
		proofName = acrossNodesSpec
	}
	proof, ran := specNamed(n, proofName)
	switch {
	case n.Status == results.NodeMissing:
		g.Verdict = "NOT PROVEN: the node never reported"
	case n.Status != results.NodeEvaluated:
		g.Verdict = "NOT PROVEN: the node could not be evaluated"
	case ran && strings.HasPrefix(proof.Message, "no RDMA NICs"):
		return nil
	case !ran && n.Fact("rdma_nics") == "0":
		return nil
	case ran && proof.Message != "":
		g.Verdict, g.Class = "NOT PROVEN: skipped: "+firstLine(proof.Message), "skip"
	case ran:
		g.Verdict, g.Class = "NOT PROVEN: skipped", "skip"
	case n.Name == results.AllocationNode:
		return nil // no multi-node run: nothing between nodes to prove
	default:
		g.Verdict, g.Class = "NOT PROVEN: the negative suite, which proves it, did not run", "skip"
	}
	return g
}

// gdrProof is the verdict of the node's GPUDirect RDMA proof on the mode
// it forces (NCCL off P2P and SHM, onto the NICs), apart from whether the
// fallback was detected: a mode can be told from direct and still have
// staged through the host. Empty for every other mode, and where the
// proof skipped.
func gdrProof(n results.Node, mode string) (text, class string) {
	if mode != forcedOntoNetwork {
		return "", ""
	}
	proof, ok := specNamed(n, gdrProofSpec)
	switch {
	case !ok || proof.State == results.StateSkipped || proof.State == results.StatePending:
		return "", ""
	case proof.State == results.StatePassed:
		return "GDRDMA proven", "good"
	}
	return "GDR NOT PROVEN", "bad"
}

// forcedOntoNetwork is the mode the GPUDirect RDMA proof reads (the one
// GDRTable's "NCCL through the NICs" shows).
const forcedOntoNetwork = "p2p-shm-disabled"
