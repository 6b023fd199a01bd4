// Package baseline is gdrcheck's store of per-generation baselines: what a
// hardware/software profile is expected to measure, and how far a
// measurement may fall short before it fails.
//
// One YAML file holds one profile and its metrics:
//
//	# how these numbers were obtained
//	profile:
//	  name: h200x2-nv18
//	  gpu: {model: "NVIDIA H200", pci_device_id: "0x2335"}
//	  gpus_per_node: 2
//	  interconnect: NV18
//	  nic: {model: none}
//	  pcie_gen: 5
//	  software: {driver: ">=570", nccl: ">=2.26, <2.30", cuda: ">=12.4"}
//	metrics:
//	  - name: nccl.all_reduce.busbw
//	    unit: GB/s
//	    direction: higher
//	    expected: 341.6
//	    tolerance: {relative: 0.10, absolute: 5}
//	    by_size: {268435456: 300.7, 2147483648: 341.6}
//	  - name: nccl.fallback.p2p-disabled.ratio
//	    direction: lower
//	    expected: 0.5
//	bar1: {min_total_mib: 262144, min_free_mib: 1024}
//
// Load and LoadFS read every *.yaml of a directory strictly: an unknown
// field, a missing required one, a bad direction, a negative tolerance, an
// unparseable version range, a metric given twice or a profile name used by
// two files is a *SchemaError naming file, line and field, for example
//
//	fixtures/baselines/x.yaml:12: metrics[1].direction: "higest" is not higher or lower
//
// Every schema error wraps ErrSchema, so a CLI can map them to exit 2.
//
// # Matching
//
// (*Store).Match takes the Facts of a node. A profile matches when every
// field it specifies matches: GPU model as a case-insensitive prefix (the
// NVML name "NVIDIA H200 141GB HBM3e" matches "NVIDIA H200"), PCI device id,
// GPUs per node, interconnect (NV<n> or PCIe) and PCIe generation exactly,
// NIC model as a case-insensitive prefix ("none" matches only a node known
// to have no RDMA NIC), NIC rate and link layer exactly (the link layer
// most rail ports run; LinkMixed, as many on each, matches none), and the
// software versions against their ranges. A hardware fact the node leaves unknown matches
// nothing; a software version it leaves unknown is not checked, because the
// NCCL version is known only once a collective ran, and a quick gate still
// needs its BAR1 limits. The match with the most fields specified wins;
// equally specific matches are an error (ErrAmbiguous), and no match is a
// *NoMatchError wrapping ErrNoMatch that renders the node as the profile it
// looked for.
//
// # Metric names
//
// A baseline states only metrics some spec compares: the registry
// (LookupMetric, metrics.go) holds each with its unit, direction and the
// range an expected value can plausibly take. Any other name is refused,
// naming the nearest known one ("nccl.allreduce.busbw": did you mean
// "nccl.all_reduce.busbw"?).
//
//	nccl.<op>.busbw               nccl-tests bus bandwidth of the direct path over
//	                              all GPUs of one node (op: all_reduce, all_gather,
//	                              reduce_scatter, sendrecv), GB/s, higher is better,
//	                              1 to 3600; expected is the largest message size,
//	                              by_size the per-size figures (the better of
//	                              out-of-place and in-place, as reports.Point.BusBW)
//	nccl.all_reduce.busbw.nodes<N> the same across N nodes (2 to 16384)
//	nccl.all_reduce.scaling_efficiency busbw at N nodes over busbw at 2, 0.1 to 2
//	nccl.fallback.<mode>.ratio    busbw under a forced mode (p2p-disabled,
//	                              p2p-shm-disabled, gdr-loc, ib-disabled,
//	                              remote-hca) over the direct busbw; lower is
//	                              better, at most 1, and the expected value is the
//	                              limit below which the fallback counts as detected
//	rdma.write_bw.gdr             ib_write_bw from and to GPU memory, Gb/s per NIC,
//	                              1 to 1600
//	rdma.write_bw.gpu_host_ratio  GPU memory's share of host memory's ib_write_bw,
//	                              higher is better, 0.1 to 2
//
// # Claims
//
// A baseline is a claim about hardware, so one that could never fail is
// refused at load like a malformed one: a profile that names no GPU
// (gpu.model or gpu.pci_device_id; it would match every node), a
// direction or unit other than its metric's, an expected or by_size value
// outside its metric's plausible range, a relative tolerance above
// MaxRelative (0.5) and an absolute one that lets more than half of any
// expected value go (or, lower is better, puts the band's high edge past
// the metric's range). YAML anchors and aliases are refused too: each
// alias is decoded again wherever it is used.
//
// # Comparing
//
// A metric's tolerance allows a shortfall of max(relative*expected,
// absolute) on the bad side of expected; a metric without tolerance is a
// hard limit (higher: value >= expected; lower: value <= expected).
// by_size entries take precedence over expected for their message size.
//
// # Recording
//
// Record proposes a baseline from a good run: the median of each metric's
// samples, per message size where the sample key carries one
// ("nccl.all_reduce.busbw@2147483648", see SampleKey), with default
// tolerances (KindOf). Write renders it as reviewable YAML, and Diff lists
// what changed between two baselines in sentences.
package baseline
