package nccl

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

const noChannels = "no channel connection lines in the log; NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM prints them"

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
	verdict            string
	reasons            []string
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
				reasons:    []string{"8 of 8 connections used SHM; P2P is the direct path between GPUs of one node"},
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
				reasons:    []string{"8 of 8 connections used NET/Socket; sockets bypass RDMA"},
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
				findings: []Finding{{Level: "WARN", Source: "graph/xml.h:85", Text: "Attribute busid of node nic not found", Count: 1}},
				verdict:  VerdictUnknown, reasons: []string{noChannels},
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
					{Level: "WARN", Source: "transport/net_ib.cc:1296", Count: 1,
						Text: "NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)"},
					{Level: "ERROR", Source: "transport/net.cc:1134", Text: "transport/net.cc:1134 -> 6", Count: 1},
					{Level: "ERROR", Source: "proxy.cc:679", Text: "proxy.cc:679 -> 6", Count: 1},
					{Level: "ERROR", Source: "proxy.cc:858", Text: "proxy.cc:858 -> 6 [Proxy Thread]", Count: 1},
				},
				verdict: VerdictUnknown, reasons: []string{noChannels},
			},
		},
		{
			name: "the misdetected comm line counts 4 nodes of 2 local ranks",
			file: corpusDebug + "nccl2345-comm-line-nnodes4-localranks2-misdetected.txt",
			want: logWant{
				ranks: 8, nodes: 4, locl: 2, comms: 1,
				verdict: VerdictUnknown, reasons: []string{noChannels},
			},
		},
		{
			name: "the two-rail H200 log mixes 2 GDRDMA and 2 host-staged NET/IB connections",
			file: corpusDebug + "nccl2345-h200-roce-2rail-mixed-gdrdma-and-hostmem-far-nic.txt",
			want: logWant{
				ranks: 8, nodes: 2, locl: 4, comms: 1,
				transports: map[string]int{ClassNetIB: 2, ClassNetIBGDR: 2},
				verdict:    VerdictFallback,
				reasons: []string{
					"2 of 4 connections used NET/IB; without GDRDMA the data is staged through host memory",
					"2 of 4 connections used NET/IB/GDRDMA",
				},
			},
		},
		{
			name: "the gather table with interleaved NCCL lines shows 2 shared GDRDMA connections",
			file: corpusTests + "gather_perf-a100pcie-2node-gdr-dropoff-6GB.txt",
			want: logWant{
				gdrGPUs:    []GDRGPU{{GPU: "81000", HCA: "1", Enabled: true}},
				transports: map[string]int{ClassNetIBGDR: 2},
				verdict:    VerdictDirect, reasons: []string{"2 of 2 connections used NET/IB/GDRDMA"},
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
	if got.Ranks != w.ranks || got.Nodes != w.nodes || got.LocalRanks != w.locl || len(got.Comms) != w.comms {
		t.Errorf("ranks, nodes, local ranks, comms = %d %d %d %d, want %d %d %d %d",
			got.Ranks, got.Nodes, got.LocalRanks, len(got.Comms), w.ranks, w.nodes, w.locl, w.comms)
	}
	n := 0
	for _, c := range got.Transports {
		n += c
	}
	if n != len(got.Connections) {
		t.Errorf("transports count %d connections, the log has %d", n, len(got.Connections))
	}
	if got.Outcome != w.verdict {
		t.Errorf("verdict %q, want %q", got.Outcome, w.verdict)
	}
	sameOrEmpty(t, "reasons", w.reasons, got.Reasons)
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
		{Level: "WARN", Source: "net_ib.cc:9", Text: "NET/IB : Got completion from peer with error 12, opcode 0, len 0, vendor err 129 (Recv)", Count: 2},
		{Level: "WARN", Source: "init.cc:1", Text: "Cuda failure 'out of memory'", Count: 3},
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
	for _, file := range fixtureFiles(f, ".txt") {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/x(/0\n")
	f.Add("h:1:2 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/\n")
	f.Add("h:1:2 [0] NCCL WARN\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseLog(strings.NewReader(in))
		if err != nil {
			return
		}
		n := 0
		for _, c := range s.Transports {
			n += c
		}
		if n != len(s.Connections) {
			t.Errorf("transports count %d, connections %d", n, len(s.Connections))
		}
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
