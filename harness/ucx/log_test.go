package ucx

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// IPCTable is written by hand in UCX_PROTO_INFO's format (no public
// excerpt of a tagged cuda_ipc table inside a node was found; the corpus's
// real cuda_ipc table, nixl1614, is inter-node over MNNVL).
const IPCTable = `[1700000000.000001] [h:1 :0]   +--------------------------------+----------------------------------------------------+
[1700000000.000002] [h:1 :0]   | ucp_context_0 intra-node cfg#3 | tagged message by ucp_tag_send* from cuda/GPU0     |
[1700000000.000003] [h:1 :0]   +--------------------------------+------------------------------------+---------------+
[1700000000.000004] [h:1 :0]   |                         0..8K  | eager copy-in copy-out             | sysv/memory   |
[1700000000.000005] [h:1 :0]   |                       8193..inf | rendezvous zero-copy read from remote | cuda_ipc/cuda |
[1700000000.000006] [h:1 :0]   +--------------------------------+------------------------------------+---------------+
`

// Each table becomes one transfer holding its largest sizes' protocol and
// lanes, whether it moves GPU memory, and its peer class, through UCX's
// and a launcher's prefixes.
func TestParseLogReadsEachTablesBulkProtocol(t *testing.T) {
	corpus := "../../fixtures/corpus/ucx/"
	for _, c := range []struct {
		name, in                         string
		n                                int
		peer, protocol, lanes, rng, line string
		gpu                              bool
	}{
		{"rdma zero-copy (real)", read1(corpus + "codeindex-perftest-inter-node-put-from-cuda-zero-copy-rc_mlx5.txt"), 2, "inter-node", "zero-copy", "rc_mlx5/mlx5_0:1", "1..inf", "", true},
		{"pipeline through host (real)", read1(corpus + "ucxfaq-osu_bw-DD-ep_cfg3-cuda-rndv-pipeline-cuda_copy.txt"), 2, "", "(?) rendezvous pipeline cuda_copy, fenced write to remote, cuda", "rc_mlx5/mlx5_0:1", "811556..inf", "", true},
		{"cuda_ipc", IPCTable, 1, "intra-node", "rendezvous zero-copy read from remote", "cuda_ipc/cuda", "8193..inf", "", true},
		{"launcher prefix", "[1,0]<stdout>:" + strings.ReplaceAll(IPCTable, "\n[", "\n[1,0]<stdout>:["), 1, "intra-node", "rendezvous zero-copy read from remote", "cuda_ipc/cuda", "8193..inf", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseLog(strings.NewReader(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Transfers) != c.n {
				t.Fatalf("%d transfers, want %d: %+v", len(s.Transfers), c.n, s.Transfers)
			}
			x := s.Transfers[c.n-1]
			if x.Peer != c.peer || x.Protocol != c.protocol || x.Lanes != c.lanes || x.Range != c.rng || x.GPU != c.gpu {
				t.Errorf("last transfer %+v", x)
			}
			if s.Info != nil {
				t.Errorf("no ucx_info lines, got %+v", s.Info)
			}
		})
	}
}

func TestParseLogEndpointLinesAndNoData(t *testing.T) {
	s, err := ParseLog(strings.NewReader(read1("../../fixtures/corpus/ucx/nixl1097-ep-line-intra-node-tcp-lanes-cuda_ipc-am-only.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Transfers) != 0 || len(s.EPConfigs) != 1 || s.EPConfigs[0].Config != "ucp_context_0 intra-node cfg#2" {
		t.Errorf("got %+v", s)
	}
	if _, err := ParseLog(strings.NewReader("hello\n")); err == nil {
		t.Error("a line that is not UCX's parsed")
	}
}

func read1(p string) string { b, _ := os.ReadFile(p); return string(b) }

// A process that opens table after table (a log of many runs) is in the
// open-table order once, not once per table: that order is walked each
// time it outgrows twice maxOpen.
func TestTablesOfOneProcessKeepTheOpenOrderBounded(t *testing.T) {
	p := &logReader{s: &LogSummary{}, open: map[string]*Transfer{}}
	for i := range 5 * maxOpen {
		p.flush("h:1")
		p.opened("h:1", &Transfer{Line: i})
	}
	if len(p.order) > 2*maxOpen {
		t.Errorf("%d entries in the open order for one open table", len(p.order))
	}
	// Control: many processes each with a table open are all kept.
	p = &logReader{s: &LogSummary{}, open: map[string]*Transfer{}}
	for i := range maxOpen - 1 {
		p.opened(fmt.Sprintf("h:%d", i), &Transfer{Line: i})
	}
	if len(p.order) != maxOpen-1 || len(p.open) != maxOpen-1 {
		t.Errorf("%d in order, %d open, want %d", len(p.order), len(p.open), maxOpen-1)
	}
}
