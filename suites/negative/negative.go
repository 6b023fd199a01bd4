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

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

var _ = suites.Describe("negative", func() {
	var m *nccl.Measurements

	BeforeEach(func() {
		m = suites.Measurements()
	})

	It("runs all_reduce on the direct path as the reference", func() {
		d, ok := m.Direct("all_reduce")
		if !ok || d.Result.Err != nil {
			Fail("the direct all_reduce_perf run failed: " + errText(d.Result.Err))
		}
		if d.Result.Log == nil {
			Fail("all_reduce_perf printed no NCCL log: cannot tell the path (NCCL_DEBUG=INFO unset?)")
		}
		v := d.Result.Log.Verdict(m.Expectation)
		suites.Record(results.Metric{Name: "busbw", Value: d.Result.BusBW(), Unit: "GB/s", Subject: "direct"})
		if d.Result.CPUPct != nil {
			suites.Record(results.Metric{Name: "cpu_pct", Value: *d.Result.CPUPct, Unit: "%", Subject: "direct"})
		}
		suites.Note("direct: %s (%s)", v.Verdict, nccl.TransportSummary(d.Result.Log.Transports))
		if v.Verdict != nccl.VerdictDirect {
			Fail(fmt.Sprintf("the reference run is not direct (%s): %s; forced fallbacks cannot be judged against it", v.Verdict, v.Reason()))
		}
	})

	for _, mode := range []nccl.Mode{nccl.ModeP2PDisabled, nccl.ModeP2PSHMDisabled, nccl.ModeGDRLoc, nccl.ModeIBDisabled, nccl.RemoteHCA("")} {
		mode := mode
		It("detects the fallback forced by "+describe(mode), func() {
			f, ok := m.Find("all_reduce", mode.Name)
			if !ok {
				Skip(fmt.Sprintf("%s not run: %s", mode.Name, why(mode)))
			}
			d, ok := m.Direct("all_reduce")
			if !ok || d.Result.Err != nil || d.Result.Log == nil {
				Skip("no direct all_reduce_perf run to compare with")
			}
			if f.Result.Err != nil {
				Fail(fmt.Sprintf("%s run failed: %s", mode.Name, f.Result.Err))
			}
			if f.Result.Log == nil {
				Fail(fmt.Sprintf("%s run printed no NCCL log: cannot tell the path", mode.Name))
			}
			was, now := d.Result.Log.Dominant(), f.Result.Log.Dominant()
			ratio, haveRatio := nccl.Ratio(f.Result, d.Result)
			limit := suites.RatioLimit(mode.Name)
			suites.Record(results.Metric{Name: "busbw", Value: f.Result.BusBW(), Unit: "GB/s", Subject: mode.Name})
			if haveRatio {
				mt := results.Metric{Name: "ratio_to_direct", Value: ratio, Subject: mode.Name}
				mt.Baseline, mt.Verdict = &limit, "pass"
				if ratio >= limit {
					mt.Verdict = "fail"
				}
				suites.Record(mt)
			}
			if f.Result.CPUPct != nil {
				suites.Record(results.Metric{Name: "cpu_pct", Value: *f.Result.CPUPct, Unit: "%", Subject: mode.Name})
			}
			suites.Note("%s: %s, was %s (%s)", mode.Name, orNone(now), was, nccl.TransportSummary(f.Result.Log.Transports))
			if !mode.Landed(now) {
				suites.Note("expected to land on %s, landed on %s", mode.Expect, orNone(now))
			}
			var missed []string
			if now == was {
				missed = append(missed, fmt.Sprintf("transport stayed %s", was))
			}
			switch {
			case !haveRatio:
				missed = append(missed, "no common message size to compare bandwidth at")
			case ratio >= limit:
				missed = append(missed, fmt.Sprintf("busbw kept %.2f of the direct run (limit %.2f)", ratio, limit))
			}
			if len(missed) > 0 {
				Fail(fmt.Sprintf("forced fallback %s not detected: %s", strings.Join(mode.Env, " "), strings.Join(missed, "; ")))
			}
		})
	}
})

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

func why(m nccl.Mode) string {
	if m.NeedsNICs {
		if m.Name == "remote-hca" {
			return "needs RDMA NICs on more than one socket or root complex"
		}
		return "needs RDMA NICs"
	}
	return "not in the plan"
}

func errText(err error) string {
	if err == nil {
		return "not run"
	}
	return err.Error()
}

func orNone(s string) string {
	if s == "" {
		return "no channel lines"
	}
	return s
}
