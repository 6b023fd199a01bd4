package main

import (
	"strings"
	"testing"
)

// The text heading names what the output says and no placeholder for what
// it does not: "-, NCCL -" read as a broken report (issue 23).
func TestAnalyzeHeadingLeavesOutWhatTheOutputDoesNotSay(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ tool, file, want string }{
		{"nccl-tests", "nccl-tests/nccl1706-table-tail-destroy-complete-footer.txt", "nccl-tests, NCCL version unknown\n"},
		{"nccl-tests", "nccl-tests/all_gather_perf-gke-a4-b200-2node-16rank.txt", "nccl-tests, NCCL 2.26.6\n"},
		{"nccl-log", "nccl-debug/nccl952-ib-no-device-p2p-ipc-read-net-socket.txt", "NCCL version unknown, network -: fallback\n"},
	} {
		r := gdrcheck(t, "analyze", tt.tool, corpusDir+tt.file)
		if !strings.HasPrefix(r.stdout, tt.want) || strings.Contains(r.stdout, "NCCL -") {
			t.Errorf("%s: heading %q, want %q", tt.file, strings.SplitN(r.stdout, "\n", 2)[0], tt.want)
		}
	}
}
