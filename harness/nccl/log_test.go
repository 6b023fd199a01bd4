package nccl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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

func TestParseLogReadsEveryFixture(t *testing.T) {
	tests := []struct {
		name string
		file string
		want logWant
	}{
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
				env: map[string]string{"NCCL_IB_TIMEOUT": "22"},
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

func checkLog(t *testing.T, got *LogSummary, w logWant) {
	t.Helper()
	if got.NCCLVersion != w.nccl || got.CUDAVersion != w.cuda || got.Network != w.network {
		t.Errorf("NCCL, CUDA, network = %q %q %q, want %q %q %q", got.NCCLVersion, got.CUDAVersion, got.Network, w.nccl, w.cuda, w.network)
	}
	if w.netDeviceCount > 0 {
		if len(got.NetDevices) != w.netDeviceCount {
			t.Errorf("%d NET devices, want %d", len(got.NetDevices), w.netDeviceCount)
		}
		for _, d := range w.netDevices {
			if d.Index >= len(got.NetDevices) || got.NetDevices[d.Index] != d {
				t.Errorf("NET device %d: want %+v in %+v", d.Index, d, got.NetDevices)
			}
		}
	} else {
		sameOrEmpty(t, "NET devices", w.netDevices, got.NetDevices)
	}
	sameOrEmpty(t, "GDR HCAs", w.gdrHCAs, got.GDRHCAs)
	sameOrEmpty(t, "GDR GPUs", w.gdrGPUs, got.GDRGPUs)
	sameOrEmpty(t, "DMA-BUF GPUs", w.dmabuf, got.DMABUFGPUs)
	sameOrEmpty(t, "env", w.env, got.Env)
	sameOrEmpty(t, "transports", w.transports, got.Transports)
	sameOrEmpty(t, "findings", w.findings, got.Findings)
	sameOrEmpty(t, "hints", w.hints, got.Hints)
	if got.Ranks != w.ranks || got.Nodes != w.nodes || got.LocalRanks != w.locl || len(got.Comms) != w.comms {
		t.Errorf("ranks, nodes, local ranks, comms = %d %d %d %d, want %d %d %d %d",
			got.Ranks, got.Nodes, got.LocalRanks, len(got.Comms), w.ranks, w.nodes, w.locl, w.comms)
	}
	if w.uses != nil {
		sameOrEmpty(t, "transport uses", w.uses, got.Uses)
	}
	checkCounts(t, got)
	if got.Outcome != w.verdict {
		t.Errorf("verdict %q, want %q", got.Outcome, w.verdict)
	}
	sameOrEmpty(t, "reasons", w.reasons, got.Reasons)
	if got.PartialReason != w.partial || got.Partial != (w.partial != "") {
		t.Errorf("partial %v %q, want %q", got.Partial, got.PartialReason, w.partial)
	}
}

// checkCounts checks that Transports, Uses and the Connections sample
// agree, and that every kept list is within its cap.
func checkCounts(t testing.TB, got *LogSummary) {
	t.Helper()
	n, u := 0, 0
	for _, c := range got.Transports {
		n += c
	}
	for _, use := range got.Uses {
		u += use.Connections
		links := use.OtherLinks
		for _, l := range use.Links {
			links += l.Connections
		}
		if links != use.Connections || len(use.Links) > MaxLinks || !slices.IsSorted(use.Channels) || got.Transports[use.Class] < use.Connections {
			t.Errorf("transport use %+v does not add up", use)
		}
	}
	if n != u || len(got.Connections) != min(n, MaxConnections) {
		t.Errorf("transports count %d connections, uses %d, the sample holds %d", n, u, len(got.Connections))
	}
	if len(got.Comms) > MaxComms || len(got.Findings) > maxKept || len(got.NetDevices) > maxKept || len(got.Env) > maxKept {
		t.Errorf("a list is over its cap: %d comms, %d findings, %d NET devices, %d env", len(got.Comms), len(got.Findings), len(got.NetDevices), len(got.Env))
	}
	if got.Partial != (got.PartialReason != "") {
		t.Errorf("partial %v with reason %q", got.Partial, got.PartialReason)
	}
}

// sameOrEmpty compares want and got, with nil and empty alike.
func sameOrEmpty[T any](t *testing.T, what string, want, got T) {
	t.Helper()
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	empty := func(b []byte) bool { s := string(b); return s == "null" || s == "[]" || s == "{}" }
	if empty(w) && empty(g) {
		return
	}
	if string(w) != string(g) {
		t.Errorf("%s:\nwant %s\n got %s", what, w, g)
	}
}

func TestParseLogClassifiesEveryChannelLineShape(t *testing.T) {
	tests := []struct {
		name  string
		msg   string
		class string
		gdr   bool
		conn  Connection // checked when Via is set
	}{
		{name: "a same-process P2P line is P2P/direct", msg: "Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer", class: ClassP2PDirect,
			conn: Connection{Channel: 0, Index: 0, From: 0, To: 1, Via: "P2P/direct pointer", Class: ClassP2PDirect}},
		{name: "a direct pointer read line is P2P/direct", msg: "Channel 03/1 : 1[1] -> 0[0] via P2P/direct pointer/read", class: ClassP2PDirect},
		{name: "a cuMem line is P2P/CUMEM", msg: "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM", class: ClassP2PCUMEM},
		{name: "a cuMem read line is P2P/CUMEM", msg: "Channel 01/0 : 2[2] -> 3[3] via P2P/CUMEM/read", class: ClassP2PCUMEM},
		{name: "a cuMem copy-engine line is P2P/CUMEM", msg: "Channel 01/0 : 2[2] -> 3[3] via P2P/CUMEM/CE", class: ClassP2PCUMEM},
		{name: "a legacy IPC line is P2P/IPC", msg: "Channel 00/0 : 0[18000] -> 1[2a000] via P2P/IPC", class: ClassP2PIPC},
		{name: "a legacy IPC read line is P2P/IPC", msg: "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", class: ClassP2PIPC},
		{name: "a multi-node NVLink line is P2P/MNNVL", msg: "Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL", class: ClassP2PMNNVL},
		{name: "a relayed line is P2P/indirect", msg: "Channel 00/0 : 0[0] -> 2[2] via P2P/indirect/1[1]", class: ClassP2PIndirect},
		{name: "an SHM line without connIndex is SHM", msg: "Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", class: ClassSHM,
			conn: Connection{Channel: 0, Index: -1, From: 0, To: 1, Via: "SHM/direct/direct", Class: ClassSHM}},
		{name: "an SHM copy-engine line is SHM", msg: "Channel 02 : 1[1] -> 0[0] via SHM/CE/direct", class: ClassSHM},
		{name: "an NCCL 2.30 SHM line is SHM", msg: "Channel 02 : 1[1] -> 0[0] via SHM/direct", class: ClassSHM},
		{name: "a socket receive line is NET/Socket", msg: "Channel 00/0 : 0[0] -> 1[1] [receive] via NET/Socket/0", class: ClassNetSocket,
			conn: Connection{Channel: 0, Index: 0, From: 0, To: 1, Dir: "receive", Via: "NET/Socket/0", Class: ClassNetSocket}},
		{name: "an IB GDRDMA send line is NET/IB/GDRDMA", msg: "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/1/GDRDMA", class: ClassNetIBGDR, gdr: true},
		{name: "a shared-buffer GDRDMA line is NET/IB/GDRDMA", msg: "Channel 01/1 : 1[81000] -> 0[81000] [receive] via NET/IB/1/GDRDMA/Shared", class: ClassNetIBGDR, gdr: true},
		{name: "a 2.26+ GDRDMA line with its PCI mode is NET/IB/GDRDMA", msg: "Channel 02/0 : 7[3] -> 0[0] [receive] via NET/IB/0/GDRDMA(PCI)/Shared", class: ClassNetIBGDR, gdr: true},
		{name: "a line with a parenthesised suffix and no GDRDMA is NET/IB", msg: "Channel 02/0 : 7[3] -> 0[0] [receive] via NET/IB/0(PCI)", class: ClassNetIB},
		{name: "a PXN line through a proxy rank is NET/IB/GDRDMA", msg: "Channel 00/0 : 1[1] -> 9[1] [send] via NET/IB/0(0)/GDRDMA", class: ClassNetIBGDR, gdr: true},
		{name: "a host-staged far-NIC line is NET/IB", msg: "Channel 01/0 : 7[3] -> 0[0] [receive] via NET/IB/1", class: ClassNetIB},
		{name: "an IBext plugin GDRDMA line keeps the plugin name", msg: "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IBext/0/GDRDMA", class: "NET/IBext/GDRDMA", gdr: true},
		{name: "a versioned IBext plugin line keeps its version", msg: "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IBext_v8/3", class: "NET/IBext_v8"},
		{name: "a gIB plugin line keeps the plugin name", msg: "Channel 05/0 : 8[0] -> 0[0] [receive] via NET/gIB/0/GDRDMA", class: "NET/gIB/GDRDMA", gdr: true},
		{name: "an OFI plugin line without GDRDMA is host-staged", msg: "Channel 00/0 : 0[0] -> 1[0] [send] via NET/OFI/1", class: "NET/OFI"},
		{name: "a plugin name with a space is kept whole", msg: "Channel 00/0 : 0[0] -> 1[0] [send] via NET/AWS Libfabric/0/GDRDMA", class: "NET/AWS Libfabric/GDRDMA", gdr: true},
		{name: "a CollNet GDRDMA line is CollNet", msg: "CollNet 00/0 : 0 [send] via COLLNET/IBext/0/GDRDMA", class: ClassCollNet, gdr: true,
			conn: Connection{Channel: 0, Index: 0, From: 0, To: -1, Dir: "send", Via: "COLLNET/IBext/0/GDRDMA", Class: ClassCollNet, GDR: true}},
		{name: "a CollNet line without GDRDMA is CollNet", msg: "CollNet 01/1 : 3 [receive] via COLLNET/SHARP/0", class: ClassCollNet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseLog(strings.NewReader("node1:1:2 [0] NCCL INFO " + tt.msg + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Connections) != 1 {
				t.Fatalf("%d connections, want 1", len(s.Connections))
			}
			c := s.Connections[0]
			if c.Class != tt.class || c.GDR != tt.gdr || s.Transports[tt.class] != 1 || c.Host != "node1" {
				t.Errorf("class %q GDR %v host %q, want %q %v node1", c.Class, c.GDR, c.Host, tt.class, tt.gdr)
			}
			if tt.conn.Via != "" {
				tt.conn.Host = "node1"
				if d := diff(tt.conn, c); d != "" {
					t.Errorf("connection %s", d)
				}
			}
		})
	}
}

func TestParseLogIgnoresLinesThatOnlyLookLikeConnections(t *testing.T) {
	in := `n1:1:2 [0] NCCL INFO Channel 00/02 :    0   1
n1:1:2 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1
n1:1:2 [0] NCCL INFO Channel 00/0 : 1[81000] -> 0[81000] [receive] via NET/IB/1/GDRDMA
Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
`
	s, err := ParseLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Connections) != 1 || s.Transports[ClassNetIBGDR] != 1 {
		t.Errorf("connections %+v, want only the NET/IB/GDRDMA one", s.Connections)
	}
}

func TestParseLogReadsNewerGDRAndEnvironmentLines(t *testing.T) {
	in := `h:1:2 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 3 / HCA 2 (distance 4 <= 4), read 1 mode PCI
h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 3 / HCA 5 (distance 6 > 4)
h:1:2 [0] NCCL INFO NET/IBext_v8 : Using [0]mlx5_0:1/IB [1]mlx5_3+mlx5_4:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
h:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to =mlx5_0,mlx5_3
h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0
h:1:2 [0] NCCL INFO Using network IBext_v8
h:1:2 [0] NCCL INFO Using network Socket
h:1:2 [0] 1.234 misc/socket.cc:10 NCCL TRACE ignored
`
	s, err := ParseLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	sameOrEmpty(t, "GDR GPUs", []GDRGPU{
		{GPU: "3", HCA: "2", Enabled: true, Mode: "PCI"},
		{GPU: "3", HCA: "5", Enabled: false},
	}, s.GDRGPUs)
	sameOrEmpty(t, "NET devices", []NetDevice{
		{Net: "IBext_v8", Index: 0, Name: "mlx5_0", Port: 1, LinkLayer: "IB"},
		{Net: "IBext_v8", Index: 1, Name: "mlx5_3+mlx5_4", Port: 1, LinkLayer: "RoCE"},
	}, s.NetDevices)
	sameOrEmpty(t, "env", map[string]string{"NCCL_IB_HCA": "=mlx5_0,mlx5_3", "NCCL_SOCKET_IFNAME": "eth0"}, s.Env)
	if s.Network != "IBext_v8" {
		t.Errorf("network %q, want the first one, IBext_v8", s.Network)
	}
}

func TestParseLogCountsARepeatedWrappedWarnOnce(t *testing.T) {
	in := strings.Repeat("\nh:1:2 [0] net_ib.cc:9 NCCL WARN NET/IB : Got completion from peer with error 12, opcode 0, len\n0, vendor err 129 (Recv)\n", 2) +
		strings.Repeat("\nh:1:2 [0] init.cc:1 NCCL WARN Cuda failure 'out of memory'\n", 3)
	s, err := ParseLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	sameOrEmpty(t, "findings", []Finding{
		// Each keeps the line of its first occurrence.
		{Level: "WARN", Source: "net_ib.cc:9", Text: "NET/IB : Got completion from peer with error 12, opcode 0, len 0, vendor err 129 (Recv)", Count: 2, Line: 2},
		{Level: "WARN", Source: "init.cc:1", Text: "Cuda failure 'out of memory'", Count: 3, Line: 8},
	}, s.Findings)
}

func TestParseLogRejectsInputWithoutNCCLLines(t *testing.T) {
	for _, in := range []string{"", "hello\n", "#  Rank  0 Group  0 Pid 1 on h device 0 [0000:00:06] NVIDIA H200\n"} {
		if _, err := ParseLog(strings.NewReader(in)); !errors.Is(err, ErrNoData) {
			t.Errorf("ParseLog(%q) error = %v, want ErrNoData", in, err)
		}
	}
}

func TestLogSummaryMarshalsTheNamesTheCLIReads(t *testing.T) {
	s, err := ParseLog(openFixture(t, corpusDebug+"a100pcie-2node-cx5-cx6-gdr-enabled-dmabuf-netgdrlevel-sys.txt"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var view map[string]json.RawMessage
	if err := json.Unmarshal(b, &view); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"nccl_version": `"2.16.5"`,
		"network":      `"IB"`,
		"transports":   `{"NET/IB/GDRDMA":6}`,
		"gdr_hcas":     `[{"net":"IB","index":0,"name":"mlx5_0","enabled":true},{"net":"IB","index":1,"name":"mlx5_2","enabled":true}]`,
		"verdict":      `"direct"`,
		"reasons":      `["6 of 6 connections used NET/IB/GDRDMA"]`,
	}
	for k, v := range want {
		if string(view[k]) != v {
			t.Errorf("%s = %s, want %s", k, view[k], v)
		}
	}
}

func FuzzParseLog(f *testing.F) {
	addFixtureSeeds(f)
	f.Add("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/x(/0\n")
	f.Add("h:1:2 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/\n")
	f.Add("h:1:2 [0] NCCL WARN\n")
	f.Add("h:1:2 [0] NCCL INFO Channel 300/0 : 99999999999999999999[x] -> 1[] via P2P\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseLog(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				t.Errorf("error %v does not wrap ErrNoData", err)
			}
			return
		}
		checkCounts(t, s)
		for _, exp := range []Expectation{{}, {P2P: ExpectYes, GDR: ExpectYes, Nodes: 1}, {P2P: ExpectNo, GDR: ExpectNo}} {
			v := s.Verdict(exp)
			if v.Verdict != VerdictDirect && v.Verdict != VerdictFallback && v.Verdict != VerdictUnknown || len(v.Reasons) == 0 {
				t.Errorf("Verdict(%+v) = %+v", exp, v)
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Errorf("summary does not marshal: %v", err)
		}
	})
}

func BenchmarkParseLog(b *testing.B) {
	data := largestFixture(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseLog(strings.NewReader(string(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// streamSize is about the length of the synthetic logs the 1 GiB
// benchmarks parse: whole repetitions of their body, so no line is cut.
const streamSize = 1 << 30

// logStream is an io.Reader of head, body repeated, then tail. Before each
// repetition it writes the repetition's number into the 7-digit host
// placeholders of body (hostAt), so a parser that kept state per host,
// process or communicator would see new ones all the way.
type logStream struct {
	head, body, tail []byte
	hostAt           []int
	rep, reps        int
	cur              []byte // what is left of the current piece
	tailDone         bool
}

// newLogStream repeats body as often as fits in about size bytes.
func newLogStream(head, body, tail []byte, hostAt []int, size int64) *logStream {
	reps := int((size - int64(len(head)) - int64(len(tail))) / int64(len(body)))
	return &logStream{head: head, body: body, tail: tail, hostAt: hostAt, reps: reps, cur: head}
}

// size is the number of bytes the stream yields.
func (s *logStream) size() int64 {
	return int64(len(s.head)) + int64(s.reps)*int64(len(s.body)) + int64(len(s.tail))
}

func (s *logStream) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		switch {
		case s.rep < s.reps:
			s.rep++
			var digits [7]byte
			for i, n := len(digits)-1, s.rep; i >= 0; i, n = i-1, n/10 {
				digits[i] = byte('0' + n%10)
			}
			for _, at := range s.hostAt {
				copy(s.body[at:], digits[:])
			}
			s.cur = s.body
		case !s.tailDone:
			s.cur, s.tailDone = s.tail, true
		default:
			return 0, io.EOF
		}
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// streamBody joins the lines of the fixture files that keep reports true
// to real runs, renaming the host of every NCCL line to "h" and a 7-digit
// placeholder, whose offsets it returns. With onlyNCCL it keeps only NCCL
// lines, so nccl-tests rows do not repeat.
func streamBody(tb testing.TB, files []string, onlyNCCL bool) ([]byte, []int) {
	tb.Helper()
	var body []byte
	var hostAt []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			line = strings.TrimSuffix(line, "\n") + "\n"
			_, prefix, _, ok := splitLogLine([]byte(line))
			if !ok {
				if !onlyNCCL {
					body = append(body, line...)
				}
				continue
			}
			host := hostOf(prefix)
			at := strings.Index(line, string(host))
			if len(host) == 0 || at < 0 {
				body = append(body, line...)
				continue
			}
			body = append(body, line[:at]+"h"...)
			hostAt = append(hostAt, len(body))
			body = append(body, "0000000"+line[at+len(host):]...)
		}
	}
	return body, hostAt
}

// peakMemory samples the Go heap every millisecond until stopped, and
// returns the largest heap in use and the process's peak resident set
// (VmHWM, reset at the start where /proc/self/clear_refs allows it).
func peakMemory(tb testing.TB) (stop func() (heapMiB, rssMiB float64)) {
	tb.Helper()
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	var peak uint64
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64()+sample[1].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (float64, float64) {
		close(done)
		<-finished
		return float64(peak) / (1 << 20), float64(vmHWM(tb)) / (1 << 20)
	}
}

// vmHWM is the peak resident set from /proc/self/status, in bytes; 0
// where there is none.
func vmHWM(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkParseLog1GiB streams 1 GiB of NCCL log, every fixture over and
// over with new host names, through ParseLog. Besides MB/s it reports the
// peak Go heap (objects and the free space in their spans, sampled every
// millisecond) and the peak resident set of the whole test process.
// Issue 4 asks for 200 MB/s or more in under 64 MiB on a 2-core machine:
//
//	go test -run '^$' -bench ParseLog1GiB -benchtime 1x ./harness/nccl/
func BenchmarkParseLog1GiB(b *testing.B) {
	body, hostAt := streamBody(b, fixtureFiles(b, ".txt"), false)
	per, err := ParseLog(bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	perRep := 0
	for _, n := range per.Transports {
		perRep += n
	}
	b.SetBytes(newLogStream(nil, body, nil, hostAt, streamSize).size())
	b.ReportAllocs()
	stop := peakMemory(b)
	for b.Loop() {
		in := newLogStream(nil, body, nil, hostAt, streamSize)
		s, err := ParseLog(in)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, c := range s.Transports {
			n += c
		}
		if n != in.reps*perRep || len(s.Connections) != MaxConnections || len(s.Comms) != MaxComms || len(s.Uses[0].Links) != MaxLinks {
			b.Fatalf("%d connections, want %d reps of %d; %d sampled, %d comms, links %+v", n, in.reps, perRep, len(s.Connections), len(s.Comms), s.Uses[0].Links)
		}
	}
	heap, rss := stop()
	b.ReportMetric(heap, "peak-heap-MiB")
	b.ReportMetric(rss, "peak-rss-MiB")
}

// The regexps parseConnection replaced; FuzzParseConnectionAgreesWithTheRegexps
// holds it to them.
var (
	channelRe = regexp.MustCompile(`^Channel (\d+)(?:/(\d+))? : (\d+)\[[0-9a-fA-Fx]*\] -> (\d+)\[[0-9a-fA-Fx]*\](?: \[(send|receive)\])? via (.+?)\s*$`)
	collNetRe = regexp.MustCompile(`^CollNet (\d+)/(\d+) : (\d+) \[(send|receive)\] via (.+?)\s*$`)
)

func regexpConnection(msg string) (Connection, string, bool) {
	if m := channelRe.FindStringSubmatch(msg); m != nil {
		c := Connection{Channel: atoi(m[1]), Index: -1, From: atoi(m[3]), To: atoi(m[4]), Dir: m[5]}
		if m[2] != "" {
			c.Index = atoi(m[2])
		}
		return c, m[6], true
	}
	if m := collNetRe.FindStringSubmatch(msg); m != nil {
		return Connection{Channel: atoi(m[1]), Index: atoi(m[2]), From: atoi(m[3]), To: -1, Dir: m[4]}, m[5], true
	}
	return Connection{}, "", false
}

func FuzzParseConnectionAgreesWithTheRegexps(f *testing.F) {
	for _, file := range fixtureFiles(f, ".txt") {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if _, _, msg, ok := splitLogLine([]byte(line)); ok && (bytes.HasPrefix(msg, pfxChannel) || bytes.HasPrefix(msg, pfxCollNet)) {
				f.Add(string(msg))
			}
		}
	}
	for _, s := range []string{
		"Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", "CollNet 01/1 : 3 [receive] via COLLNET/SHARP/0",
		"Channel 00/0 : 0[] -> 1[x] [send] via \t", "Channel 1/2 : 3[aF] -> 4[0] [receive] via N \f\r",
		"Channel 99999999999999999999/0 : 0[0] -> 1[1] via P2P", "Channel 0 : 0[0] -> 1[1] [send]x via P2P",
		"CollNet 0/0 : 0 [send] via \xff", "Channel 00/02 :    0   1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if strings.ContainsRune(msg, '\n') {
			return // a line never holds one
		}
		want, wantVia, wantOK := regexpConnection(msg)
		got, via, ok := parseConnection([]byte(msg))
		if ok != wantOK || got != want || string(via) != wantVia {
			t.Errorf("parseConnection(%q) = %+v %q %v; the regexps say %+v %q %v", msg, got, via, ok, want, wantVia, wantOK)
		}
	})
}

func TestParseLogKeepsBoundedSamplesOfAnEndlessLog(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		host := fmt.Sprintf("n%04d", i)
		fmt.Fprintf(&b, "%s:1:2 [0] NCCL INFO comm 0x%x rank %d nRanks 3000 nNodes 1500 localRanks 2 localRank 0\n", host, i, i)
		fmt.Fprintf(&b, "%s:1:2 [0] NCCL INFO Channel %02d/0 : %d[0] -> %d[0] [send] via NET/IB/%d\n", host, i%300, i, (i+1)%3000, i%2)
		fmt.Fprintf(&b, "%s:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.%d.%d<0>\n", host, i/256, i%256)
		fmt.Fprintf(&b, "%s:1:2 [0] NCCL INFO NCCL_VAR_%d set by environment to %d\n", host, i, i)
		fmt.Fprintf(&b, "%s:1:2 [0] misc.cc:1 NCCL WARN peer %s failed\n", host, host)
	}
	s, err := ParseLog(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s)
	u := s.Uses[0]
	if s.Transports[ClassNetIB] != 3000 || u.Connections != 3000 || len(u.Links) != MaxLinks || u.OtherLinks != 3000-MaxLinks {
		t.Errorf("transports %v, use of %d connections with %d links and %d others", s.Transports, u.Connections, len(u.Links), u.OtherLinks)
	}
	if len(u.Channels) != 256 || u.Channels[255] != 255 {
		t.Errorf("%d channels, want 0 to 255", len(u.Channels))
	}
	if s.Ranks != 3000 || s.Nodes != 1500 || len(s.Comms) != MaxComms || len(s.Connections) != MaxConnections {
		t.Errorf("ranks %d nodes %d, %d comms, %d connections", s.Ranks, s.Nodes, len(s.Comms), len(s.Connections))
	}
	if len(s.NetDevices) != maxKept || len(s.Env) != maxKept || len(s.Findings) != maxKept || s.FindingsOmitted != 3000-maxKept {
		t.Errorf("%d NET devices, %d env, %d findings + %d omitted", len(s.NetDevices), len(s.Env), len(s.Findings), s.FindingsOmitted)
	}
	want := "3000 of 3000 connections used NET/IB without GDRDMA (channels 00-255, rank 0 -> 1 via NET/IB/0 on n0000, " +
		"rank 1 -> 2 via NET/IB/1 on n0001, rank 2 -> 3 via NET/IB/0 on n0002, rank 3 -> 4 via NET/IB/1 on n0003, " +
		"and 2996 more connections); the data is staged through host memory"
	if len(s.Reasons) != 1 || s.Reasons[0] != want {
		t.Errorf("reasons %q,\nwant %q", s.Reasons, want)
	}
}

func TestChannelListWritesRunsAsRanges(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{2}, "channel 02"},
		{[]int{3, 1}, "channels 01 and 03"},
		{[]int{0, 1}, "channels 00 and 01"},
		{[]int{0, 1, 2, 3}, "channels 00-03"},
		{[]int{0, 1, 2, 3, 8, 10, 10}, "channels 00-03, 08 and 10"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14}, "channels 00, 02, 04, 06, 08, 10 and 2 more"},
	} {
		if got := channelList(tt.in); got != tt.want {
			t.Errorf("channelList(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
