// Package fabric holds the specs that keep a network problem from being
// blamed on the direct-memory path, and the other way round: rail ports
// up at their rate, error counters still while the benchmarks ran, no NIC
// traffic in a single-node run that should stay on NVLink, and RDMA from
// GPU memory against RDMA from host memory through each rail.
package fabric

import (
	"fmt"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/perftest"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

// strayBytes is how much a NIC may move during an NVLink run before it
// counts as a wrong path: management traffic (IPoIB, subnet manager) is
// small; a collective staged through the NIC moves gigabytes.
const strayBytes = 64 << 20

// The running spec's inputs, set by BeforeEach. Ginkgo builds its tree
// once per process and runs one spec at a time, so the functions that
// register the specs share them, as one Describe closure's locals did.
var ev *node.Evidence
var c *suites.Context

func noNICs() {
	if len(ev.NICs) == 0 {
		suites.NotApplicable("no RDMA devices on this node (no /sys/class/infiniband entries): no fabric to check")
	}
}

var _ = suites.Describe("fabric", func() {
	BeforeEach(func() {
		c = suites.Current()
		ev = c.Evidence
	})

	portSpecs()
	trafficSpecs()
	bandwidthSpecs()
})

// portSpecs registers the specs of the rail ports' state, rate, link
// layer, GID and MTU.
func portSpecs() {
	It("has every rail port active at its expected rate", func() {
		suites.Remedy(results.ActionCheckCable, results.ScopePort)
		noNICs()
		rails := railNICs(ev)
		if len(rails) == 0 {
			suites.NotApplicable("no GPU has a preferred NIC: no rails")
		}
		var want float64
		if b := c.Baseline; b != nil && b.Profile.NIC.RateGbps > 0 {
			want = b.Profile.NIC.RateGbps
			suites.Note("expected rate %g Gb/s (baseline %s)", want, b.Profile.Name)
		} else {
			suites.Note("no baseline NIC rate: the port state alone is checked")
		}
		var bad []string
		for _, pc := range node.CheckNICPorts(rails, func(string, node.NICPort) float64 { return want }) {
			suites.Record(results.Metric{Name: "port_rate", Value: pc.RateGbps, Unit: "Gb/s", Subject: fmt.Sprintf("%s port %d", pc.NIC, pc.Port)})
			for _, p := range pc.Problems {
				bad = append(bad, fmt.Sprintf("%s port %d: %s", pc.NIC, pc.Port, p))
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	// A port in the other mode never joins the fabric. Profiles match by
	// the link layer most rail ports run (nic.link_layer), and run has no
	// way to name a node's profile, so the matched one agrees with them:
	// what is left to judge is a port unlike the node's others. Nodes
	// unlike each other are the allocation suite's.
	It("runs every rail port on the same link layer", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopePort)
		noNICs()
		rails := railNICs(ev)
		if len(rails) == 0 {
			suites.NotApplicable("no GPU has a preferred NIC: no rails")
		}
		bad, notes, known := linkLayerFindings(rails)
		if known == 0 {
			suites.CannotRun("sysfs gives no rail port's link layer (ports/<n>/link_layer)")
		}
		for _, n := range notes {
			suites.Note("%s", n)
		}
		if b := c.Baseline; b != nil && b.Profile.NIC.LinkLayer != "" {
			suites.Note("baseline %s expects %s, and matched the node by it", b.Profile.Name, b.Profile.NIC.LinkLayer)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("gives NCCL a RoCE v2 GID on every RoCE rail port", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopePort)
		noNICs()
		if _, ports := roceRails(railNICs(ev)); len(ports) == 0 {
			suites.NotApplicable("no rail port in Ethernet mode: no RoCE GID to check")
		}
		bad, notes, unknown := gidFindings(railNICs(ev), ev.Overrides)
		for _, n := range notes {
			suites.Note("%s", n)
		}
		if len(bad) == 0 && len(unknown) > 0 {
			suites.CannotRun("the GID table could not be read: " + strings.Join(unknown, "; "))
		}
		for _, u := range unknown {
			suites.Note("not checked: %s", u)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("runs every RoCE rail port at the node's highest active MTU", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopePort)
		noNICs()
		if _, ports := roceRails(railNICs(ev)); len(ports) == 0 {
			suites.NotApplicable("no rail port in Ethernet mode: InfiniBand MTUs are the subnet manager's")
		}
		bad, warn, notes := mtuFindings(railNICs(ev))
		if len(notes) == 0 {
			suites.CannotRun("no RoCE rail's netdev MTU could be read (a netdev in another namespace, or a recording without class/net)")
		}
		for _, n := range notes {
			suites.Note("%s", n)
		}
		for _, w := range warn {
			suites.Warn("%s", w)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// trafficSpecs registers the specs of what the benchmarks did to the NICs:
// error counters and stray bytes.
func trafficSpecs() {
	It("keeps the error counters still while the benchmarks run", func() {
		suites.Remedy(results.ActionCheckCable, results.ScopePort)
		noNICs()
		runs := measured(c)
		if len(runs) == 0 {
			suites.CannotRun("no benchmark ran (select collectives, or give the fabric suite perftest)")
		}
		var bad []string
		for _, r := range runs {
			for _, g := range r.fabric.GrownErrors() {
				bad = append(bad, fmt.Sprintf("%s grew during %s", g, r.name))
			}
			for _, g := range r.fabric.Grown(node.ClassCongestion) {
				suites.Note("congestion during %s: %s", r.name, g)
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("moves nothing through a NIC in a single-node run that stays on NVLink", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		m := c.NCCL
		if m == nil || m.Expectation.P2P != nccl.ExpectYes {
			if m == nil {
				suites.NotApplicable("no collective ran on this node")
			}
			if m.Shape.GPUs == 1 {
				suites.NotApplicable("one GPU: no single-node run between GPUs to watch the NICs during")
			}
			suites.NotApplicable("the GPUs are not NVLink peers: a single-node run may use the network")
		}
		var bad []string
		checked := 0
		for _, r := range m.Runs {
			if r.Mode.Name != nccl.ModeDirect.Name || r.Result.Fabric == nil {
				continue
			}
			checked++
			total := r.Result.Fabric.TotalBytes()
			suites.Record(results.Metric{Name: "nic_bytes", Value: float64(total), Unit: "B", Subject: r.Op + "_perf"})
			for _, t := range r.Result.Fabric.Traffic() {
				if t.Measured && t.XmitBytes+t.RcvBytes > strayBytes {
					bad = append(bad, fmt.Sprintf("%d MiB crossed %s during %s_perf; a single-node run between NVLink peers should not touch a NIC", (t.XmitBytes+t.RcvBytes)>>20, t.NIC, r.Op))
				}
			}
		}
		if checked == 0 {
			suites.NotApplicable("no direct collective was sampled")
		}
		if len(ev.NICs) == 0 {
			suites.Note("nothing crossed a NIC: the node has no RDMA NICs (0 bytes in %d runs)", checked)
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// bandwidthSpecs registers the specs of GPU memory's RDMA bandwidth
// against host memory's.
func bandwidthSpecs() {
	It("reaches with GPU memory the RDMA bandwidth it reaches with host memory", func() {
		suites.Remedy(results.ActionRerun, results.ScopeNIC) // slow names no cause: measure again
		noNICs()
		if c.Perftest == nil {
			why := "perftest did not run"
			if c.PerftestErr != nil {
				why = c.PerftestErr.Error()
			}
			suites.CannotRun(why)
		}
		limit := 0.9
		if b := c.Baseline; b != nil {
			if cmp, ok := b.Compare(results.RDMAGPUHostRatioMetric, 0, 0); ok {
				limit = cmp.Low
			}
		}
		host := map[string]float64{}
		var bad []string
		for _, r := range c.Perftest {
			if r.Result.Err != nil {
				if r.Mem == perftest.MemHost || r.Mem == perftest.MemCUDADMABuf && ev.Mechanism().Mechanism == node.MechanismDMABuf || r.Mem == perftest.MemCUDA && ev.Mechanism().Mechanism == node.MechanismPeermem {
					bad = append(bad, fmt.Sprintf("ib_write_bw through %s with %s memory failed: %v; %s", r.Rail.NIC, r.Mem, r.Result.Err, ev.BAR1State(r.Rail.GPUBusID)))
				} else {
					suites.Note("ib_write_bw through %s with %s memory failed (not this node's mechanism): %v", r.Rail.NIC, r.Mem, r.Result.Err)
				}
				continue
			}
			bw := r.Result.Result.BWAvgGbps
			if why := beyondPort(ev, r); why != "" {
				// Nothing measured through this rail can be compared.
				bad = append(bad, why)
				continue
			}
			suites.Record(results.Metric{Name: "rdma_write_bw", Value: bw, Unit: "Gb/s", Subject: fmt.Sprintf("%s %s", r.Rail.NIC, r.Mem)})
			if r.Mem == perftest.MemHost {
				host[r.Rail.NIC] = bw
				continue
			}
			if h := host[r.Rail.NIC]; h > 0 {
				ratio := bw / h
				mt := results.Metric{Name: "gpu_host_ratio", Value: ratio, Subject: fmt.Sprintf("%s %s", r.Rail.NIC, r.Mem), Baseline: &limit, Verdict: "pass"}
				if ratio < limit {
					mt.Verdict = "fail"
					bad = append(bad, fmt.Sprintf("%s: %s memory reaches %.1f Gb/s, %.2f of host memory's %.1f; expected at least %.2f", r.Rail.NIC, r.Mem, bw, ratio, h, limit))
				}
				suites.Record(mt)
			}
			if cmp, ok := suites.Compare(results.RDMAGDRMetric, bw, 0); ok && r.Mem != perftest.MemHost && !cmp.Pass {
				bad = append(bad, fmt.Sprintf("%s: %s memory reaches %.1f Gb/s; baseline %s expects %s", r.Rail.NIC, r.Mem, bw, suites.Profile(), cmp.Band()))
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})
}

// beyondPort says why a perftest run's average bandwidth, the one
// compared, cannot be right: above the rate of the NIC's port it went
// through (suites.Impossible), or not a finite number; "" when it can be.
// The peak is not judged: perftest derives it from the shortest
// iteration, and a timer glitch makes it read high on healthy ports.
func beyondPort(ev *node.Evidence, r perftest.RailRun) string {
	var limit node.Limit
	if n, ok := ev.NIC(r.Rail.NIC); ok {
		limit = n.PortLimit()
	}
	return suites.Impossible(fmt.Sprintf("ib_write_bw through %s with %s memory", r.Rail.NIC, r.Mem), r.Result.Result.BWAvgGbps, limit)
}

// railNICs are the NICs some GPU prefers.
func railNICs(ev *node.Evidence) []node.NIC {
	var out []node.NIC
	seen := map[string]bool{}
	for _, p := range ev.Paths {
		if p.Preferred && !seen[p.NIC] {
			seen[p.NIC] = true
			if n, ok := ev.NIC(p.NIC); ok {
				out = append(out, n)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

type sampledRun struct {
	name   string
	fabric node.FabricDelta
}

// measured lists every benchmark run with a counter sample.
func measured(c *suites.Context) []sampledRun {
	var out []sampledRun
	if c.NCCL != nil {
		for _, r := range c.NCCL.Runs {
			if r.Result.Fabric != nil {
				out = append(out, sampledRun{fmt.Sprintf("%s_perf (%s)", r.Op, r.Mode.Name), *r.Result.Fabric})
			}
		}
	}
	for _, r := range c.Perftest {
		if r.Fabric != nil {
			out = append(out, sampledRun{fmt.Sprintf("ib_write_bw through %s (%s)", r.Rail.NIC, r.Mem), *r.Fabric})
		}
	}
	return out
}
