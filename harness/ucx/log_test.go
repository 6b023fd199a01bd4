package ucx

import (
	"os"
	"strings"
	"testing"
)

// Hand-written in UCX_PROTO_INFO's format: cuda_ipc inside a node (the
// corpus's real cuda_ipc table, nixl1614, is inter-node over MNNVL), and
// UCX_TLS without cuda over tcp (no public table of it was found).
const ipcTable = `[1700000000.000001] [h:1 :0]   +--------------------------------+----------------------------------------------------+
[1700000000.000002] [h:1 :0]   | ucp_context_0 intra-node cfg#3 | tagged message by ucp_tag_send* from cuda/GPU0     |
[1700000000.000003] [h:1 :0]   +--------------------------------+------------------------------------+---------------+
[1700000000.000004] [h:1 :0]   |                         0..8K  | eager copy-in copy-out             | sysv/memory   |
[1700000000.000005] [h:1 :0]   |                       8193..inf | rendezvous zero-copy read from remote | cuda_ipc/cuda |
[1700000000.000006] [h:1 :0]   +--------------------------------+------------------------------------+---------------+
`

const tcpTable = `[1700000000.000001] [h:1 :0]   | ucp_context_0 inter-node cfg#2 | tagged message by ucp_tag_send* from cuda/GPU0 |
[1700000000.000002] [h:1 :0]   |                        0..inf | rendezvous fragmented copy-in copy-out | tcp/eth0 |
`

func TestParseLogClassifiesUCXPaths(t *testing.T) {
	read := func(t *testing.T, path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	corpus := "../../fixtures/corpus/ucx/"
	for _, c := range []struct {
		name, in, outcome, lastPath string
	}{
		{"rdma zero-copy (real)", read(t, corpus+"codeindex-perftest-inter-node-put-from-cuda-zero-copy-rc_mlx5.txt"), OutcomeDirect, PathRDMA},
		{"pipeline through host (real)", read(t, corpus+"ucxfaq-osu_bw-DD-ep_cfg3-cuda-rndv-pipeline-cuda_copy.txt"), OutcomeFallback, PathStaged},
		{"cuda_ipc", ipcTable, OutcomeDirect, PathIPC},
		{"tcp for cuda memory", tcpTable, OutcomeFallback, PathStaged},
		{"launcher prefix", "[1,0]<stdout>:" + strings.ReplaceAll(ipcTable, "\n[", "\n[1,0]<stdout>:["), OutcomeDirect, PathIPC},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseLog(strings.NewReader(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if s.Outcome != c.outcome {
				t.Errorf("outcome %q, want %q (%v)", s.Outcome, c.outcome, s.Reasons)
			}
			if n := len(s.Transfers); n == 0 || s.Transfers[n-1].Path != c.lastPath {
				t.Errorf("transfers %+v, want the last %s", s.Transfers, c.lastPath)
			}
		})
	}
}

func TestParseLogHostOnlyAndEndpointLinesAreNotJudged(t *testing.T) {
	s, err := ParseLog(strings.NewReader(read1("../../fixtures/corpus/ucx/nixl1097-ep-line-intra-node-tcp-lanes-cuda_ipc-am-only.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Outcome != OutcomeUnknown || len(s.EPConfigs) != 1 || s.EPConfigs[0].Config != "ucp_context_0 intra-node cfg#2" {
		t.Errorf("got %+v", s)
	}
	if _, err := ParseLog(strings.NewReader("hello\n")); err == nil {
		t.Error("a line that is not UCX's parsed")
	}
}

func read1(p string) string { b, _ := os.ReadFile(p); return string(b) }
