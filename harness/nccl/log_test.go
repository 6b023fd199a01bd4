package nccl

import (
	"errors"
	"testing"
)

const (
	noChannels     = "no channel connection lines in the log; NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM prints them"
	noInitComplete = "no communicator reached Init COMPLETE: the log stops during NCCL init or is an excerpt"
)

// logWant lists what a log must yield; nil slices and maps are compared as
// empty.
type logWant struct {
	err                error
	nccl, cuda         string
	network            string
	netDevices         []NetDevice
	netDeviceCount     int // checked instead of netDevices when set
	gdrHCAs            []GDRHCA
	gdrGPUs            []GDRGPU
	dmabuf             []int
	env                map[string]string
	ranks, nodes, locl int
	comms              int
	transports         map[string]int
	findings           []Finding
	hints              []Hint
	uses               []TransportUse // checked when set
	verdict            string
	reasons            []string
	partial            string // PartialReason; empty for a whole log
}

var (
	recordedSocket = []NetDevice{{Net: "Socket", Index: 0, Name: "eth0", Addr: "192.0.2.2"}}
	recordedHCAs   = []GDRHCA{{Net: "Socket", Index: 0, Name: "eth0", Enabled: false}}
)

// recordedLog is one recorded NCCL debug log and what ParseLog must read from it.
type recordedLog struct {
	name string
	file string
	want logWant
}

// recordedLogs are every recorded log under the fixtures, each a case.
var recordedLogs = []recordedLog{
	{
		name: "the direct all_reduce log shows 48 P2P/direct connections and no GDR NIC",
		file: recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0"},
			ranks: 2, nodes: 1, locl: 2, comms: 2,
			transports: map[string]int{ClassP2PDirect: 48},
			verdict:    VerdictDirect, reasons: []string{"48 of 48 connections used P2P/direct"},
		},
	},
	{
		name: "the direct all_gather log shows 48 P2P/direct connections",
		file: recorded + "all_gather_perf-h200x2-nv18-direct-p2p.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0"},
			ranks: 2, nodes: 1, locl: 2, comms: 2,
			transports: map[string]int{ClassP2PDirect: 48},
			verdict:    VerdictDirect, reasons: []string{"48 of 48 connections used P2P/direct"},
		},
	},
	{
		name: "the direct sendrecv log shows 64 P2P/direct connections, some made during the table",
		file: recorded + "sendrecv_perf-h200x2-nv18-direct-p2p.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0"},
			ranks: 2, nodes: 1, locl: 2, comms: 2,
			transports: map[string]int{ClassP2PDirect: 64},
			verdict:    VerdictDirect, reasons: []string{"64 of 64 connections used P2P/direct"},
		},
	},
	{
		name: "the P2P-disabled log shows 8 SHM connections and is a fallback",
		file: recorded + "all_reduce_perf-h200x2-nv18-p2p-disabled-shm.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_P2P_DISABLE": "1"},
			ranks: 2, nodes: 1, locl: 2, comms: 2,
			transports: map[string]int{ClassSHM: 8},
			verdict:    VerdictFallback,
			reasons:    []string{"8 of 8 connections used SHM (channels 00-03, ranks 1 -> 0 and 0 -> 1 via SHM/direct/direct on vm); P2P is the direct path between GPUs of one node"},
		},
	},
	{
		name: "the P2P and SHM disabled log shows 8 socket connections and two one-rank nodes",
		file: recorded + "all_reduce_perf-h200x2-nv18-p2p-shm-disabled-socket.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"},
			ranks: 2, nodes: 2, locl: 1, comms: 2,
			transports: map[string]int{ClassNetSocket: 8},
			hints:      noRDMADevice(15), // the VM has no RDMA device: NCCL fell back to sockets
			verdict:    VerdictFallback,
			reasons:    []string{"8 of 8 connections used NET/Socket (channels 00 and 01, ranks 0 -> 1 and 1 -> 0 via NET/Socket/0 on vm); sockets bypass RDMA"},
		},
	},
	{
		name: "the MPI direct all_reduce log shows 48 P2P/CUMEM connections, one process per GPU",
		file: recorded + "all_reduce_perf-h200x2-nv18-mpi-np2-direct-cumem.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0"},
			ranks: 2, nodes: 1, locl: 2, comms: 2,
			transports: map[string]int{ClassP2PCUMEM: 48},
			verdict:    VerdictDirect, reasons: []string{"48 of 48 connections used P2P/CUMEM"},
		},
	},
	{
		name: "the MPI P2P-disabled log shows 8 SHM connections between the two processes",
		file: recorded + "all_reduce_perf-h200x2-nv18-mpi-np2-p2p-disabled-shm.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_P2P_DISABLE": "1"},
			ranks: 2, nodes: 1, locl: 2, comms: 2,
			transports: map[string]int{ClassSHM: 8},
			verdict:    VerdictFallback,
			reasons:    []string{"8 of 8 connections used SHM (channels 00-03, ranks 1 -> 0 and 0 -> 1 via SHM/direct/direct on vm); P2P is the direct path between GPUs of one node"},
		},
	},
	{
		name: "the MPI P2P and SHM disabled log shows 8 socket connections, rank 1 destroyed after the footer",
		file: recorded + "all_reduce_perf-h200x2-nv18-mpi-np2-p2p-shm-disabled-socket.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"},
			ranks: 2, nodes: 2, locl: 1, comms: 2,
			transports: map[string]int{ClassNetSocket: 8},
			hints:      noRDMADevice(17), // the VM has no RDMA device: NCCL fell back to sockets
			verdict:    VerdictFallback,
			reasons:    []string{"8 of 8 connections used NET/Socket (channels 00 and 01, ranks 0 -> 1 and 1 -> 0 via NET/Socket/0 on vm); sockets bypass RDMA"},
		},
	},
	{
		name: "the A100 PCIe init log has DMA-BUF, two GDR HCAs and 6 GDRDMA connections",
		file: corpusDebug + "a100pcie-2node-cx5-cx6-gdr-enabled-dmabuf-netgdrlevel-sys.txt",
		want: logWant{
			nccl: "2.16.5", cuda: "11.8", network: "IB",
			netDevices: []NetDevice{
				{Net: "IB", Index: 0, Name: "mlx5_0", Port: 1, LinkLayer: "RoCE"},
				{Net: "IB", Index: 1, Name: "mlx5_2", Port: 1, LinkLayer: "IB"},
			},
			gdrHCAs: []GDRHCA{
				{Net: "IB", Index: 0, Name: "mlx5_0", Enabled: true},
				{Net: "IB", Index: 1, Name: "mlx5_2", Enabled: true},
			},
			gdrGPUs: []GDRGPU{
				{GPU: "81000", HCA: "1", Enabled: true},
				{GPU: "81000", HCA: "0", Enabled: true},
			},
			dmabuf: []int{0},
			env:    map[string]string{"NCCL_NET_GDR_LEVEL": "SYS"},
			ranks:  2, comms: 1,
			transports: map[string]int{ClassNetIBGDR: 6},
			verdict:    VerdictDirect, reasons: []string{"6 of 6 connections used NET/IB/GDRDMA"},
			partial: "1 of 1 communicators that reached Init COMPLETE were not destroyed: the log stops while NCCL was running",
		},
	},
	{
		name: "the Azure ND H100 v5 snippet lists 9 HCAs, 2 with GDR, and the busid WARN",
		file: corpusDebug + "azure-ndh100v5-net-ib-9hca-ib+roce-gdr-enabled-xml-busid-warn.txt",
		want: logWant{
			netDeviceCount: 9,
			netDevices:     []NetDevice{{Net: "IB", Index: 1, Name: "mlx5_1", Port: 1, LinkLayer: "RoCE"}},
			gdrHCAs: []GDRHCA{
				{Net: "IB", Index: 0, Name: "mlx5_0", Enabled: true},
				{Net: "IB", Index: 1, Name: "mlx5_1", Enabled: true},
			},
			findings: []Finding{{Level: "WARN", Source: "graph/xml.h:85", Text: "Attribute busid of node nic not found", Count: 1, Line: 6}},
			verdict:  VerdictUnknown, reasons: []string{noChannels},
			partial: noInitComplete,
		},
	},
	{
		name: "the IB completion error log keeps the wrapped WARN whole and the error trace",
		file: corpusDebug + "mlengineering-azure-2node-net-ib-ib+roce-completion-error12-vendor129.txt",
		want: logWant{
			netDevices: []NetDevice{
				{Net: "IB", Index: 0, Name: "ibP111p0s0", Port: 1, LinkLayer: "IB"},
				{Net: "IB", Index: 1, Name: "rdmaP1111p0s2", Port: 1, LinkLayer: "RoCE"},
			},
			findings: []Finding{
				// The wrapped WARN starts on line 2 and goes on on line 3.
				{Level: "WARN", Source: "transport/net_ib.cc:1296", Count: 1, Line: 2,
					Text: "NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)"},
				{Level: "ERROR", Source: "transport/net.cc:1134", Text: "transport/net.cc:1134 -> 6", Count: 1, Line: 4},
				{Level: "ERROR", Source: "proxy.cc:679", Text: "proxy.cc:679 -> 6", Count: 1, Line: 5},
				{Level: "ERROR", Source: "proxy.cc:858", Text: "proxy.cc:858 -> 6 [Proxy Thread]", Count: 1, Line: 6},
			},
			verdict: VerdictUnknown, reasons: []string{noChannels},
			partial: noInitComplete,
		},
	},
	{
		name: "an NCCL 2.12 log of two nodes without a peer-memory module is a NET/IB fallback with the (no module) hint",
		file: synthetic + "ib-2node-nccl2.12-gdr-disabled-no-module-synthetic.txt",
		want: logWant{
			nccl: "2.12.12", cuda: "11.7", network: "IB",
			netDevices: []NetDevice{
				{Net: "IB", Index: 0, Name: "mlx5_0", Port: 1, LinkLayer: "IB"},
				{Net: "IB", Index: 1, Name: "mlx5_1", Port: 1, LinkLayer: "IB"},
			},
			gdrHCAs: []GDRHCA{
				{Net: "IB", Index: 0, Name: "mlx5_0", Enabled: false},
				{Net: "IB", Index: 1, Name: "mlx5_1", Enabled: false},
			},
			hints: []Hint{{
				Kind: HintNoPeermemModule, Text: "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)", Line: 11, Count: 2,
				Advice: noModuleAdvice,
			}},
			ranks: 2, comms: 2,
			transports: map[string]int{ClassNetIB: 8},
			verdict:    VerdictFallback,
			reasons:    []string{"8 of 8 connections used NET/IB without GDRDMA (channels 00 and 01, ranks 1 -> 0 and 0 -> 1 via NET/IB/0 on node-a, ranks 0 -> 1 and 1 -> 0 via NET/IB/0 on node-b); the data is staged through host memory"},
		},
	},
	{
		name: "an NCCL 2.12 ENV log keeps the ibv_reg_mr WARN and its error trace with their lines",
		file: synthetic + "ib-nccl2.12-ibv_reg_mr-enomem-subsys-env-synthetic.txt",
		want: logWant{
			nccl: "2.12.12", cuda: "11.7",
			env: map[string]string{"NCCL_IB_HCA": "mlx5_0", "NCCL_IB_TIMEOUT": "22"}, // net_ib.cc echoes NCCL_IB_HCA as "set to"
			findings: []Finding{
				{Level: "WARN", Source: "misc/ibvwrap.cc:262", Text: "Call to ibv_reg_mr failed with error Cannot allocate memory", Count: 1, Line: 6},
				{Level: "ERROR", Source: "transport/net_ib.cc:710", Text: "transport/net_ib.cc:710 -> 2", Count: 1, Line: 7},
				{Level: "ERROR", Source: "include/net.h:26", Text: "include/net.h:26 -> 2", Count: 1, Line: 8},
				{Level: "ERROR", Source: "transport/net.cc:631", Text: "transport/net.cc:631 -> 2", Count: 1, Line: 9},
				{Level: "ERROR", Source: "proxy.cc:914", Text: "proxy.cc:914 -> 2", Count: 1, Line: 10},
			},
			verdict: VerdictUnknown, reasons: []string{noChannels},
			partial: noInitComplete,
		},
	},
	{
		name: "the misdetected comm line counts 4 nodes of 2 local ranks",
		file: corpusDebug + "nccl2345-comm-line-nnodes4-localranks2-misdetected.txt",
		want: logWant{
			ranks: 8, nodes: 4, locl: 2, comms: 1,
			verdict: VerdictUnknown, reasons: []string{noChannels},
			partial: noInitComplete,
		},
	},
	{
		name: "the two-rail H200 log is a fallback naming the far-NIC channels 01 and 03 that skip GDRDMA",
		file: corpusDebug + "nccl2345-h200-roce-2rail-mixed-gdrdma-and-hostmem-far-nic.txt",
		want: logWant{
			ranks: 8, nodes: 2, locl: 4, comms: 1,
			transports: map[string]int{ClassNetIB: 2, ClassNetIBGDR: 2},
			uses: []TransportUse{
				{Class: ClassNetIB, Connections: 2, Channels: []int{1, 3},
					Links: []Link{{Host: "kg35-nvl03", From: 7, To: 0, Via: "NET/IB/1", Connections: 2}}},
				{Class: ClassNetIBGDR, GDR: true, Connections: 2, Channels: []int{0, 2},
					Links: []Link{{Host: "kg35-nvl03", From: 7, To: 0, Via: "NET/IB/0/GDRDMA", Connections: 2}}},
			},
			verdict: VerdictFallback,
			reasons: []string{
				"2 of 4 connections used NET/IB without GDRDMA (channels 01 and 03, rank 7 -> 0 via NET/IB/1 on kg35-nvl03); the data is staged through host memory",
				"2 of 4 connections used NET/IB/GDRDMA",
			},
			partial: noInitComplete,
		},
	},
	{
		name: "the gather table with interleaved NCCL lines shows 2 shared GDRDMA connections",
		file: corpusTests + "gather_perf-a100pcie-2node-gdr-dropoff-6GB.txt",
		want: logWant{
			gdrGPUs:    []GDRGPU{{GPU: "81000", HCA: "1", Enabled: true}},
			transports: map[string]int{ClassNetIBGDR: 2},
			verdict:    VerdictDirect, reasons: []string{"2 of 2 connections used NET/IB/GDRDMA"},
			partial: noInitComplete,
		},
	},
	{
		name: "an A3 Ultra output without debug lines still names its NCCL version",
		file: corpusTests + "all_gather_perf-gke-a3ultra-h200-2node-1gpu-gib.txt",
		want: logWant{nccl: "2.25.1", cuda: "12.8", verdict: VerdictUnknown, reasons: []string{noChannels}},
	},
	{
		name: "an A4 output without debug lines still names its NCCL version",
		file: corpusTests + "all_gather_perf-gke-a4-b200-2node-16rank.txt",
		want: logWant{nccl: "2.26.6", cuda: "12.8", verdict: VerdictUnknown, reasons: []string{noChannels}},
	},
	{
		name: "a trimmed GB200 1440-rank output has no NCCL lines",
		file: corpusTests + "all_reduce_perf-coreweave-gb200-20racks-1440rank-trimmed.txt",
		want: logWant{err: ErrNoData},
	},
	{
		name: "a trimmed NVL72 output has no NCCL lines",
		file: corpusTests + "all_reduce_perf-coreweave-gb200-nvl72-1rack-72rank-graphics-device-name.txt",
		want: logWant{err: ErrNoData},
	},
	{
		name: "an elided H100 SHARP output has no NCCL lines",
		file: corpusTests + "all_reduce_perf-coreweave-h100-64gpu-sharp-elided.txt",
		want: logWant{err: ErrNoData},
	},
	{
		name: "an A3 Mega output has no NCCL lines",
		file: corpusTests + "all_reduce_perf-gcp-a3mega-h100-2node-16rank.txt",
		want: logWant{err: ErrNoData},
	},
	{
		name: "the Slingshot wrong-count output has no NCCL lines",
		file: corpusTests + "all_reduce_perf-nccltests369-gh200-2node-slingshot-cxi-wrong-96-FAILED.txt",
		want: logWant{err: ErrNoData},
	},
	{
		name: "the busy-device output has no NCCL lines",
		file: corpusTests + "all_reduce_perf-nccltests369-gh200-2node-test-cuda-failure-device-busy.txt",
		want: logWant{err: ErrNoData},
	},
	{
		name: "one emulated node connects nothing: its path is unknown",
		file: recorded + "all_reduce_perf-h200x1-emu-n1.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_HOSTID": "emu0"},
			ranks: 1, nodes: 1, locl: 1, comms: 1,
			transports: map[string]int{},
			verdict:    VerdictUnknown, reasons: []string{"no channel connection lines in the log; NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM prints them"},
		},
	},
	{
		name: "two emulated nodes talk over 8 socket connections",
		file: recorded + "all_reduce_perf-h200x1-emu-n2-socket.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_HOSTID": "emu1"},
			ranks: 2, nodes: 2, locl: 1, comms: 2,
			transports: map[string]int{ClassNetSocket: 8},
			hints:      noRDMADevice(17), // the VM has no RDMA device: NCCL fell back to sockets
			verdict:    VerdictFallback, reasons: []string{"8 of 8 connections used NET/Socket (channels 00 and 01, ranks 0 -> 1 and 1 -> 0 via NET/Socket/0 on emu1, ranks 1 -> 0 and 0 -> 1 via NET/Socket/0 on emu0); sockets bypass RDMA"},
		},
	},
	{
		name: "timestamped lines keep their host: emu0 and emu1, not [2026-12-01",
		file: recorded + "all_reduce_perf-h200x1-emu-n2-timestamps.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_HOSTID": "emu1"},
			ranks: 2, nodes: 2, locl: 1, comms: 2,
			transports: map[string]int{ClassNetSocket: 8},
			hints:      noRDMADevice(17), // the VM has no RDMA device: NCCL fell back to sockets
			verdict:    VerdictFallback, reasons: []string{"8 of 8 connections used NET/Socket (channels 00 and 01, ranks 1 -> 0 and 0 -> 1 via NET/Socket/0 on emu0, ranks 0 -> 1 and 1 -> 0 via NET/Socket/0 on emu1); sockets bypass RDMA"},
		},
	},
	{
		name: "four emulated nodes talk over 32 socket connections",
		file: recorded + "all_reduce_perf-h200x1-emu-n4-socket.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_HOSTID": "emu2"},
			ranks: 4, nodes: 4, locl: 1, comms: 4,
			transports: map[string]int{ClassNetSocket: 32},
			hints:      noRDMADevice(25), // the VM has no RDMA device: NCCL fell back to sockets
			verdict:    VerdictFallback, reasons: []string{"32 of 32 connections used NET/Socket (channels 00 and 01, ranks 1 -> 2 and 2 -> 3 via NET/Socket/0 on emu2, ranks 0 -> 1 and 1 -> 2 via NET/Socket/0 on emu1, and 24 more connections); sockets bypass RDMA"},
		},
	},
	{
		name: "four emulated nodes with one slowed talk over the same 32 connections",
		file: recorded + "all_reduce_perf-h200x1-emu-n4-slow-socket.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_HOSTID": "emu2"},
			ranks: 4, nodes: 4, locl: 1, comms: 4,
			transports: map[string]int{ClassNetSocket: 32},
			hints:      noRDMADevice(25), // the VM has no RDMA device: NCCL fell back to sockets
			verdict:    VerdictFallback, reasons: []string{"32 of 32 connections used NET/Socket (channels 00 and 01, rank 0 -> 1 via NET/Socket/0 on emu0, rank 2 -> 3 via NET/Socket/0 on emu3, ranks 0 -> 1 and 1 -> 2 via NET/Socket/0 on emu1, and 24 more connections); sockets bypass RDMA"},
		},
	},
	{
		name: "the slowed pair emu2-emu3 still connects over sockets",
		file: recorded + "all_reduce_perf-h200x1-emu-pair-slow-socket.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_HOSTID": "emu2"},
			ranks: 2, nodes: 2, locl: 1, comms: 2,
			transports: map[string]int{ClassNetSocket: 8},
			hints:      noRDMADevice(17), // the VM has no RDMA device: NCCL fell back to sockets
			verdict:    VerdictFallback, reasons: []string{"8 of 8 connections used NET/Socket (channels 00 and 01, ranks 0 -> 1 and 1 -> 0 via NET/Socket/0 on emu3, ranks 1 -> 0 and 0 -> 1 via NET/Socket/0 on emu2); sockets bypass RDMA"},
		},
	},
	{
		name: "the slowed pair emu1-emu2 still connects over sockets",
		file: recorded + "all_reduce_perf-h200x1-emu-pair-slow2-socket.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0", "NCCL_HOSTID": "emu1"},
			ranks: 2, nodes: 2, locl: 1, comms: 2,
			transports: map[string]int{ClassNetSocket: 8},
			hints:      noRDMADevice(17), // the VM has no RDMA device: NCCL fell back to sockets
			verdict:    VerdictFallback, reasons: []string{"8 of 8 connections used NET/Socket (channels 00 and 01, ranks 1 -> 0 and 0 -> 1 via NET/Socket/0 on emu1, ranks 0 -> 1 and 1 -> 0 via NET/Socket/0 on emu2); sockets bypass RDMA"},
		},
	},
	{
		name: "all_gather on one H200 connects nothing: one rank, path unknown",
		file: recorded + "all_gather_perf-h200x1-direct.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0"},
			ranks: 1, nodes: 1, locl: 1, comms: 1,
			transports: map[string]int{},
			verdict:    VerdictUnknown, reasons: []string{"no channel connection lines in the log; NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM prints them"},
		},
	},
	{
		name: "all_reduce on one H200 connects nothing: one rank, path unknown",
		file: recorded + "all_reduce_perf-h200x1-direct.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0"},
			ranks: 1, nodes: 1, locl: 1, comms: 1,
			transports: map[string]int{},
			verdict:    VerdictUnknown, reasons: []string{"no channel connection lines in the log; NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM prints them"},
		},
	},
	{
		name: "reduce_scatter on one H200 connects nothing: one rank, path unknown",
		file: recorded + "reduce_scatter_perf-h200x1-direct.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0"},
			ranks: 1, nodes: 1, locl: 1, comms: 1,
			transports: map[string]int{},
			verdict:    VerdictUnknown, reasons: []string{"no channel connection lines in the log; NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM prints them"},
		},
	},
	{
		name: "sendrecv on one H200 connects nothing: one rank, path unknown",
		file: recorded + "sendrecv_perf-h200x1-direct.txt",
		want: logWant{
			nccl: recordedNCCL, cuda: "13.0", network: "Socket",
			netDevices: recordedSocket, gdrHCAs: recordedHCAs,
			env:   map[string]string{"NCCL_NVLS_ENABLE": "0"},
			ranks: 1, nodes: 1, locl: 1, comms: 1,
			transports: map[string]int{},
			verdict:    VerdictUnknown, reasons: []string{"no channel connection lines in the log; NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM prints them"},
		},
	},
}

func TestParseLogReadsEveryFixture(t *testing.T) {
	tests := recordedLogs

	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLog(openFixture(t, tt.file))
			if tt.want.err != nil {
				if !errors.Is(err, tt.want.err) {
					t.Fatalf("ParseLog error = %v, want %v", err, tt.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkLog(t, got, tt.want)
		})
	}
	for _, f := range fixtureFiles(t, ".txt") {
		if !covered[f] {
			t.Errorf("fixture %s has no ParseLog case", f)
		}
	}
}
