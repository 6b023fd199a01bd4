package nccl

import (
	"strings"
	"testing"
)

const noModuleAdvice = `NCCL found no peer-memory module, so it stages network traffic through host memory instead of GPU Direct RDMA: ` +
	`load nvidia_peermem (nv_peer_mem with older MLNX_OFED), or move to DMA-BUF, which needs NCCL 2.13+ ` +
	`(NCCL prints "(no module)" only before 2.13, which has no DMA-BUF path) and the open GPU kernel modules R515+, kernel 5.12+ and rdma-core 34+`

// noRDMADevice is the hint of a log, recorded on a VM without an RDMA
// device, whose connections went over NET/Socket; line is that of its
// first "NET/IB : No device found." line.
func noRDMADevice(line int) []Hint {
	return []Hint{{
		Kind: HintNoRDMADevice, Text: "NET/IB : No device found.", Line: line, Count: 1,
		Advice: "NCCL found no RDMA device and used TCP sockets: check that the RDMA driver (mlx5_ib, efa) is loaded, that /dev/infiniband is visible in the container, " +
			"and that the net plugin (if any) loaded; `ibv_devices` should list the NICs",
	}}
}

// NCCL 2.13 and later print the HCA line of graph/topo.cc,
// "NET/%s : GPU Direct RDMA %s for HCA %d '%s'", without "(no module)";
// before 2.23 ncclIbGdrSupport looks only under /sys/kernel/mm/memory_peers.
// The lines below are written from those format strings.
func TestParseLogHintsAtAnRDMANICWithoutGDR(t *testing.T) {
	const hca = "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n" +
		"h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n" + // another rank: one NIC still
		"h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'\n" +
		"h:1:2 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'\n" + // sockets never do GDR
		"h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 2 'mlx5_2'\n"
	const memoryPeers = "; NCCL before 2.23 looks for the module only under /sys/kernel/mm/memory_peers/, not /sys/module/nvidia_peermem"
	for _, tt := range []struct {
		version string
		old     bool
	}{{"2.21.5", true}, {"2.23.4", false}, {"", false}} {
		in := hca
		if tt.version != "" {
			in = "h:1:1 [0] NCCL INFO NCCL version " + tt.version + "+cuda12.4\n" + hca
		}
		s, err := ParseLog(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Hints) != 1 {
			t.Fatalf("NCCL %q: hints %+v, want one", tt.version, s.Hints)
		}
		h := s.Hints[0]
		line := 1
		if tt.version != "" {
			line = 2
		}
		if h.Kind != HintGDRDisabled || h.Text != "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'" || h.Line != line || h.Count != 2 {
			t.Errorf("NCCL %q: hint %+v", tt.version, h)
		}
		if !strings.Contains(h.Advice, "neither a peer-memory module nor DMA-BUF") || !strings.Contains(h.Advice, "kernel 5.12+ and rdma-core 34+") ||
			strings.HasSuffix(h.Advice, memoryPeers) != tt.old {
			t.Errorf("NCCL %q: advice %q", tt.version, h.Advice)
		}
	}
}
