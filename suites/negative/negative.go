// Package negative holds the comparative tests that turn GPUDirect from an
// assumption into evidence: NCCL is forced off the direct path in each way
// DESIGN.md lists, and every forced fallback must be detected, by the
// transport NCCL reports and by the bandwidth it loses. A fallback gdrcheck
// cannot see is a failure: the same blindness would hide a real one.
package negative

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

// The running spec's inputs, set by BeforeEach. Ginkgo builds its tree
// once per process and runs one spec at a time, so the functions that
// register the specs share them, as one Describe closure's locals did.
var m *nccl.Measurements

var _ = suites.Describe("negative", func() {
	BeforeEach(func() {
		m = suites.Measurements()
	})

	fallbackSpecs()
	networkSpecs()
})

// fallbackSpecs registers the specs of the direct reference and each
// forced fallback it must be told from.
func fallbackSpecs() {
	// The direct run off the direct path is the path NCCL took: its
	// settings' or the peer memory's, which the kernel suite names.
	It("runs all_reduce on the direct path as the reference", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		if m.Shape.GPUs == 1 {
			suites.NotApplicable("one GPU: no intra-node transport to force a fallback from, so no reference to judge one against; " + suites.AcrossNodes)
		}
		Expect(m).To(suites.HaveCompletedDirect("all_reduce"))
		d, _ := m.Direct("all_reduce")
		Expect(d.Result).To(suites.HaveNCCLLog("all_reduce_perf", "NCCL_DEBUG=INFO unset?"))
		v := d.Result.Log.Verdict(m.Expectation)
		suites.Record(results.Metric{Name: "busbw", Value: d.Result.BusBW(), Unit: "GB/s", Subject: "direct"})
		if d.Result.CPUPct != nil {
			suites.Record(results.Metric{Name: "cpu_pct", Value: *d.Result.CPUPct, Unit: "%", Subject: "direct"})
		}
		if c, ok := d.Result.CPUPerGB(); ok {
			suites.Record(results.Metric{Name: results.CPUPerGBMetric, Value: c, Unit: "s/GB", Subject: "direct"})
		}
		suites.Note("direct: %s (%s)", v.Verdict, nccl.TransportSummary(d.Result.Log.Transports))
		Expect(v).To(suites.BeTheDirectReference())
	})

	for _, mode := range []nccl.Mode{nccl.ModeP2PDisabled, nccl.ModeP2PSHMDisabled, nccl.ModeGDRLoc, nccl.ModeIBDisabled, nccl.RemoteHCA("")} {
		mode := mode
		It("detects the fallback forced by "+describe(mode), func() {
			// A fallback not told from the direct run proves nothing
			// either way: measure again once the direct path holds.
			suites.Remedy(results.ActionRerun, results.ScopeNode)
			f, ok := m.Find("all_reduce", mode.Name)
			if !ok {
				suites.NotApplicable(fmt.Sprintf("%s not run: %s", mode.Name, why(mode, m.Shape)))
			}
			d, ok := m.Direct("all_reduce")
			if !ok || d.Result.Err != nil || d.Result.Log == nil {
				suites.NotApplicable("no direct all_reduce_perf run to compare with")
			}
			Expect(f).To(suites.HaveCompleted())
			Expect(f.Result).To(suites.HaveNCCLLog(mode.Name + " run"))
			was, now := d.Result.Log.Dominant(), f.Result.Log.Dominant()
			ratio, haveRatio := nccl.Ratio(f.Result, d.Result)
			limit, required := suites.RatioLimit(mode.Name, m.Shape)
			suites.Record(results.Metric{Name: "busbw", Value: f.Result.BusBW(), Unit: "GB/s", Subject: mode.Name})
			if haveRatio {
				suites.RecordRatio(mode.Name, ratio, limit, required, fmt.Sprintf("%s kept %.2f of the direct busbw: no baseline states what it costs on this hardware and it need not cost much off PCIe P2P, so its transport detects it", mode.Name, ratio))
			}
			if f.Result.CPUPct != nil {
				suites.Record(results.Metric{Name: "cpu_pct", Value: *f.Result.CPUPct, Unit: "%", Subject: mode.Name})
			}
			suites.Note("%s: %s, was %s (%s)", mode.Name, orNone(now), was, nccl.TransportSummary(f.Result.Log.Transports))
			if !mode.Landed(now) {
				suites.Note("expected to land on %s, landed on %s", mode.Expect, orNone(now))
			}
			dc, dok := d.Result.CPUPerGB()
			fc, fok := f.Result.CPUPerGB()
			var costs []string
			if mt, finding, ok := suites.CPUCost(mode.Name, dc, fc, dok, fok); ok {
				suites.Record(mt)
				suites.Note("%s: %.4g CPU s/GB, direct %.4g (%.1fx)", mode.Name, fc, dc, fc/dc)
				if finding != "" {
					costs = append(costs, finding)
				}
			}
			Expect(suites.ForcedFallback{Env: mode.Env, Was: was, Now: now, Ratio: ratio, Compared: haveRatio, Limit: limit, ByTransport: !required}).To(suites.BeDetected())
			Expect(costs).To(suites.HaveNoFindings())
		})
	}
}

// networkSpecs registers the specs of the runs forced onto the network:
// GPUDirect RDMA and rail placement.
func networkSpecs() {
	// On one node the direct path never touches a NIC (P2P between the
	// GPUs): forced onto the network, NCCL shows whether it reaches the
	// GPUs' memory through the NICs directly (GDRDMA) or stages it
	// through the host. This is the node's own proof of GPUDirect RDMA.
	It("proves GPUDirect RDMA through the NICs when forced onto the network", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		switch {
		case m.Shape.NICs == 0:
			suites.NotApplicable("no RDMA NICs on this node: there is no GPUDirect RDMA path to prove")
		case m.Expectation.GDR != nccl.ExpectYes:
			suites.NotApplicable("not every GPU has a PIX/PXB NIC: NCCL stages through the host there by design (NCCL_NET_GDR_LEVEL), so GDRDMA is not expected")
		}
		f, ok := m.Find("all_reduce", nccl.ModeP2PSHMDisabled.Name)
		if !ok {
			suites.NotApplicable(fmt.Sprintf("%s not run: %s", nccl.ModeP2PSHMDisabled.Name, why(nccl.ModeP2PSHMDisabled, m.Shape)))
		}
		Expect(f).To(suites.HaveCompleted())
		Expect(f.Result).To(suites.HaveNCCLLog(nccl.ModeP2PSHMDisabled.Name + " run"))
		exp := m.Expectation
		v := f.Result.Log.Verdict(exp)
		suites.Note("with P2P and SHM disabled: %s (%s)", v.Verdict, nccl.TransportSummary(f.Result.Log.Transports))
		var bad []string
		if v.Verdict != nccl.VerdictDirect {
			bad = append(bad, "with P2P and SHM disabled NCCL did not reach GPU memory through the NICs: "+v.Reason())
			for _, h := range f.Result.Log.Hints {
				bad = append(bad, fmt.Sprintf("NCCL: %s (%d NIC(s)): %s", h.Text, h.Count, h.Advice))
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	// What NCCL did, against the rails: each GPU's network channels
	// through its own rail NIC, so a wrong or prefix-matched NCCL_IB_HCA,
	// or a topology file of other wiring, is caught by its effect even
	// where the NIC it picked still does GPUDirect RDMA.
	It("puts each GPU's network channels on its rail NIC when forced onto the network", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNIC)
		if m.Shape.NICs == 0 {
			suites.NotApplicable("no RDMA NICs on this node: no rail to put a channel on")
		}
		f, ok := m.Find("all_reduce", nccl.ModeP2PSHMDisabled.Name)
		if !ok {
			suites.NotApplicable(fmt.Sprintf("%s not run: %s", nccl.ModeP2PSHMDisabled.Name, why(nccl.ModeP2PSHMDisabled, m.Shape)))
		}
		Expect(f).To(suites.HaveCompleted())
		Expect(f.Result).To(suites.HaveNCCLLog(nccl.ModeP2PSHMDisabled.Name + " run"))
		r := judgeRails(f.Result.Log, suites.Current().Evidence)
		for _, n := range r.notes {
			suites.Note("%s", n)
		}
		switch {
		case r.judged > 0:
		case r.unplaced > 0:
			suites.CannotRun("the log ties none of its network connections to a GPU of this node and a named NIC: it needs the comm lines with busId and the NET/<net> : Using list (NCCL_DEBUG_SUBSYS=INIT,NET)")
		default:
			suites.NotApplicable(fmt.Sprintf("NCCL sent nothing through an RDMA NIC in this run (%s): no NIC choice to judge", nccl.TransportSummary(f.Result.Log.Transports)))
		}
		suites.Note("%d GPU(s) judged against the rails %s", r.judged, strings.Join(railNICs(suites.Current().Evidence), ", "))
		Expect(r.bad).To(suites.HaveNoFindings())
	})
}

// describe names a mode by the variable that forces it, which stays the
// same across runs (the remote NIC's name does not).
func describe(m nccl.Mode) string {
	switch m.Name {
	case nccl.ModeP2PDisabled.Name:
		return "NCCL_P2P_DISABLE (SHM)"
	case nccl.ModeP2PSHMDisabled.Name:
		return "NCCL_P2P_DISABLE and NCCL_SHM_DISABLE (network)"
	case nccl.ModeGDRLoc.Name:
		return "NCCL_NET_GDR_LEVEL=LOC (host-staged NET/IB)"
	case nccl.ModeIBDisabled.Name:
		return "NCCL_IB_DISABLE (sockets)"
	default:
		return "NCCL_IB_HCA on a topology-remote NIC"
	}
}

func why(m nccl.Mode, shape nccl.Shape) string {
	if shape.GPUs == 1 {
		return "one GPU: no intra-node transport to force a fallback from; " + suites.AcrossNodes
	}
	if m.NeedsNICs {
		if m.Name == "remote-hca" {
			return "needs RDMA NICs on more than one socket or root complex"
		}
		return "needs RDMA NICs"
	}
	return "not in the plan"
}

func orNone(s string) string {
	if s == "" {
		return "no channel lines"
	}
	return s
}
