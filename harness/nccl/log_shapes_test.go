package nccl

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// How a parsed log is checked against its recording, and the line
// shapes ParseLog must classify (or ignore).

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
