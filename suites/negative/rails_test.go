package negative

import (
	"os"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

const synthetic = "../../fixtures/nccl-tests/synthetic/"

// h100 is the recorded-shape 8 x H100 node: GPU i's rail is mlx5_i (PIX),
// GPUs 0 and 1 share a switch with mlx5_0 and mlx5_1, mlx5_2 and mlx5_3
// are NODE from GPU 0, mlx5_4 to mlx5_7 SYS.
func h100(t *testing.T) *node.Evidence {
	t.Helper()
	dir := t.TempDir()
	if _, err := nodetest.Named(t, "h100x8-nvswitch-cx7-pix")(dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return node.Collect(h, node.DefaultSources(h))
}

func parsed(t *testing.T, file string) *nccl.LogSummary {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := nccl.ParseLog(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJudgeRailsOnTheRecordedRuns(t *testing.T) {
	ev := h100(t)
	ok := judgeRails(parsed(t, synthetic+"all_reduce_perf-h100x8-nvswitch-cx7-p2p-shm-disabled.txt"), ev)
	if len(ok.bad) != 0 || ok.judged != 8 || ok.unplaced != 0 {
		t.Errorf("healthy run: bad %q, judged %d, unplaced %d; want none, 8, 0", ok.bad, ok.judged, ok.unplaced)
	}
	if !strings.Contains(strings.Join(ok.notes, "\n"), "GPU 3 0000:39:00.0: 4 connection(s) (channels 00 and 01) through its rail NIC mlx5_3 (PIX)") {
		t.Errorf("healthy run notes %q lack GPU 3 on its rail", ok.notes)
	}

	off := judgeRails(parsed(t, synthetic+"all_reduce_perf-h100x8-nvswitch-cx7-p2p-shm-disabled-offrail.txt"), ev)
	want := "GPU 3 0000:39:00.0 sent 4 connection(s) (channels 00 and 01) through mlx5_6 (SYS from it), not its rail NIC mlx5_3 (PIX): " +
		"NCCL_TOPO_FILE=/etc/nccl/topo-ndv5.xml tells NCCL another wiring than this node's"
	if len(off.bad) != 1 || !strings.HasPrefix(off.bad[0], want) || off.judged != 8 {
		t.Errorf("off-rail run: bad %q (judged %d), want one finding starting %q", off.bad, off.judged, want)
	}
}

// use is one GPU's connections through one NIC, as ParseLog reports them.
func use(rank int, gpu, nic string) nccl.NICUse {
	return nccl.NICUse{Host: "h100-node", Rank: rank, GPU: gpu, Net: "IB", NIC: nic, Connections: 2, Channels: []int{0, 1}}
}

func TestJudgeRailsNamesTheCauseAndSparesWhatIsNot(t *testing.T) {
	ev := h100(t)
	cases := []struct {
		name     string
		env      map[string]string
		uses     []nccl.NICUse
		bad      string // the finding's start; "" for none
		note     string
		unplaced int
	}{
		{"a NIC as close as the rail: GPU 0 through mlx5_1 under its switch", nil,
			[]nccl.NICUse{use(0, "0000:18:00.0", "mlx5_1")}, "",
			"GPU 0 0000:18:00.0: 2 connection(s) (channels 00 and 01) through mlx5_1, as close to it as its rail NIC mlx5_0 (PIX)", 0},
		{"a prefix-matching NCCL_IB_HCA puts GPU 4 on mlx5_0", map[string]string{"NCCL_IB_HCA": "mlx5"},
			[]nccl.NICUse{use(4, "0000:98:00.0", "mlx5_0")},
			"GPU 4 0000:98:00.0 sent 2 connection(s) (channels 00 and 01) through mlx5_0 (SYS from it), not its rail NIC mlx5_4 (PIX): NCCL_IB_HCA=mlx5: without a leading \"=\" each name matches by prefix (mlx5 also matches mlx5_bond_0), or it leaves NCCL the wrong NICs; name each rail NIC exactly: NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7", "", 0},
		{"an exact but wrong NCCL_IB_HCA", map[string]string{"NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_2"},
			[]nccl.NICUse{use(2, "0000:38:00.0", "mlx5_2"), use(3, "0000:39:00.0", "mlx5_1")},
			"GPU 3 0000:39:00.0 sent 2 connection(s) (channels 00 and 01) through mlx5_1 (NODE from it), not its rail NIC mlx5_3 (PIX): NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2: it leaves NCCL the wrong NICs", "", 0},
		{"a NIC the node does not list", nil,
			[]nccl.NICUse{use(5, "0000:99:00.0", "mlx5_bond_0")},
			"GPU 5 0000:99:00.0 sent 2 connection(s) (channels 00 and 01) through mlx5_bond_0 (a NIC this node's evidence does not list), not its rail NIC mlx5_5 (PIX): NCCL chose it with neither NCCL_IB_HCA nor NCCL_TOPO_FILE echoed", "", 0},
		{"NCCL_CROSS_NIC=1: a note, not a finding", map[string]string{"NCCL_CROSS_NIC": "1"},
			[]nccl.NICUse{use(4, "0000:98:00.0", "mlx5_0")}, "",
			"NCCL_CROSS_NIC=1 lets NCCL cross rails, so not judged", 0},
		{"NCCL_CROSS_NIC=2, NCCL's default, is judged", map[string]string{"NCCL_CROSS_NIC": "2"},
			[]nccl.NICUse{use(4, "0000:98:00.0", "mlx5_0")}, "GPU 4 0000:98:00.0 sent", "", 0},
		{"a rank the log ties to no GPU, and one to a GPU not on this node", nil,
			[]nccl.NICUse{use(0, "", "mlx5_4"), use(1, "0000:07:00.0", "mlx5_4")}, "",
			"4 network connection(s) not judged", 4},
		{"an index no device list names", nil,
			[]nccl.NICUse{use(0, "0000:18:00.0", "")}, "", "2 network connection(s) not judged", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := judgeRails(&nccl.LogSummary{Env: c.env, NICs: c.uses}, ev)
			switch {
			case c.bad == "" && len(r.bad) != 0:
				t.Errorf("findings %q, want none", r.bad)
			case c.bad != "" && (len(r.bad) != 1 || !strings.HasPrefix(r.bad[0], c.bad)):
				t.Errorf("findings %q, want one starting %q", r.bad, c.bad)
			}
			if c.note != "" && !strings.Contains(strings.Join(r.notes, "\n"), c.note) {
				t.Errorf("notes %q lack %q", r.notes, c.note)
			}
			if r.unplaced != c.unplaced {
				t.Errorf("unplaced %d, want %d", r.unplaced, c.unplaced)
			}
		})
	}
}
