package results

import "fmt"

// The names of the metrics that baselines state and specs compare, defined
// once: a baseline file, a spec and a report that spell one differently
// would silently stop comparing.

// BusBWMetric is the direct-path bus bandwidth of a collective on one node
// ("nccl.all_reduce.busbw").
func BusBWMetric(op string) string { return "nccl." + op + ".busbw" }

// FallbackRatioMetric is a forced fallback's bus bandwidth over the direct
// run's ("nccl.fallback.p2p-disabled.ratio").
func FallbackRatioMetric(mode string) string { return "nccl.fallback." + mode + ".ratio" }

// MultiNodeBusBWMetric is all_reduce's bus bandwidth across nodes
// ("nccl.all_reduce.busbw.nodes4").
func MultiNodeBusBWMetric(nodes int) string {
	return fmt.Sprintf("nccl.all_reduce.busbw.nodes%d", nodes)
}

// More metrics with fixed names.
const (
	// ScalingEfficiencyMetric is busbw at N nodes over busbw at 2.
	ScalingEfficiencyMetric = "nccl.all_reduce.scaling_efficiency"
	// RDMAGDRMetric is ib_write_bw from GPU memory through a rail NIC.
	RDMAGDRMetric = "rdma.write_bw.gdr"
	// RDMAGPUHostRatioMetric is GPU memory's RDMA bandwidth over host
	// memory's through the same NIC.
	RDMAGPUHostRatioMetric = "rdma.write_bw.gpu_host_ratio"
)
