package knownbad

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
)

// Table is the known-bad cells of the compatibility matrix, each a
// published incompatibility with its source. To add one, append a Rule:
// the source's short name as ID, its address, the versions and facts
// that put a node in the cell (Match, over Facts only: add a field there
// and fill it in facts.go if the cell needs one), what breaks and the fix,
// as the source states them; and a test in knownbad_test.go that it matches
// its cell and none of its neighbours.
var Table = []Rule{
	{
		ID:       "NVIDIA/nccl#1676",
		Source:   "https://github.com/NVIDIA/nccl/issues/1676",
		Severity: Fail,
		// net_ib.cc v2.22.3-1 ncclIbGdrSupport looks only for
		// memory_peers/nv_mem and nv_mem_nc; v2.23.4-1 also for
		// /sys/module/nvidia_peermem/version.
		NCCL: baseline.MustParseRange("<=2.22.3"),
		Match: func(f Facts) (bool, string) {
			only, why := f.peermemOnlyPath()
			if f.RDMANICs == 0 || f.Peermem != PeermemLoaded || !only {
				return false, ""
			}
			return true, "nvidia_peermem is loaded without the memory_peers/nv_mem or nv_mem_nc client NCCL looks for, and " + why
		},
		Breaks: "NCCL disables GPU Direct RDMA for every HCA and stages NIC traffic through host memory (2-node all_reduce ~180 -> ~10 GB/s)",
		Fix:    "NCCL >= 2.23.4 (it also finds /sys/module/nvidia_peermem), or the dma-buf path (open kernel modules, kernel >= 5.12, rdma-core >= 34)",
	},
	{
		ID:       "NVIDIA/nccl#778",
		Source:   "https://github.com/NVIDIA/nccl/issues/778",
		Severity: Warn,
		// dma-buf support came with 2.13; the maintainers fixed the
		// back-off to nvidia_peermem "in later versions ... up to 2.16".
		NCCL: baseline.MustParseRange(">=2.13, <2.16"),
		Match: func(f Facts) (bool, string) {
			if f.RDMANICs == 0 || f.GPUDMABuf != Yes || f.NICDMABuf != No {
				return false, ""
			}
			return true, "the GPUs export dma-bufs but the NICs cannot register them (" + f.NICDMABufWhy + ")"
		},
		Breaks: "NCCL tries dma-buf, gets \"ibv_reg_dmabuf_mr failed with error Operation not supported\" and may not back off to nvidia_peermem (fixed by 2.16)",
		Fix:    "NCCL_DMABUF_ENABLE=0, or NCCL >= 2.16, or an RDMA stack with dma-buf (rdma-core >= 34, kernel >= 5.12)",
	},
	{
		ID:       "NVIDIA/nccl#1524",
		Source:   "https://github.com/NVIDIA/nccl/issues/1524",
		Severity: Warn,
		// 2.20.3 dropped "remQpInfo.mtu = min(remQpInfo.mtu,
		// portAttr.active_mtu)"; it hangs only against a peer with
		// another MTU, which one node cannot see: a warning.
		NCCL: baseline.MustParseRange(">=2.20.3"),
		Match: func(f Facts) (bool, string) {
			switch {
			case f.RoCEMTUMin == 0:
				return false, ""
			case f.RoCEMTUMin != f.RoCEMTUMax:
				return true, fmt.Sprintf("the RoCE ports run different active MTUs (%d to %d)", f.RoCEMTUMin, f.RoCEMTUMax)
			case f.RoCEMTUMin < 4096:
				return true, fmt.Sprintf("the RoCE ports run an active MTU of %d, below the 4096 of a 9000-byte netdev", f.RoCEMTUMin)
			}
			return false, ""
		},
		Breaks: "NCCL no longer lowers a connection's MTU to the smaller end's: against a node with another RoCE MTU it gets \"local access violation work queue error\" (IBV_WC_LOC_LEN_ERR) and the job hangs",
		Fix:    "the same MTU on every node's RoCE netdevs (9000 gives active_mtu 4096), set before NCCL starts",
	},
	{
		ID:       "aws/aws-ofi-nccl#314",
		Source:   "https://github.com/aws/aws-ofi-nccl/pull/314",
		Severity: Warn,
		// Hopper needs no flush after a GPUDirect receive, but NCCL before
		// 2.19.1 defaults NCCL_NET_FORCE_FLUSH to 1: slower, not broken.
		NCCL: baseline.MustParseRange("<2.19.1"),
		Match: func(f Facts) (bool, string) {
			if f.RDMANICs == 0 || f.Hopper != Yes || f.ForceFlush == "0" {
				return false, ""
			}
			return true, "the GPUs are Hopper and NCCL_NET_FORCE_FLUSH is not 0"
		},
		Breaks: "NCCL flushes every GPUDirect RDMA receive with an extra RDMA read the Hopper GPUs do not need, costing network bandwidth",
		Fix:    "NCCL >= 2.19.1, or NCCL_NET_FORCE_FLUSH=0 in the job's environment or /etc/nccl.conf",
	},
	{
		ID:       "NVIDIA/nccl#1579",
		Source:   "https://github.com/NVIDIA/nccl/issues/1579",
		Severity: Fail,
		// A NIC behind the CPU is PHB to a GPU joined to that CPU by
		// C2C, beyond NCCL's default GDR level (PXB). graph/paths.cc:
		// v2.26.2-1 adds NCCL_NET_GDR_C2C defaulting to 0, v2.27.3-1
		// defaults it to 1; the maintainers confirm GDRDMA off on
		// GH200/GB200 and NCCL_NET_GDR_LEVEL=SYS as the workaround.
		NCCL: baseline.MustParseRange("<2.27.3"),
		Match: func(f Facts) (bool, string) {
			switch {
			case f.RDMANICs == 0 || f.C2CRails == 0 || gdrLevelReachesPHB(f.GDRLevel):
				return false, ""
			case f.GDRC2C == "1" && !f.ncclBefore(2, 26):
				return false, ""
			}
			return true, fmt.Sprintf("%d GPU(s) reach their rail NIC through the CPU over NVLink-C2C (P2C), and neither NCCL_NET_GDR_C2C=1 (2.26) nor NCCL_NET_GDR_LEVEL=PHB or SYS is set", f.C2CRails)
		},
		Breaks: "NCCL disables GPU Direct RDMA between those GPUs and their NICs and stages network traffic through host memory (2 x GH200, NCCL 2.24.3: all_reduce 79.7 GB/s without GDRDMA, 96.1 with it)",
		Fix:    "NCCL >= 2.27.3 (GDRDMA over C2C by default), or NCCL_NET_GDR_C2C=1 with NCCL 2.26, or NCCL_NET_GDR_LEVEL=PHB before it",
	},
}
