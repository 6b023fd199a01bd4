// Package node collects what a GPU node is made of, as far as GPUDirect RDMA
// cares: GPUs (NVML, and sysfs when NVML fails), RDMA NICs and their ports
// (sysfs through prometheus/procfs, rdmamap), the PCIe path between every GPU
// and NIC classified the way `nvidia-smi topo -m` does, ACS on those paths,
// the IOMMU mode, and the kernel and driver facts.
//
// Every reader goes through a Host opened on a root directory, so a recorded
// or synthetic node (fixtures/nodes, `gdrcheck snapshot`) is read by the same
// code as the live one. Evidence is collected once per run by Collect and
// handed to the suites, which only compare.
package node
