package nccl

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSysfsBusIDReadsNCCLsIntegerForm(t *testing.T) {
	for in, want := range map[string]string{
		"18000":  "0000:18:00.0",
		"81000":  "0000:81:00.0", // the A100 PCIe corpus log
		"c7000":  "0000:c7:00.0",
		"901000": "0009:01:00.0", // GH200: the domain's digits run on
		"118001": "0001:18:00.1",
		"7000":   "0000:07:00.0",
	} {
		if got, ok := SysfsBusID(in); !ok || got != want {
			t.Errorf("SysfsBusID(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "zz", "0x18000", "-18000", "ffffffffffffffffff"} {
		if got, ok := SysfsBusID(bad); ok {
			t.Errorf("SysfsBusID(%q) = %q, want false", bad, got)
		}
	}
}

func parseLogFile(t *testing.T, path string) *LogSummary {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseLog(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// uses renders NICs as "host rank gpu net/dev nic conns [channels] pxn".
func uses(s *LogSummary) []string {
	var out []string
	for _, u := range s.NICs {
		l := fmt.Sprintf("%s %d %s %s/%d %s %d %v", u.Host, u.Rank, u.GPU, u.Net, u.Dev, u.NIC, u.Connections, u.Channels)
		if u.PXN {
			l += " pxn"
		}
		out = append(out, l)
	}
	return out
}

func TestNICUsesOfRecordedAndPublishedLogs(t *testing.T) {
	cases := []struct {
		name, file string
		want       []string
	}{
		{
			// A send line names the sender's NIC, a receive line the
			// receiver's: every rank on its own rail.
			name: "the healthy 8 x H100 run forced onto the network",
			file: recorded + "synthetic/all_reduce_perf-h100x8-nvswitch-cx7-p2p-shm-disabled.txt",
			want: []string{
				"h100-node 0 0000:18:00.0 IB/0 mlx5_0 4 [0 1]", "h100-node 1 0000:19:00.0 IB/1 mlx5_1 4 [0 1]",
				"h100-node 2 0000:38:00.0 IB/2 mlx5_2 4 [0 1]", "h100-node 3 0000:39:00.0 IB/3 mlx5_3 4 [0 1]",
				"h100-node 4 0000:98:00.0 IB/4 mlx5_4 4 [0 1]", "h100-node 5 0000:99:00.0 IB/5 mlx5_5 4 [0 1]",
				"h100-node 6 0000:b8:00.0 IB/6 mlx5_6 4 [0 1]", "h100-node 7 0000:b9:00.0 IB/7 mlx5_7 4 [0 1]",
			},
		},
		{
			name: "the variant whose GPU 3 goes through mlx5_6",
			file: recorded + "synthetic/all_reduce_perf-h100x8-nvswitch-cx7-p2p-shm-disabled-offrail.txt",
			want: []string{
				"h100-node 0 0000:18:00.0 IB/0 mlx5_0 4 [0 1]", "h100-node 1 0000:19:00.0 IB/1 mlx5_1 4 [0 1]",
				"h100-node 2 0000:38:00.0 IB/2 mlx5_2 4 [0 1]", "h100-node 3 0000:39:00.0 IB/6 mlx5_6 4 [0 1]",
				"h100-node 4 0000:98:00.0 IB/4 mlx5_4 4 [0 1]", "h100-node 5 0000:99:00.0 IB/5 mlx5_5 4 [0 1]",
				"h100-node 6 0000:b8:00.0 IB/6 mlx5_6 4 [0 1]", "h100-node 7 0000:b9:00.0 IB/7 mlx5_7 4 [0 1]",
			},
		},
		{
			// PXN: the last GPU of a node sends through the NIC of the
			// GPU on the receiver's rail; the second host printed no
			// NET/IB list, so the one list names its devices.
			name: "two nodes, rail 0 between them through PXN",
			file: recorded + "synthetic/all_reduce_perf-h100x8-nvswitch-cx7-n2-direct.txt",
			want: []string{"h100-node 0 0000:18:00.0 IB/0 mlx5_0 16 [0 1 2 3 4 5 6 7] pxn", "h100-node-2 8 0000:18:00.0 IB/0 mlx5_0 16 [0 1 2 3 4 5 6 7] pxn"},
		},
		{
			// NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_2:1/IB; rank 0 is
			// busId 81000; every connection via NET/IB/1.
			name: "the A100 PCIe init log (NVIDIA/nccl-tests#350)",
			file: corpusDebug + "a100pcie-2node-cx5-cx6-gdr-enabled-dmabuf-netgdrlevel-sys.txt",
			want: []string{"n013 0 0000:81:00.0 IB/1 mlx5_2 6 [0 1]"},
		},
		{
			// Before 2.18 the brackets hold bus ids and there is no
			// connIndex; the excerpt has no comm line and no NET list.
			name: "the A100 excerpt of NVIDIA/nccl#707",
			file: corpusDebug + "nccl707-a100-net-ib-gdrdma-channels.txt",
			want: []string{"10-90-43-152 0  IB/4  2 [2]", "10-90-43-152 0  IB/5  2 [1]", "10-90-43-152 1  IB/5  1 [1]",
				"10-90-43-152 2  IB/2  4 [1]", "10-90-43-152 3  IB/0  2 [2]", "10-90-43-152 3  IB/2  1 [1]"},
		},
		{
			name: "a plugin's net name (NVIDIA/nccl#1814)",
			file: corpusDebug + "nccl1814-ibext-v8-plugin-no-gdrdma.txt",
			want: []string{"hostname-test 34  IBext_v8/0  3 [0 2 4]", "hostname-test 35  IBext_v8/5  3 [10 12 14]",
				"hostname-test 38  IBext_v8/1  2 [2 4]", "hostname-test 39  IBext_v8/2  5 [0 2 4 6 8]"},
		},
		{
			name: "the far NIC on alternate channels (NVIDIA/nccl#2345)",
			file: corpusDebug + "nccl2345-h200-roce-2rail-mixed-gdrdma-and-hostmem-far-nic.txt",
			want: []string{"kg35-nvl03 0  IB/0  2 [0 2]", "kg35-nvl03 0  IB/1  2 [1 3]"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := parseLogFile(t, c.file)
			got := uses(s)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, want) {
				t.Errorf("NIC uses:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// The line shapes of net.cc (2.19 to 2.28): a PXN rank after the index,
// "(PCI)" after GDRDMA, "/Shared", the 2.19-2.20 comm suffix; per-process
// device lists; NCCL_IB_HCA as net_ib.cc echoes it.
func TestNICUsesFollowEachProcesssOwnList(t *testing.T) {
	log := strings.Join([]string{
		"n1:100:100 [0] NCCL INFO NCCL_IB_HCA set to =mlx5_0",
		"n1:100:100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>",
		"n1:200:200 [3] NCCL INFO NET/IB : Using [0]mlx5_3:1/IB [1]mlx5_bond_0:1/RoCE [RO]; OOB ib0:10.0.0.1<0>",
		"n1:200:200 [3] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
		"n1:100:100 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x5 - Init START",
		"n1:200:200 [3] NCCL INFO ncclCommInitRankConfig comm 0x2 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 39000 commId 0x5 - Init START",
		"n1:100:100 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/IB/0/GDRDMA",
		"n1:100:100 [0] NCCL INFO Channel 01/0 : 15[7] -> 0[0] [receive] via NET/IB/0/GDRDMA(PCI)/Shared",
		"n1:200:200 [3] NCCL INFO Channel 00/0 : 3[3] -> 11[3] [send] via NET/IB/0/GDRDMA comm 0x2 nRanks 16",
		"n1:200:200 [3] NCCL INFO Channel 02/0 : 2[2] -> 11[3] [send] via NET/IB/1(3)/GDRDMA",
		"n1:200:200 [3] NCCL INFO Channel 03/0 : 3[3] -> 11[3] [send] via NET/Socket/0",
		"n1:200:200 [3] NCCL INFO Channel 04/0 : 3[3] -> 4[4] via P2P/IPC",
		"n1:200:200 [3] NCCL INFO CollNet 05/0 : 3 [send] via COLLNET/IB/0/GDRDMA",
	}, "\n") + "\n"
	s := parseLogText(t, log)
	want := []string{"n1 0 0000:18:00.0 IB/0 mlx5_0 2 [0 1]", "n1 3 0000:39:00.0 IB/0 mlx5_3 1 [0]", "n1 3 0000:39:00.0 IB/1 mlx5_bond_0 1 [2] pxn"}
	if got := uses(s); !slices.Equal(got, want) {
		t.Errorf("NIC uses:\n got %q\nwant %q", got, want)
	}
	if s.Env["NCCL_IB_HCA"] != "=mlx5_0" {
		t.Errorf("NCCL_IB_HCA = %q, want the echoed =mlx5_0", s.Env["NCCL_IB_HCA"])
	}
}

func TestNICUsesLeaveAGPUUnnamedWhereTheLogDisagrees(t *testing.T) {
	log := strings.Join([]string{
		"n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB",
		"n1:2:2 [0] NCCL INFO NET/IB : Using [0]mlx5_4:1/IB",
		// Rank 0 of two communicators on two GPUs of n1.
		"n1:1:1 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE",
		"n1:1:1 [0] NCCL INFO comm 0xb rank 0 nranks 2 cudaDev 4 busId 98000 - Init COMPLETE",
		// Rank 1 on another host.
		"n2:3:3 [0] NCCL INFO comm 0xc rank 1 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE",
		"n1:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0",
		// n2 printed no list, and the two of n1 name index 0 apart.
		"n2:3:3 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/IB/0",
	}, "\n") + "\n"
	want := []string{"n1 0  IB/0 mlx5_0 1 [0]", "n2 1 0000:18:00.0 IB/0  1 [0]"}
	if got := uses(parseLogText(t, log)); !slices.Equal(got, want) {
		t.Errorf("NIC uses:\n got %q\nwant %q", got, want)
	}
}

func TestNICUsesStayBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n")
	for r := 0; r < maxNICUses+10; r++ {
		fmt.Fprintf(&b, "h:1:1 [0] NCCL INFO Channel 00/0 : %d[0] -> %d[0] [receive] via NET/IB/0\n", r+1, r)
	}
	s := parseLogText(t, b.String())
	if len(s.NICs) != maxNICUses || s.NICUsesOmitted != 10 {
		t.Errorf("%d uses, %d omitted; want %d and 10", len(s.NICs), s.NICUsesOmitted, maxNICUses)
	}
}
