package mpi

import (
	"os"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
)

// Hand-written in UCX_PROTO_INFO's format (no public excerpt of these two
// was found): cuda_ipc inside a node, and UCX_TLS without cuda over tcp.
const ipcTable = `[1700000000.000001] [h:1 :0]   | ucp_context_0 intra-node cfg#3 | tagged message by ucp_tag_send* from cuda/GPU0     |
[1700000000.000005] [h:1 :0]   |                       8193..inf | rendezvous zero-copy read from remote | cuda_ipc/cuda |
`

const tcpTable = `[1700000000.000001] [h:1 :0]   | ucp_context_0 inter-node cfg#2 | tagged message by ucp_tag_send* from cuda/GPU0 |
[1700000000.000002] [h:1 :0]   |                        0..inf | rendezvous fragmented copy-in copy-out | tcp/eth0 |
`

func judge1(t *testing.T, in string, info *ucx.Info) LogVerdict {
	t.Helper()
	s, err := ucx.ParseLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	return JudgeLog(s, info)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const corpus = "../../fixtures/corpus/ucx/"

func TestJudgeLogClassifiesUCXPaths(t *testing.T) {
	for _, c := range []struct {
		name, in, outcome, lastPath string
	}{
		{"rdma zero-copy (real)", read(t, corpus+"codeindex-perftest-inter-node-put-from-cuda-zero-copy-rc_mlx5.txt"), OutcomeDirect, PathRDMA},
		{"pipeline through host (real)", read(t, corpus+"ucxfaq-osu_bw-DD-ep_cfg3-cuda-rndv-pipeline-cuda_copy.txt"), OutcomeFallback, PathStaged},
		// UCX 1.16 names the staged rendezvous by its cuda_copy steps,
		// without the word pipeline.
		{"rendezvous through cuda_copy (real)", read(t, corpus+"ucx9908-perftest-tag_bw-cuda-rndv-cuda_copy-fenced-write-gdr-disabled.txt"), OutcomeFallback, PathStaged},
		{"cuda_ipc", ipcTable, OutcomeDirect, PathIPC},
		{"tcp for cuda memory", tcpTable, OutcomeFallback, PathStaged},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := judge1(t, c.in, nil)
			if v.Outcome != c.outcome {
				t.Errorf("outcome %q, want %q (%v)", v.Outcome, c.outcome, v.Reasons)
			}
			if n := len(v.Transfers); n == 0 || v.Transfers[n-1].Path != c.lastPath {
				t.Errorf("transfers %+v, want the last %s", v.Transfers, c.lastPath)
			}
		})
	}
	if v := judge1(t, read(t, corpus+"nixl1097-ep-line-intra-node-tcp-lanes-cuda_ipc-am-only.txt"), nil); v.Outcome != OutcomeUnknown {
		t.Errorf("endpoint line only: %+v", v)
	}
}

// The node's ucx_info -d says why a staged transfer's NIC could not carry
// GPU memory: the real UCX 1.16 listing of openucx/ucx#9908, whose mlx5_0
// registers host memory only, behind that staged tag_bw run.
func TestJudgeLogNamesTheNICThatRegistersNoGPUMemory(t *testing.T) {
	info := ucx.ParseInfo(read(t, corpus+"ucx9908-ucx_info-d-mlx5-host-memory-only-excerpt.txt"))
	v := judge1(t, read(t, corpus+"ucx9908-perftest-tag_bw-cuda-rndv-cuda_copy-fenced-write-gdr-disabled.txt"), &info)
	hint := strings.Join(v.Hints, "\n")
	if v.Outcome != OutcomeFallback || !strings.Contains(hint, "memory domain mlx5_0 registers host memory only, no cuda") {
		t.Errorf("got %s:\n%s", v.Outcome, hint)
	}
	// Without the listing the verdict is the same, with no hint.
	if v2 := judge1(t, read(t, corpus+"ucx9908-perftest-tag_bw-cuda-rndv-cuda_copy-fenced-write-gdr-disabled.txt"), nil); v2.Outcome != OutcomeFallback || len(v2.Hints) > 0 {
		t.Errorf("without a listing: %+v", v2)
	}
}
