package mpi

import (
	"strings"
	"testing"
)

// The real H200 captures (UCX 1.20.1, ucx_perftest -t tag_bw -m cuda -s
// 4194304, README in fixtures/corpus/INDEX.md): cuda_ipc at 484820 MB/s,
// UCX_TLS=^cuda_ipc (a pipeline through host fragments, 35624 MB/s) and
// UCX_TLS=tcp,cuda_copy (442 MB/s). Each prints the same host-memory
// tables ("from host memory to cuda/dev[0]: software emulation"); only
// the GPU-memory tables tell them apart.
const (
	h200 = corpus + "h200-ucx1201-perftest-tag_bw-cuda-"
	ipcC = h200 + "default-cuda_ipc-client.txt"
	ipcS = h200 + "default-cuda_ipc-server.txt"
	pplC = h200 + "tls-no-cuda_ipc-pipeline-client.txt"
	tcpC = h200 + "tls-tcp-cuda_copy-client.txt"
	oomS = h200 + "tls-tcp-only-out-of-memory-server.txt"
)

func TestJudgeLogTellsTheRealH200PathsApart(t *testing.T) {
	for _, c := range []struct {
		name, file, outcome, dominant string
	}{
		{"cuda_ipc client", ipcC, OutcomeDirect, PathIPC},
		{"cuda_ipc server (Message size 4194304)", ipcS, OutcomeDirect, PathIPC},
		{"^cuda_ipc pipeline", pplC, OutcomeFallback, PathStaged},
		{"tcp,cuda_copy", tcpC, OutcomeFallback, PathStaged},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := judge1(t, read(t, c.file), nil)
			if v.Outcome != c.outcome || Dominant(v) != c.dominant || v.Failure != "" || len(v.Cut) > 0 {
				t.Errorf("outcome %s (%s), failure %q, cut %v: %v", v.Outcome, Dominant(v), v.Failure, v.Cut, v.Reasons)
			}
			for _, j := range v.Transfers {
				if strings.Contains(j.Operation, "from host memory") && j.Path != PathHost {
					t.Errorf("line %d: a host-memory table judged %s", j.Line, j.Path)
				}
			}
		})
	}
}

// The sizes the benchmark moved pick the rows: a 4 KiB tag_bw takes the
// cuda_copy rendezvous through host fragments even where 4 MiB takes
// cuda_ipc; without a size the bulk row decides.
func TestJudgeLogJudgesTheRowsOfTheSizesMoved(t *testing.T) {
	header := func(size string) string {
		return "| Message size: " + size + "                                                                                    |\n"
	}
	for _, c := range []struct {
		name, in, outcome string
	}{
		{"4 KiB: the cuda_copy rows", header("4096") + read(t, ipcC), OutcomeFallback},
		{"control: 4 MiB", header("4194304") + read(t, ipcC), OutcomeDirect},
		{"control: no size, the bulk row", read(t, ipcC), OutcomeDirect},
	} {
		if v := judge1(t, c.in, nil); v.Outcome != c.outcome {
			t.Errorf("%s: %s (%v)", c.name, v.Outcome, v.Reasons)
		}
	}
}

// A server's direct tables interleaved line by line with a client's
// staged ones do not hide the staged ones.
func TestJudgeLogInterleavedRanksDoNotHideTheStagedOne(t *testing.T) {
	a, b := strings.SplitAfter(read(t, ipcS), "\n"), strings.SplitAfter(read(t, pplC), "\n")
	var mixed strings.Builder
	for i := 0; i < max(len(a), len(b)); i++ {
		for _, side := range [][]string{a, b} {
			if i < len(side) {
				mixed.WriteString(side[i])
			}
		}
	}
	v := judge1(t, mixed.String(), nil)
	if v.Outcome != OutcomeFallback || !strings.Contains(strings.Join(v.Reasons, "\n"), "[vm:29954] perftest intra-node cfg#1") {
		t.Errorf("interleaved: %s %v", v.Outcome, v.Reasons)
	}
	var direct int
	for _, j := range v.Transfers {
		if j.Path == PathIPC && strings.TrimSpace(j.Rank) == "vm:29938" {
			direct++
		}
	}
	if direct != 2 {
		t.Errorf("the server's 2 cuda_ipc tables: %d", direct)
	}
}

// A GPU table cut before its bulk row is not judged by its small rows
// (here "1..22150 rendezvous cuda_copy ... frag host", which would read
// as staged): the log cannot be judged. The whole table is direct.
func TestJudgeLogLeavesATableCutBeforeItsBulkRow(t *testing.T) {
	in := read(t, ipcC)
	i := strings.Index(in, "|                  1..22150 |")
	v := judge1(t, in[:i+strings.Index(in[i:], "\n")+1], nil)
	if len(v.Cut) != 1 || v.Outcome == OutcomeFallback || !strings.Contains(v.Cut[0], "stops at its 1..22150 row") {
		t.Errorf("cut: %s, cut %v, %v", v.Outcome, v.Cut, v.Reasons)
	}
	// With the size moved named and past the cut, still cut; a size the
	// rows read hold is judged.
	hdr := "| Message size: 4194304 |\n"
	if v := judge1(t, hdr+in[:i+strings.Index(in[i:], "\n")+1], nil); len(v.Cut) != 1 {
		t.Errorf("4 MiB past the cut: %v", v.Cut)
	}
	if v := judge1(t, in, nil); len(v.Cut) != 0 || v.Outcome != OutcomeDirect {
		t.Errorf("whole: %s %v", v.Outcome, v.Cut)
	}
}

// Each public UCX error log fails with its meaning; a log whose only
// WARN is benign does not.
func TestJudgeLogNamesEachUCXError(t *testing.T) {
	for _, c := range []struct{ file, kind string }{
		{"ucx9515-osu_bw-DD-gpu-rdma-diag-input-output-error-local-protection.txt", UCXErrRegistration},
		{"ucx9590-transport-retry-count-exceeded-mlx5_0-dci.txt", UCXErrFabric},
		{"ucx2973-ucx1.5-fatal-error-on-mlx5_3-transport-retry-count-exceeded.txt", UCXErrFabric},
		{"ucx857-rc_verbs-send-completion-transport-retry-counter-exceeded.txt", UCXErrFabric},
		{"ucx7843-transport-cuda-not-available-no-usable-transports.txt", UCXErrMisbuild},
		{"ucx6132-roce-remote-access-rdma-read-jucx-input-output-error.txt", UCXErrRegistration},
		{"codeindex-nixl-h200-mi300x-cannot-find-remote-protocol-put-cuda-to-rocm.txt", UCXErrPeerMemory},
		{"codeindex-ucx-tcp-self-cannot-find-remote-protocol-put-cuda-to-host.txt", UCXErrPeerMemory},
		{"h200-ucx1201-perftest-tag_bw-cuda-tls-tcp-only-out-of-memory-server.txt", UCXErrAlloc},
	} {
		v := judge1(t, read(t, corpus+c.file), nil)
		if v.Failure == "" {
			t.Errorf("%s: no failure", c.file)
			continue
		}
		if e, _ := worstError(v.Errors); e.Kind != c.kind {
			t.Errorf("%s: kind %s, want %s (%s)", c.file, e.Kind, c.kind, v.Failure)
		}
	}
	// Controls: the healthy run's only UCX line at a level is the WARN
	// "CPU affinity is not set"; an unnamed ERROR still fails.
	if v := judge1(t, read(t, ipcC), nil); v.Failure != "" || len(v.Errors) != 0 {
		t.Errorf("healthy run: %q %v", v.Failure, v.Errors)
	}
	const other = "[1663268222.661551] [weaver2:137158:0]          ib_md.c:1945 UCX  ERROR ibv_query_device(mlx5_0) returned 38: Protocol not supported\n"
	if v := judge1(t, other, nil); len(v.Errors) != 1 || v.Errors[0].Kind != UCXErrOther {
		t.Errorf("an unnamed ERROR: %+v", v.Errors)
	}
}
