package analyze

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/results"
)

// Each WARN is the text NCCL printed in a public log (docs/reference.md,
// "NCCL WARN lines", cites them); a benign one is its control.
var warnCases = []struct {
	src, text, kind string // kind "" for a WARN that is not fatal
}{
	{"https://github.com/NVIDIA/nccl/issues/1405", "NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f", WarnCompletion},
	{"https://github.com/NVIDIA/nccl/issues/1664", "NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 len=32696 vendor err 129 (Send)", WarnCompletion},
	{"https://github.com/NVIDIA/nccl/issues/902", "NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129", WarnCompletion},
	{"https://github.com/NVIDIA/nccl/issues/1235", "Cuda failure 'out of memory'", WarnCuda},
	{"https://github.com/NVIDIA/nccl/issues/1029", "Cuda failure 'initialization error'", WarnCuda},
	{"https://github.com/deepseek-ai/DeepEP/issues/143", "Call to ibv_create_cq failed with error Cannot allocate memory", WarnVerbs},
	{"https://github.com/NVIDIA/nccl/pull/1618", "socketPollConnect poll() failed, ret 1, error Connection timed out, revents 8, connect to 172.16.30.229:39953", WarnTimeout},
	{"https://github.com/NVIDIA/nccl-tests/issues/166", "socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort", WarnAbort},
	{"https://github.com/NVIDIA/nccl-tests/issues/166", "socketProgress: Connection closed by remote peer node1<57557>", WarnAbort},
	// Benign: NCCL goes on after each.
	{"https://github.com/AlizeeChen11/azurehpc-health-checks (customTests/debugging-test-failure.md)", "Attribute busid of node nic not found", ""},
	{"https://github.com/google/nccl-fastsocket/issues/4", "Cannot get incoming CPU.", ""},
	{"https://github.com/google/nccl-fastsocket/issues/4", "Maximum retry reached for accept 3.", ""},
	{"https://github.com/google/nccl-fastsocket/issues/4", "Maximum retry reached for connect 3.", ""},
}

func TestFatalWarnNamesEachKindAndLeavesBenignOnes(t *testing.T) {
	for _, c := range warnCases {
		kind, meaning, ok := FatalWarn(c.text)
		if kind != c.kind || ok != (c.kind != "") || ok && meaning == "" {
			t.Errorf("%s: %q: kind %q ok %v, want %q", c.src, c.text, kind, ok, c.kind)
		}
	}
	// A WARN no rule names is not fatal by itself (the channels decide).
	if _, _, ok := FatalWarn("Failed to open libibverbs.so[.1]"); ok {
		t.Error("libibverbs WARN called fatal")
	}
}

// A fatal WARN fails a log whose channels were direct, with no error
// trace (NCCL_DEBUG=WARN) and without Init COMPLETE; a benign one does
// not.
func TestAFatalWarnFailsEvenAfterDirectChannels(t *testing.T) {
	direct := "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n" +
		"h1:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
	whole := direct + "h1:1:2 [0] NCCL INFO ncclCommInitRank comm 0x55e0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x7a1 - Init COMPLETE\n" +
		"h1:1:1 [0] NCCL INFO comm 0x55e0 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE\n"
	judge := func(in string) (int, string) {
		t.Helper()
		s, err := nccl.ParseLog(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		return Log(s)
	}
	for _, c := range warnCases {
		warn := "\nh1:1:3 [0] transport/net_ib.cc:1296 NCCL WARN " + c.text + "\n"
		code, why := judge(direct + warn + whole[len(direct):])
		if c.kind == "" {
			if code != results.ExitPassed {
				t.Errorf("%s: benign %q: exit %d (%s), want 0", c.src, c.text, code, why)
			}
			continue
		}
		if code != results.ExitFailed || !strings.Contains(why, "NCCL failed: ") {
			t.Errorf("%s: %q after Init COMPLETE: exit %d (%s), want 1", c.src, c.text, code, why)
		}
		if code, why := judge(direct + warn); code != results.ExitFailed {
			t.Errorf("%s: %q without Init COMPLETE: exit %d (%s), want 1", c.src, c.text, code, why)
		}
	}
	// Controls: the direct channels of a whole run pass; cut before
	// Init COMPLETE they cannot be judged.
	if code, why := judge(whole); code != results.ExitPassed {
		t.Errorf("a whole direct run: exit %d (%s)", code, why)
	}
	if code, why := judge(direct); code != results.ExitUnevaluable {
		t.Errorf("direct channels without Init COMPLETE: exit %d (%s)", code, why)
	}
}
