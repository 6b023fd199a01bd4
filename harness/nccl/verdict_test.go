package nccl

import (
	"strings"
	"testing"
)

func TestVerdictJudgesTheFixturesAgainstWhatTheTopologyExpects(t *testing.T) {
	nvlinkPair := Expectation{P2P: ExpectYes, Nodes: 1}
	tests := []struct {
		name string
		file string
		exp  Expectation
		want Verdict
	}{
		{
			name: "P2P/direct between NVLink peers is direct",
			file: recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt",
			exp:  nvlinkPair,
			want: Verdict{VerdictDirect, []string{"48 of 48 connections used P2P/direct"}},
		},
		{
			name: "SHM between NVLink peers is a fallback",
			file: recorded + "all_reduce_perf-h200x2-nv18-p2p-disabled-shm.txt",
			exp:  nvlinkPair,
			want: Verdict{VerdictFallback, []string{"8 of 8 connections used SHM (channels 00-03, ranks 1 -> 0 and 0 -> 1 via SHM/direct/direct on vm); P2P was expected between NVLink peers"}},
		},
		{
			name: "SHM between GPUs that cannot do P2P is direct",
			file: recorded + "all_reduce_perf-h200x2-nv18-p2p-disabled-shm.txt",
			exp:  Expectation{P2P: ExpectNo},
			want: Verdict{VerdictDirect, []string{"8 of 8 connections used SHM; P2P was not expected between these GPUs"}},
		},
		{
			name: "sockets inside one node are a fallback, and NCCL splitting the node is named",
			file: recorded + "all_reduce_perf-h200x2-nv18-p2p-shm-disabled-socket.txt",
			exp:  nvlinkPair,
			want: Verdict{VerdictFallback, []string{
				"8 of 8 connections used NET/Socket (channels 00 and 01, ranks 0 -> 1 and 1 -> 0 via NET/Socket/0 on vm); sockets bypass RDMA",
				"NCCL counted 2 nodes; the job has 1",
			}},
		},
		{
			name: "sockets are a fallback even where GDR is not expected",
			file: recorded + "all_reduce_perf-h200x2-nv18-p2p-shm-disabled-socket.txt",
			exp:  Expectation{GDR: ExpectNo},
			want: Verdict{VerdictFallback, []string{"8 of 8 connections used NET/Socket (channels 00 and 01, ranks 0 -> 1 and 1 -> 0 via NET/Socket/0 on vm); sockets bypass RDMA"}},
		},
		{
			name: "GDRDMA on a PIX NIC is direct",
			file: corpusDebug + "a100pcie-2node-cx5-cx6-gdr-enabled-dmabuf-netgdrlevel-sys.txt",
			exp:  Expectation{GDR: ExpectYes, Nodes: 2},
			want: Verdict{VerdictDirect, []string{"6 of 6 connections used NET/IB/GDRDMA"}},
		},
		{
			name: "host-staged far-NIC channels are a fallback where GDR is expected",
			file: corpusDebug + "nccl2345-h200-roce-2rail-mixed-gdrdma-and-hostmem-far-nic.txt",
			exp:  Expectation{P2P: ExpectYes, GDR: ExpectYes, Nodes: 2},
			want: Verdict{VerdictFallback, []string{
				"2 of 4 connections used NET/IB without GDRDMA (channels 01 and 03, rank 7 -> 0 via NET/IB/1 on kg35-nvl03); GDRDMA was expected (GPU has a PIX/PXB NIC)",
				"2 of 4 connections used NET/IB/GDRDMA",
			}},
		},
		{
			name: "host-staged channels are direct where the NIC sits across the CPU",
			file: corpusDebug + "nccl2345-h200-roce-2rail-mixed-gdrdma-and-hostmem-far-nic.txt",
			exp:  Expectation{GDR: ExpectNo, Nodes: 2},
			want: Verdict{VerdictDirect, []string{
				"2 of 4 connections used NET/IB without GDRDMA; GDRDMA was not expected (no PIX/PXB NIC)",
				"2 of 4 connections used NET/IB/GDRDMA",
			}},
		},
		{
			name: "a comm line counting 4 nodes on 2 hosts is a fallback without any channel line",
			file: corpusDebug + "nccl2345-comm-line-nnodes4-localranks2-misdetected.txt",
			exp:  Expectation{P2P: ExpectYes, Nodes: 2},
			want: Verdict{VerdictFallback, []string{"NCCL counted 4 nodes; the job has 2"}},
		},
		{
			name: "a comm line alone is unknown offline",
			file: corpusDebug + "nccl2345-comm-line-nnodes4-localranks2-misdetected.txt",
			want: Verdict{VerdictUnknown, []string{noChannels}},
		},
		{
			name: "an IB error log without channel lines is unknown",
			file: corpusDebug + "mlengineering-azure-2node-net-ib-ib+roce-completion-error12-vendor129.txt",
			exp:  Expectation{GDR: ExpectYes},
			want: Verdict{VerdictUnknown, []string{noChannels}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseLog(openFixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(tt.want, s.Verdict(tt.exp)); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestVerdictJudgesCollNetByItsGDRDMAMark(t *testing.T) {
	in := `h:1:2 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/IBext/0/GDRDMA
h:1:2 [0] NCCL INFO CollNet 00/0 : 0 [receive] via COLLNET/IBext/0
h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
`
	s, err := ParseLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Verdict{VerdictFallback, []string{
		"1 of 3 connections used CollNet without GDRDMA (channel 00, rank 0 via COLLNET/IBext/0 on h); the data is staged through host memory",
		"1 of 3 connections used CollNet",
		"1 of 3 connections used P2P/CUMEM",
	}}
	if d := diff(want, s.Verdict(Expectation{})); d != "" {
		t.Error(d)
	}
	if s.Transports[ClassCollNet] != 2 {
		t.Errorf("transports %v, want 2 CollNet", s.Transports)
	}
}

func TestVerdictOfASummaryBuiltFromConnectionsAlone(t *testing.T) {
	s := &LogSummary{Connections: []Connection{
		{Host: "a", Channel: 0, Index: 0, From: 0, To: 8, Dir: "send", Via: "NET/IB/0/GDRDMA", Class: ClassNetIBGDR, GDR: true},
		{Host: "a", Channel: 1, Index: 0, From: 0, To: 8, Dir: "send", Via: "NET/IB/3", Class: ClassNetIB},
		{Host: "b", Channel: 1, Index: 0, From: 8, To: 0, Dir: "receive", Via: "NET/IB/3", Class: ClassNetIB},
	}}
	want := Verdict{VerdictFallback, []string{
		"2 of 3 connections used NET/IB without GDRDMA (channel 01, rank 0 -> 8 via NET/IB/3 on a, rank 8 -> 0 via NET/IB/3 on b); GDRDMA was expected (GPU has a PIX/PXB NIC)",
		"1 of 3 connections used NET/IB/GDRDMA",
	}}
	if d := diff(want, s.Verdict(Expectation{GDR: ExpectYes})); d != "" {
		t.Error(d)
	}
}
