package suites

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The spec areas, each a label and a suite name, declared here once so a
// typo in --suites or in a Describe is caught. `--suites` takes these.
var labels = map[string]string{
	"topology":    "GPU and NIC wiring for GPUDirect RDMA: PCIe paths, NUMA, links, ACS, IOMMU",
	"kernel":      "the kernel's peer-memory path: DMA-BUF or nvidia_peermem, proven by export and registration",
	"bar1":        "BAR1 aperture per GPU: total covers memory, enough free for peer mappings",
	"collectives": "nccl-tests collectives: the direct path NCCL should take, bus bandwidth against the baseline",
	"negative":    "forced NCCL fallbacks (P2P, SHM, GDR, IB disabled, remote NIC) are detected",
	"fabric":      "RDMA rail ports active at their rate, error counters still during the benchmarks, no NIC traffic on NVLink runs, GPU vs host RDMA bandwidth",
	"mpi":         "CUDA-aware MPI over UCX: Open MPI or MPICH and UCX built for GPU memory (named before any benchmark), then osu_bw -d cuda D D inside and across nodes (or, with no CUDA-aware MPI, a ucx_perftest -m cuda client/server pair inside the node): the path UCX shows, and its forced fallbacks detected",
	"container":   "the direct path from inside the workload's container: device nodes, memlock, CAP_IPC_LOCK, RDMA devices, dma-buf export",
	ScalingArea:   "all_reduce across 1, 2, 4 ... N nodes of an allocation: bus bandwidth and latency against the baseline, efficiency, outlier nodes and the pairwise pass that names a slow one",
}

// ScalingArea judges an allocation, not the node it runs on: the job's
// leader runs it alone (gdrcheck run --suites scaling --nodes ...).
const ScalingArea = "scaling"

// Labels lists the known spec areas in order.
func Labels() []string {
	out := make([]string, 0, len(labels))
	for l := range labels {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// optIn areas run only when named: the container suite judges the
// environment gdrcheck itself runs in, which means something inside the
// workload's container (gdrcheck submit --container-image), not on the
// bare host.
// The mpi suite judges a software stack many GPU nodes do not carry.
var optIn = map[string]bool{"container": true, "mpi": true, ScalingArea: true}

// Defaults are the areas a run without --suites runs.
func Defaults() []string {
	var out []string
	for _, l := range Labels() {
		if !optIn[l] {
			out = append(out, l)
		}
	}
	return out
}

// probing are the areas that need the CUDA/verbs probe, which creates a
// CUDA context on every GPU (seconds): the quick topology gate skips it.
var probing = map[string]bool{"kernel": true, "container": true}

// measuring are the areas that run nccl-tests before the specs compare.
var measuring = map[string]bool{"collectives": true, "negative": true}

// NeedNCCL says whether any of the areas needs the nccl-tests runs.
func NeedNCCL(areas []string) bool {
	for _, a := range areas {
		if measuring[a] {
			return true
		}
	}
	return false
}

// NeedProbe says whether any of the areas needs the CUDA/verbs probe.
func NeedProbe(areas []string) bool {
	for _, a := range areas {
		if probing[a] {
			return true
		}
	}
	return false
}

// LabelHelp describes every area for --help.
func LabelHelp() string {
	var b strings.Builder
	for _, l := range Labels() {
		note := ""
		switch {
		case l == ScalingArea:
			note = " (alone, across --nodes or --emulate-nodes)"
		case optIn[l]:
			note = " (only when named)"
		}
		fmt.Fprintf(&b, "  %-12s %s%s\n", l, labels[l], note)
	}
	return b.String()
}

// CheckLabels rejects unknown areas, naming them and the known ones.
func CheckLabels(names []string) error {
	var bad []string
	for _, n := range names {
		if _, ok := labels[n]; !ok {
			bad = append(bad, fmt.Sprintf("%q", n))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("unknown suite %s (known: %s)", strings.Join(bad, ", "), strings.Join(Labels(), ", "))
	}
	if len(names) > 1 && slices.Contains(names, ScalingArea) {
		return fmt.Errorf("the scaling suite judges an allocation, not this node: run it alone (--suites scaling)")
	}
	return nil
}
