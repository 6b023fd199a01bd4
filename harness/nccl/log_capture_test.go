package nccl

import (
	"slices"
	"strings"
	"testing"
)

// Logs as issue 23 found them captured: pre-2.5 Ring lines, launcher
// prefixes, and the hints NCCL and aws-ofi-nccl print. The lines follow
// the corpus files (fixtures/corpus/nccl-debug, sources in its INDEX.md).

func parseLogText(t *testing.T, in string) *LogSummary {
	t.Helper()
	s, err := ParseLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hintKinds(s *LogSummary) []string {
	var k []string
	for _, h := range s.Hints {
		k = append(k, h.Kind)
	}
	slices.Sort(k)
	return k
}

// Before 2.5 NCCL printed "Ring NN : a -> b [send|receive] via NET/IB/0":
// a network ring without /GDRDMA staged through host memory, a fallback
// (exit 1), and one with it is the direct path.
func TestParseLogJudgesNCCL24RingLines(t *testing.T) {
	const head = "h1:1:1 [0] NCCL INFO NCCL version 2.4.8+cuda10.1\n"
	staged := parseLogText(t, head+
		"h1:1:2 [0] NCCL INFO Ring 00 : 7[1] -> 0[0] via P2P/IPC\n"+
		"h1:1:2 [0] NCCL INFO Ring 00 : 6 -> 2 [receive] via NET/IB/0\n"+
		"h2:2:2 [0] NCCL INFO Ring 00 : 2 -> 6 [send] via NET/IB/0\n")
	if staged.NCCLVersion != "2.4.8" || staged.Transports[ClassNetIB] != 2 || staged.Transports["P2P/IPC"] != 1 {
		t.Fatalf("transports %v, version %q", staged.Transports, staged.NCCLVersion)
	}
	if staged.Outcome != VerdictFallback || len(staged.Reasons) == 0 || !strings.Contains(staged.Reasons[0], "NET/IB without GDRDMA") {
		t.Errorf("host-staged 2.4 ring: verdict %q, reasons %q; want a fallback through host memory", staged.Outcome, staged.Reasons)
	}
	gdr := parseLogText(t, head+
		"h1:1:2 [0] NCCL INFO Ring 00 : 6 -> 2 [receive] via NET/IB/0/GDRDMA\n"+
		"h2:2:2 [0] NCCL INFO Ring 00 : 2 -> 6 [send] via NET/IB/0/GDRDMA\n")
	if gdr.Outcome != VerdictDirect {
		t.Errorf("GDRDMA 2.4 ring: verdict %q, reasons %q; want direct", gdr.Outcome, gdr.Reasons)
	}
}

// A log captured through mpirun --tag-output reads like the plain one and
// says which prefix it had.
func TestParseLogStripsALauncherPrefix(t *testing.T) {
	s := parseLogText(t, "[1,0]<stdout>:h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"+
		"[1,1]<stdout>:h2:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA\n")
	if s.Prefix != "mpirun" || s.Transports[ClassNetIB+"/GDRDMA"]+s.Transports[ClassNetIB] != 2 || s.Outcome != VerdictDirect {
		t.Errorf("prefix %q, transports %v, verdict %q", s.Prefix, s.Transports, s.Outcome)
	}
}

func TestParseLogHintsAtAGPUTooFarFromItsNIC(t *testing.T) {
	for _, line := range []string{
		"h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 42000 / HCA 0 (distance 6 > 4)\n",          // 2.5+
		"h:1:2 [2] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)\n", // 2.4
	} {
		s := parseLogText(t, line+line) // a second rank: one hint
		if len(s.Hints) != 1 || s.Hints[0].Kind != HintGDRDistance || s.Hints[0].Line != 1 || !strings.Contains(s.Hints[0].Advice, "NCCL_NET_GDR_LEVEL") {
			t.Errorf("%q: hints %+v", line, s.Hints)
		}
	}
	if s := parseLogText(t, "h:1:2 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 81000 / HCA 1 (distance 6 <= 7)\n"); len(s.Hints) != 0 {
		t.Errorf("an enabled GPU gives hints %+v", s.Hints)
	}
}

func TestParseLogHintsWhenAWSOFINCCLDisablesGDR(t *testing.T) {
	for _, line := range []string{
		"h:84:2553 [0] platform_config_endpoint:626 NCCL WARN NET/OFI GDR disabled on GDR-supported instance type p4d.24xlarge\n",
		"h:84:2553 [0] NCCL INFO NET/OFI Libfabric provider does not support FI_HMEM, disabling GDR\n",
	} {
		if got := hintKinds(parseLogText(t, line)); !slices.Equal(got, []string{HintOFIGDRDisabled}) {
			t.Errorf("%q: hints %v", line, got)
		}
	}
	if got := hintKinds(parseLogText(t, "h:84:2553 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\n")); len(got) != 0 {
		t.Errorf("a plain OFI line gives hints %v", got)
	}
}

// "NET/IB : No device found." matters when NCCL then took sockets as its
// network and the job needed a network; see finishHints.
func TestParseLogHintsAtNoRDMADeviceOnlyWhenSocketsWereTheNetwork(t *testing.T) {
	const noDev = "h1:1:1 [0] NCCL INFO NET/IB : No device found.\n"
	const socket = "h1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
	for _, tt := range []struct {
		name, log string
		hint      bool
	}{
		{"socket connections", noDev + socket + "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n", true},
		{"socket chosen, no connection lines yet", noDev + socket, true},
		{"2.12+ names the network", noDev + "h1:1:1 [0] NCCL INFO Using network Socket\n", true},
		{"one rank needs no network", noDev + socket + "h1:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 18000 - Init COMPLETE\n", false},
		{"intra-node connections only", noDev + socket + "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n", false},
		{"a plugin was the network", noDev + "h1:1:1 [0] NCCL INFO Using network AWS Libfabric\n", false},
		{"sockets with an RDMA device", socket + "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n", false},
	} {
		s := parseLogText(t, tt.log)
		got := slices.Contains(hintKinds(s), HintNoRDMADevice)
		if got != tt.hint {
			t.Errorf("%s: no-rdma-device hint %v, want %v (hints %+v)", tt.name, got, tt.hint, s.Hints)
		}
		if got && (s.Hints[0].Line != 1 || s.Hints[0].Text != "NET/IB : No device found.") {
			t.Errorf("%s: hint %+v, want the line 1 text", tt.name, s.Hints[0])
		}
	}
}
