package reports

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gdrcheck/gdrcheck/results"
)

// The Prometheus textfile (--prom-textfile) is the GPUDirect evidence of
// results.json as node_exporter's textfile collector reads it: gauges in
// base units, _info series that carry labels, and a node label on every
// series. This file is the per-node form, which gdrcheck run writes on the
// node it ran on; a job writes the allocation form (prom_alloc.go). Like
// every view it only renders: the verdicts in it are the specs'
// (gdrcheck_spec_failures) and the path verdict the harness recorded for
// each run.

// PromExt is the suffix node_exporter's textfile collector reads.
const PromExt = ".prom"

// runLabels name a node-local benchmark run: the area that ran it, the
// collective (or write_bw for ib_write_bw), what it forced, and where a
// perftest run's buffers lived ("" for nccl-tests).
var runLabels = []string{"suite", "op", "mode", "mem"}

var gpuLabels = []string{"gpu", "bus_id"}

// promMetrics are the textfile's families, each with its HELP; the node
// label comes first in every one.
type promMetrics struct {
	reg  *prometheus.Registry
	errs []error

	build, lastRun, nodeInfo, peerMemory                  *promVec
	gpuInfo, path, curGen, maxGen, curWidth, maxWidth     *promVec
	bar1Total, bar1Free                                   *promVec
	busbw, baselineRatio, baselineBand, ratioToDirect     *promVec
	cpuPerGB                                              *promVec
	fallback, transport, grownErrors, errorDelta, traffic *promVec
	scalingBusBW, scalingRatio, specFailures, specs       *promVec
	scalingFallback, scalingTransport, suiteStatus        *promVec
	nodeAction, specAction                                *promVec
}

// promVec is one gauge family; failures are kept for WritePrometheus.
type promVec struct {
	m    *promMetrics
	name string
	v    *prometheus.GaugeVec
}

func (m *promMetrics) vec(name, help string, labels ...string) *promVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append([]string{"node"}, labels...))
	if err := m.reg.Register(v); err != nil {
		m.errs = append(m.errs, fmt.Errorf("metric %s: %w", name, err))
	}
	return &promVec{m: m, name: name, v: v}
}

// set sets the series of these label values (node first). A series set
// twice keeps the last value: results.json never holds two, and a view
// must not fail a run for it.
func (p *promVec) set(value float64, labels ...string) {
	// Values come from nodes: invalid UTF-8 would fail the whole file
	// (and with it the run's set), a newline split an alert's text.
	clean := make([]string, len(labels))
	for i, l := range labels {
		clean[i] = labelValue(l)
	}
	g, err := p.v.GetMetricWithLabelValues(clean...)
	if err != nil {
		p.m.errs = append(p.m.errs, fmt.Errorf("metric %s %q: %w", p.name, labels, err))
		return
	}
	g.Set(value)
}

func newPromMetrics() *promMetrics {
	m := &promMetrics{reg: prometheus.NewRegistry()}
	run := func(more ...string) []string { return append(append([]string{}, runLabels...), more...) }
	gpu := func(more ...string) []string { return append(append([]string{}, gpuLabels...), more...) }
	m.build = m.vec("gdrcheck_build_info", "The gdrcheck version that wrote the results (value 1).", "version")
	m.lastRun = m.vec("gdrcheck_last_run_timestamp_seconds", "When the node's run ended, in seconds since the epoch (the job's end for a node that never reported).")
	m.nodeInfo = m.vec("gdrcheck_node_info", "The node's status (evaluated, unevaluable, missing, interrupted), matched baseline profile and software facts (value 1).",
		"status", "profile", "gpu_model", "driver", "cuda_driver", "driver_flavour", "kernel", "iommu", "mofed", "rdma_core", "nccl")
	m.peerMemory = m.vec("gdrcheck_peer_memory_info", "The GPUDirect peer-memory mechanism that works (dmabuf, peermem, none; unknown where it was not probed) and the nvidia_peermem module's state (registered, loaded, absent) (value 1).",
		"mechanism", "peermem")
	m.gpuInfo = m.vec("gdrcheck_gpu_info", "A GPU of the node: NVML index (-1 where NVML did not see it), PCI bus id, model and NUMA node (value 1).", gpu("name", "numa_node")...)
	m.path = m.vec("gdrcheck_gpu_nic_path_info", "The PCIe path class between a GPU and its preferred RDMA NIC, as nvidia-smi topo -m names it: PIX, PXB, P2C, PHB, NODE, SYS (value 1).", gpu("nic", "path")...)
	m.curGen = m.vec("gdrcheck_gpu_pcie_current_link_generation", "The PCIe generation the GPU's link runs at now.", gpuLabels...)
	m.maxGen = m.vec("gdrcheck_gpu_pcie_max_link_generation", "The highest PCIe generation the GPU's link supports.", gpuLabels...)
	m.curWidth = m.vec("gdrcheck_gpu_pcie_current_link_width", "The PCIe lanes the GPU's link runs with now.", gpuLabels...)
	m.maxWidth = m.vec("gdrcheck_gpu_pcie_max_link_width", "The most PCIe lanes the GPU's link supports.", gpuLabels...)
	m.bar1Total = m.vec("gdrcheck_gpu_bar1_total_bytes", "The GPU's BAR1 aperture (NVML), in bytes.", gpuLabels...)
	m.bar1Free = m.vec("gdrcheck_gpu_bar1_free_bytes", "The GPU's BAR1 aperture not mapped when the evidence was collected, in bytes.", gpuLabels...)
	m.busbw = m.vec("gdrcheck_busbw_bytes_per_second", "Bus bandwidth of a benchmark run at its largest message size (nccl-tests busbw; ib_write_bw's average for the fabric suite's loopback runs), in bytes per second.", runLabels...)
	m.baselineRatio = m.vec("gdrcheck_busbw_baseline_ratio", "A run's bus bandwidth over the expected value of the baseline it was compared with.", runLabels...)
	m.baselineBand = m.vec("gdrcheck_busbw_baseline_bytes_per_second", "The baseline band a run was compared with (bound expected, low, high; a one-sided baseline has only the bound on its side: low for higher-is-better), in bytes per second.", run("bound")...)
	m.cpuPerGB = m.vec("gdrcheck_cpu_seconds_per_gigabyte", "CPU seconds of the benchmark's process tree per GB of bus traffic (busbw x run time): its rise at the same bandwidth is the sign of a path staged through host memory.", runLabels...)
	m.ratioToDirect = m.vec("gdrcheck_busbw_ratio_to_direct", "A forced fallback's bus bandwidth over the direct run's at the same message size.", runLabels...)
	m.fallback = m.vec("gdrcheck_fallback_detected", "1 where NCCL's channel lines show a connection staged through the host or off RDMA, 0 where every connection took the direct path; forced modes (every mode but direct) are expected to show 1.", "suite", "op", "mode")
	m.transport = m.vec("gdrcheck_nccl_transport_info", "The dominant transport class NCCL reported for a run (P2P/CUMEM, SHM, NET/IB/GDRDMA, NET/Socket...) and its path verdict (value 1).", "suite", "op", "mode", "transport", "path_verdict")
	m.grownErrors = m.vec("gdrcheck_fabric_grown_error_counters", "How many RDMA port error and retransmission counters grew during a run (0: sampled, none grew).", runLabels...)
	m.errorDelta = m.vec("gdrcheck_fabric_port_error_delta", "How much an RDMA port error or retransmission counter grew during a run.", run("nic", "port", "counter")...)
	m.traffic = m.vec("gdrcheck_fabric_traffic_bytes", "Bytes the node's RDMA NICs (those with data counters) sent and received during a run.", runLabels...)
	m.scalingBusBW = m.vec("gdrcheck_scaling_busbw_bytes_per_second", "Bus bandwidth of the scaling suite's all_reduce across nodes at its largest message size, in bytes per second.", "op", "nodes")
	m.scalingRatio = m.vec("gdrcheck_scaling_busbw_baseline_ratio", "A multi-node run's bus bandwidth over the expected value of its baseline.", "op", "nodes")
	m.scalingFallback = m.vec("gdrcheck_scaling_fallback_detected", "1 where a scaling run across nodes had a connection staged through the host or off RDMA (NET/IB without GDRDMA, NET/Socket), 0 where every connection took the direct path the nodes' evidence expects.", "op", "nodes")
	m.scalingTransport = m.vec("gdrcheck_scaling_transport_info", "The dominant transport class NCCL reported for a scaling run across nodes (NET/IB/GDRDMA, NET/IB, NET/Socket...) and its path verdict (value 1).", "op", "nodes", "transport", "path_verdict")
	m.specFailures = m.vec("gdrcheck_spec_failures", "Specs of a suite that failed on the node.", "suite")
	m.specs = m.vec("gdrcheck_specs", "Specs of a suite by state (passed, failed, skipped).", "suite", "state")
	m.suiteStatus = m.vec("gdrcheck_suite_status", "A suite's status on the node: pass, fail, or skip where every spec skipped and nothing was proven (value 1); could_run is false where a skip said the suite could not run here (a tool missing...): the run exited 2.", "suite", "status", "could_run")
	m.nodeAction = m.vec("gdrcheck_node_action_info", "What remediation does about the node: the most disruptive action of its failing specs (results/action.go: NONE, RERUN, FIX_CONFIG, RELOAD_DRIVER, RESET_GPU, REBOOT, REIMAGE, INVESTIGATE, CHECK_CABLE, REPLACE) (value 1).", "action")
	m.specAction = m.vec("gdrcheck_spec_action_info", "The action, scope (gpu, nic, port, link, node, fabric, allocation) and entity (a bus id, a NIC, a port, a node) of a spec that failed or could not run (value 1).", "suite", "spec", "action", "scope", "entity")
	return m
}

// bytesPerSecond converts a run's bandwidth unit: nccl-tests' GB/s (1e9
// bytes), perftest's Gb/s.
func bytesPerSecond(unit string) (float64, error) {
	switch unit {
	case "", "GB/s":
		return 1e9, nil
	case "Gb/s":
		return 1e9 / 8, nil
	}
	return 0, fmt.Errorf("bandwidth unit %q has no bytes-per-second conversion", unit)
}

func timestamp(ts ...time.Time) (float64, bool) {
	for _, t := range ts {
		if !t.IsZero() {
			return float64(t.UnixMilli()) / 1e3, true
		}
	}
	return 0, false
}

func (m *promMetrics) node(r *results.Results, n results.Node) {
	name := n.Name
	m.build.set(1, name, r.Tool.Version)
	if t, ok := timestamp(n.Finished, r.Finished); ok {
		m.lastRun.set(t, name)
	}
	if n.Action != "" {
		m.nodeAction.set(1, name, string(n.Action))
	}
	m.nodeInfo.set(1, name, n.Status, n.Profile, n.Fact("gpu_model"), n.Fact("driver"), n.Fact("cuda_driver"), n.Fact("driver_flavour"),
		n.Fact("kernel"), n.Fact("iommu"), n.Fact("mofed"), n.Fact("rdma_core"), n.Fact("nccl"))
	if mech, pm := n.Fact("mechanism"), n.Fact("peermem"); mech != "" || pm != "" {
		m.peerMemory.set(1, name, orUnknown(mech), orUnknown(pm))
	}
	for _, g := range n.GPUs {
		gpu := []string{name, strconv.Itoa(g.Index), g.BusID}
		m.gpuInfo.set(1, append(gpu, g.Name, strconv.Itoa(g.NUMA))...)
		if g.NIC != "" {
			m.path.set(1, append(gpu, g.NIC, g.Path)...)
		}
		// 0 is "not known" (no NVML for the generation), not a link.
		for _, l := range []struct {
			v   *promVec
			val int
		}{{m.curGen, g.PCIeGen}, {m.maxGen, g.PCIeMaxGen}, {m.curWidth, g.PCIeWidth}, {m.maxWidth, g.PCIeMaxWidth}} {
			if l.val > 0 {
				l.v.set(float64(l.val), gpu...)
			}
		}
		if g.BAR1TotalMiB != nil {
			m.bar1Total.set(float64(*g.BAR1TotalMiB<<20), gpu...)
		}
		if g.BAR1FreeMiB != nil {
			m.bar1Free.set(float64(*g.BAR1FreeMiB<<20), gpu...)
		}
	}
	for _, run := range n.Runs {
		m.run(name, run)
	}
	for _, s := range n.Suites {
		c := s.Counts()
		m.specFailures.set(float64(c.Failed), name, s.Name)
		for state, k := range map[string]int{results.StatePassed: c.Passed, results.StateFailed: c.Failed, results.StateSkipped: c.Skipped} {
			m.specs.set(float64(k), name, s.Name, state)
		}
		m.suiteStatus.set(1, name, s.Name, strings.ToLower(s.Status()), strconv.FormatBool(!s.CannotRun()))
		for _, sp := range s.Specs {
			if sp.Action != "" {
				m.specAction.set(1, name, s.Name, sp.Name, string(sp.Action), string(sp.Scope), sp.Entity)
			}
		}
	}
}

func (m *promMetrics) run(node string, run results.Run) {
	bps, err := bytesPerSecond(run.Unit)
	if err != nil {
		m.errs = append(m.errs, fmt.Errorf("node %s, %s run of %s (%s): %w", node, run.Suite, run.Op, run.Mode, err))
		return
	}
	labels := []string{node, run.Suite, run.Op, run.Mode, run.Mem}
	with := func(more ...string) []string { return append(append([]string{}, labels...), more...) }
	measured := (len(run.Points) > 0 || run.BusBW > 0) && !run.OneRank()
	if measured {
		m.busbw.set(run.BusBW*bps, labels...)
	}
	if b := run.Baseline; b != nil && b.Expected > 0 {
		if measured {
			m.baselineRatio.set(run.BusBW/b.Expected, labels...)
		}
		m.baselineBand.set(b.Expected*bps, with("expected")...)
		// A one-sided baseline is a bound, not a band of zero width:
		// only its limit is exported, as the side it bounds.
		switch {
		case b.OneSided() && b.Direction == results.Lower:
			m.baselineBand.set(b.Expected*bps, with("high")...)
		case b.OneSided():
			m.baselineBand.set(b.Expected*bps, with("low")...)
		default:
			m.baselineBand.set(b.Low*bps, with("low")...)
			m.baselineBand.set(b.High*bps, with("high")...)
		}
	}
	if run.RatioToDirect != nil {
		m.ratioToDirect.set(*run.RatioToDirect, labels...)
	}
	if c, ok := run.CPUPerGB(); ok {
		m.cpuPerGB.set(c, labels...)
	}
	switch run.PathVerdict {
	case results.PathDirect:
		m.fallback.set(0, node, run.Suite, run.Op, run.Mode)
	case results.PathFallback:
		m.fallback.set(1, node, run.Suite, run.Op, run.Mode)
	}
	if run.Transport != "" {
		m.transport.set(1, node, run.Suite, run.Op, run.Mode, run.Transport, orUnknown(run.PathVerdict))
	}
	if f := run.Fabric; f != nil {
		// Errors, the sentences, are what every results.json holds;
		// ErrorCounters only those written since they were added.
		m.grownErrors.set(float64(len(f.Errors)), labels...)
		for _, c := range f.ErrorCounters {
			m.errorDelta.set(float64(c.Delta), with(c.NIC, strconv.FormatUint(uint64(c.Port), 10), c.Name)...)
		}
		m.traffic.set(float64(f.TotalBytes), labels...)
	}
}

// scaling renders the runs across nodes, the allocation's: the bandwidth
// of those that measured some, and the path of those across two nodes or
// more, the only direct runs whose traffic goes through the NICs (a
// node's own direct runs stay on NVLink or PCIe). The scaling suite's
// runs are 1, 2, 4 ... N nodes, so log2(N)+1 of them; the pairwise runs,
// one per node, are left out.
func (m *promMetrics) scaling(runs []results.Run) {
	for _, run := range runs {
		if run.Suite != scaleSuite {
			continue
		}
		labels := []string{results.AllocationNode, run.Op, strconv.Itoa(len(run.Nodes))}
		if len(run.Nodes) >= 2 {
			switch run.PathVerdict {
			case results.PathDirect:
				m.scalingFallback.set(0, labels...)
			case results.PathFallback:
				m.scalingFallback.set(1, labels...)
			}
			if run.Transport != "" {
				m.scalingTransport.set(1, append(labels, run.Transport, orUnknown(run.PathVerdict))...)
			}
		}
		if !scalingMeasured(run) {
			continue
		}
		bps, err := bytesPerSecond(run.Unit)
		if err != nil {
			m.errs = append(m.errs, fmt.Errorf("%s run of %s on %d nodes: %w", run.Suite, run.Op, len(run.Nodes), err))
			continue
		}
		m.scalingBusBW.set(run.BusBW*bps, labels...)
		if b := run.Baseline; b != nil && b.Expected > 0 {
			m.scalingRatio.set(run.BusBW/b.Expected, labels...)
		}
	}
}

// scaleSuite is the Suite of the scaling suite's runs across 1, 2, 4 ...
// N nodes in results.json (harness/nccl's KindScale).
const scaleSuite = "scale"

// scalingMeasured says a run is one of the scaling suite's across nodes
// and measured something.
func scalingMeasured(run results.Run) bool {
	return run.Suite == scaleSuite && (len(run.Points) > 0 || run.BusBW != 0)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// WritePrometheus writes r in the Prometheus text format, one family after
// another, sorted by name and labels as the registry gathers them.
func WritePrometheus(w io.Writer, r *results.Results) error {
	m := newPromMetrics()
	for _, n := range r.Nodes {
		m.node(r, n)
	}
	m.scaling(r.Runs)
	return m.write(w)
}

// write gathers the registry and writes it in the text format, or the
// failures the series collected instead.
func (m *promMetrics) write(w io.Writer) error {
	if err := errors.Join(m.errs...); err != nil {
		return err
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return err
		}
	}
	return nil
}

// StagePrometheus stages r's textfile for path into set. The set's
// temporary file (".<name>.<random>", beside path) does not end in .prom,
// so the collector never reads half a file; the rename is atomic.
func StagePrometheus(set *results.FileSet, path string, r *results.Results) error {
	return set.AddFunc(path, func(w io.Writer) error { return WritePrometheus(w, r) })
}
