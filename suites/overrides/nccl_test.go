package overrides

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// NCCL's integers are strtoll base 0 and what follows the digits is
// dropped: these fail, with the value NCCL reads; a word is 0 and a note.
func TestNCCLIntegersAreReadAsStrtollDoes(t *testing.T) {
	runCases(t, []overrideCase{
		{name: "trailing comment", conf: "NCCL_IB_DISABLE=1 # comment\n", judge: "NCCL_IB_DISABLE", want: Breaks,
			why: []string{`NCCL reads "1 # comment" as 1`, "NCCL uses sockets"}},
		{name: "hex", env: []string{"NCCL_IB_DISABLE=0x1"}, judge: "NCCL_IB_DISABLE", want: Breaks, why: []string{`"0x1" as 1`}},
		{name: "octal", conf: "NCCL_IB_DISABLE=01\n", judge: "NCCL_IB_DISABLE", want: Breaks, why: []string{`"01" as 1`}},
		{name: "plain", conf: "NCCL_IB_DISABLE=1\n", judge: "NCCL_IB_DISABLE", want: Breaks, why: []string{"on a node with 8 RDMA NIC(s)"}},
		{name: "control: 0", conf: "NCCL_IB_DISABLE=0\n", judge: "NCCL_IB_DISABLE", want: Fits},
		{name: "control: 0x0", conf: "NCCL_IB_DISABLE=0x0 # on\n", judge: "NCCL_IB_DISABLE", want: Fits},
		{name: "yes is 0", env: []string{"NCCL_IB_DISABLE=yes"}, judge: "NCCL_IB_DISABLE", want: Ignored, why: []string{`reads "yes" as 0`}},
		{name: "out of range", env: []string{"NCCL_IB_DISABLE=99999999999999999999"}, judge: "NCCL_IB_DISABLE", want: Ignored, why: []string{"keeps its default"}},
		{name: "gdr read 0", env: []string{"NCCL_NET_GDR_READ=0"}, judge: "NCCL_NET_GDR_READ", want: Breaks},
		{name: "control: gdr read 1", env: []string{"NCCL_NET_GDR_READ=1"}, judge: "NCCL_NET_GDR_READ", want: Fits},
		{name: "p2p disable 0x1", env: []string{"NCCL_P2P_DISABLE=0x1"}, judge: "NCCL_P2P_DISABLE", want: Breaks},
		{name: "p2p disable 2 is not 1", env: []string{"NCCL_P2P_DISABLE=2"}, judge: "NCCL_P2P_DISABLE", want: Ignored, why: []string{"only for exactly 1"}},
	})
}

// A name is everything before '=', spaces included: "NCCL_X =v" sets
// another variable, which nothing reads, and the real one is unset.
func TestANCCLConfNameWithASpaceIsAnotherVariable(t *testing.T) {
	runCases(t, []overrideCase{
		{name: "space before =", conf: "NCCL_IB_DISABLE =1\n", judge: "NCCL_IB_DISABLE ", want: Ignored,
			why: []string{`named "NCCL_IB_DISABLE "`, "write NCCL_IB_DISABLE=1"}},
		{name: "control: the real name", conf: "NCCL_IB_DISABLE =1\nNCCL_IB_DISABLE=1\n", judge: "NCCL_IB_DISABLE", want: Breaks},
		// ~/.nccl.conf meant to override /etc/nccl.conf's LOC, and does
		// not: the site's LOC is what NCCL applies, and it fails.
		{name: "the spaced line shadows nothing", conf: "NCCL_NET_GDR_LEVEL=LOC\n", files: map[string]string{"root/.nccl.conf": "NCCL_NET_GDR_LEVEL =PIX\n"},
			judge: "NCCL_NET_GDR_LEVEL", want: Breaks, why: []string{"GPUDirect RDMA off for 8 GPU(s)"}},
		{name: "and says which applies", conf: "NCCL_NET_GDR_LEVEL=LOC\n", files: map[string]string{"root/.nccl.conf": "NCCL_NET_GDR_LEVEL =PIX\n"},
			judge: "NCCL_NET_GDR_LEVEL ", want: Ignored, why: []string{"NCCL applies NCCL_NET_GDR_LEVEL=LOC (/etc/nccl.conf line 1) instead"}},
	})
}

// Levels are case-sensitive names, or old numbers clamped to SYS.
func TestNCCLLevelsAreReadAsNCCLGetLevelDoes(t *testing.T) {
	runCases(t, []overrideCase{
		{name: "P2P LOC", env: []string{"NCCL_P2P_LEVEL=LOC"}, judge: "NCCL_P2P_LEVEL", want: Breaks, why: []string{"peer-to-peer between this node's 8 GPUs (over NVLink, at least NVL) is off"}},
		{name: "control: P2P NVL", env: []string{"NCCL_P2P_LEVEL=NVL"}, judge: "NCCL_P2P_LEVEL", want: Fits},
		{name: "control: P2P SYS", env: []string{"NCCL_P2P_LEVEL=SYS"}, judge: "NCCL_P2P_LEVEL", want: Fits},
		{name: "GDR LOC", conf: "NCCL_NET_GDR_LEVEL=LOC\n", judge: "NCCL_NET_GDR_LEVEL", want: Breaks, why: []string{"GPUDirect RDMA off for 8 GPU(s)"}},
		{name: "GDR 0 is LOC", conf: "NCCL_NET_GDR_LEVEL=0\n", judge: "NCCL_NET_GDR_LEVEL", want: Breaks, why: []string{`NCCL reads "0" as LOC`}},
		{name: "GDR 2^32 wraps to 0 in an int", conf: "NCCL_NET_GDR_LEVEL=4294967296\n", judge: "NCCL_NET_GDR_LEVEL", want: Breaks, why: []string{`as LOC`}},
		{name: "control: GDR 2 is PXB", conf: "NCCL_NET_GDR_LEVEL=2\n", judge: "NCCL_NET_GDR_LEVEL", want: Fits},
		{name: "GDR 9 clamped", env: []string{"NCCL_NET_GDR_LEVEL=9"}, judge: "NCCL_NET_GDR_LEVEL", want: Clamped, why: []string{"to 5, which is SYS"}},
		{name: "GDR PXN is a path, not above PIX", env: []string{"NCCL_NET_GDR_LEVEL=PXN"}, judge: "NCCL_NET_GDR_LEVEL", want: Fits},
		{name: "GDR loc lowercase", env: []string{"NCCL_NET_GDR_LEVEL=loc"}, judge: "NCCL_NET_GDR_LEVEL", want: Ignored, why: []string{"case-sensitive"}},
		{name: "control: GDR PIX", env: []string{"NCCL_NET_GDR_LEVEL=PIX"}, judge: "NCCL_NET_GDR_LEVEL", want: Fits},
	})
}

func TestNCCLNetAndDMABufAreJudgedAgainstTheNode(t *testing.T) {
	// The recording has no libcuda or libibverbs answers: give DMA-BUF
	// what it needs, and nvidia_peermem nothing.
	dmabufOnly := func(ev *node.Evidence) {
		ev.Kernel.Peermem, ev.Kernel.NvPeerMem = node.PeermemInfo{}, false
		ev.Verbs = node.VerbsFacts{Available: true, RDMACoreVersion: 50, HasRegDMABufMR: true}
		one := 1
		ev.CUDA = node.CUDAFacts{Available: true, DriverVersion: 13000}
		for i, g := range ev.GPUs {
			ev.CUDA.GPUs = append(ev.CUDA.GPUs, node.CUDAGPU{Ordinal: i, BusID: g.BusID, DMABufSupported: &one, Export: node.DMABufExport{Tried: true, OK: true, Bytes: 1 << 21}})
		}
	}
	withPeermem := func(ev *node.Evidence) {
		dmabufOnly(ev)
		ev.Kernel.Peermem = node.PeermemInfo{Loaded: true, Registered: true, Client: "nv_mem"}
	}
	runCases(t, []overrideCase{
		{name: "Socket", env: []string{"NCCL_NET=Socket"}, judge: "NCCL_NET", want: Breaks, why: []string{"socket transport"}},
		{name: "socket, any case", env: []string{"NCCL_NET=socket"}, judge: "NCCL_NET", want: Breaks},
		{name: "control: IB", env: []string{"NCCL_NET=IB"}, judge: "NCCL_NET", want: Fits},
		{name: "DMA-BUF off, the only mechanism", env: []string{"NCCL_DMABUF_ENABLE=0"}, edit: dmabufOnly, judge: "NCCL_DMABUF_ENABLE", want: Breaks,
			why: []string{"only GPUDirect RDMA mechanism"}},
		{name: "control: DMA-BUF on", env: []string{"NCCL_DMABUF_ENABLE=1"}, edit: dmabufOnly, judge: "NCCL_DMABUF_ENABLE", want: Fits},
		{name: "control: off where nvidia_peermem serves", env: []string{"NCCL_DMABUF_ENABLE=0"}, edit: withPeermem, judge: "NCCL_DMABUF_ENABLE", want: Fits},
	})
}

// NCCL_IB_HCA as parseStringList and matchIfList read it.
func TestNCCLIBHCAIsReadAsNCCLReadsIt(t *testing.T) {
	runCases(t, []overrideCase{
		{name: "space after comma", conf: "NCCL_IB_HCA==mlx5_0, mlx5_1\n", judge: "NCCL_IB_HCA", want: Breaks,
			why: []string{"NCCL uses only mlx5_0", `" mlx5_1"`, "does not trim spaces", "6 GPU(s)"}},
		{name: "absent port", env: []string{"NCCL_IB_HCA=mlx5_0:2"}, judge: "NCCL_IB_HCA", want: Breaks,
			why: []string{"takes no NIC port", "port 2, which mlx5_0 lacks"}},
		{name: "absent NIC", env: []string{"NCCL_IB_HCA=mlx5_bond_0"}, judge: "NCCL_IB_HCA", want: Breaks, why: []string{"names mlx5_bond_0, not on this node"}},
		{name: "exclude all", env: []string{"NCCL_IB_HCA=^mlx5"}, judge: "NCCL_IB_HCA", want: Breaks, why: []string{"excludes every NIC"}},
		{name: "control: prefix of all", env: []string{"NCCL_IB_HCA=mlx5"}, judge: "NCCL_IB_HCA", want: Fits},
		{name: "control: every rail, ports", env: []string{"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1"}, judge: "NCCL_IB_HCA", want: Fits},
		{name: "control: exclude an absent one", env: []string{"NCCL_IB_HCA=^mlx5_bond"}, judge: "NCCL_IB_HCA", want: Fits},
		{name: "exact is not a prefix", env: []string{"NCCL_IB_HCA==mlx5"}, judge: "NCCL_IB_HCA", want: Breaks, why: []string{"takes no NIC port"}},
	})
}
