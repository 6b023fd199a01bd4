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
//
// Files are grouped by the source they read, as prometheus/procfs does:
//   - root_*: the Host over a root (root_host.go), how a command's
//     --host-root is resolved to one (root_policy.go: ownership, the
//     --trust-root copy, archives unpacked to scratch directories that
//     root_scratch.go locks and sweeps), the containment check of a
//     recorded root, copying one (root_copy.go), the size limits of its
//     recordings, and the snapshot that writes one (root_snapshot.go);
//   - pci_*: sysfs PCI devices, their config space (ACS, device control and
//     ATS, AER) and the PCIe paths and path classes between them;
//   - nvml_*: NVML live, its recording and replay, and the GPUs' fabric
//     state; nvml_gpu.go is the GPU type NVML and sysfs fill;
//   - rdma_*: RDMA NICs and ports, RoCE GID tables, rdmamap in the host's
//     namespaces, and the port counters;
//   - kernel_*: the kernel and NVIDIA modules, nvidia_peermem, the kernel
//     log, proc/devices, the IOMMU, lockdown and NUMA balancing, the
//     platform (VM or bare metal) and GDRCopy's gdrdrv;
//   - cpu_*: CPU times and topology; nccl_*: the NCCL library and topology
//     file a job would load; overrides.go: the settings it would inherit;
//     container.go: what this process can reach; gpudirect_*: the CUDA and
//     verbs probe and the mechanism it proves; evidence*.go and
//     inventory*.go: Collect, the causes and limits it names, and the rail
//     map.
package node
