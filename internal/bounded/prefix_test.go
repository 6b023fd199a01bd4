package bounded

import (
	"strings"
	"testing"
)

// One line of each family, in the shape the issues and docs in
// fixtures/corpus show (the corpus files carry the sources).
func TestStripPrefixRemovesEachFamilyAndKeepsItsRankOrHost(t *testing.T) {
	for _, tt := range []struct {
		name, in, rest string
		tag            Tag
	}{
		{"mpirun --tag-output", "[1,3]<stdout>:# nThread 1 nGpus 1", "# nThread 1 nGpus 1", Tag{Family: PrefixMPI, Rank: "3"}},
		{"mpirun stderr", "[1,0]<stderr>:h:1:2 [0] NCCL INFO NET/IB : No device found.", "h:1:2 [0] NCCL INFO NET/IB : No device found.", Tag{Family: PrefixMPI, Rank: "0"}},
		{"Ray around mpirun", "(head, rank=0, pid=3808) [1,1]<stdout>:#  Rank  1 Group  0", "#  Rank  1 Group  0", Tag{Family: PrefixRay, Rank: "0"}},
		{"Ray worker", "(RayWorkerWrapper pid=581, ip=10.0.0.2) n1:581:581 [0] NCCL INFO Bootstrap : Using eth0", "n1:581:581 [0] NCCL INFO Bootstrap : Using eth0", Tag{Family: PrefixRay}},
		{"srun -l", "0: #       size         count", "#       size         count", Tag{Family: PrefixSrun, Rank: "0"}},
		{"srun -l row", "12:      1048576        262144     float     sum      -1", "     1048576        262144     float     sum      -1", Tag{Family: PrefixSrun, Rank: "12"}},
		{"torchrun rank", "[rank0]:n1:9:9 [0] NCCL INFO NCCL version 2.21.5+cuda12.4", "n1:9:9 [0] NCCL INFO NCCL version 2.21.5+cuda12.4", Tag{Family: PrefixTorch, Rank: "0"}},
		{"torchrun default", "[default3]:NCCL version 2.21.5+cuda12.4", "NCCL version 2.21.5+cuda12.4", Tag{Family: PrefixTorch, Rank: "3"}},
		{"pdsh", "gpu-07: # Avg bus bandwidth    : 21.5", "# Avg bus bandwidth    : 21.5", Tag{Family: PrefixPdsh, Host: "gpu-07"}},
		{"kubectl --timestamps", "2024-05-01T10:00:00.123456789Z # Out of bounds values : 0 OK", "# Out of bounds values : 0 OK", Tag{Family: PrefixKubectl}},
		{"kubectl around mpirun", "2024-05-01T10:00:00Z [1,2]<stdout>:# Out of bounds values : 0 OK", "# Out of bounds values : 0 OK", Tag{Family: PrefixMPI, Rank: "2"}},
		{"docker compose", "trainer-1  | h:1:2 [0] NCCL INFO Using network IB", "h:1:2 [0] NCCL INFO Using network IB", Tag{Family: PrefixCompose, Host: "trainer-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rest, tag := StripPrefix([]byte(tt.in))
			if string(rest) != tt.rest || tag != tt.tag {
				t.Errorf("StripPrefix(%q) = %q, %+v; want %q, %+v", tt.in, rest, tag, tt.rest, tt.tag)
			}
		})
	}
}

// Lines that resemble a prefix but are a tool's own: NCCL's "host:pid:tid",
// nccl-tests' "host: Test NCCL failure", prose with a colon, a timestamp
// NCCL prints itself.
func TestStripPrefixLeavesToolLinesAlone(t *testing.T) {
	for _, in := range []string{
		"node-a:2101:2101 [0] NCCL INFO Bootstrap : Using ib0:10.0.1.2<0>",
		"gpu-07: Test NCCL failure common.cu:1189 'unhandled system error'",
		"Note: the run was on 2 nodes",
		"3: not a tool line",
		"[2026-12-01 10:00:00] emu0:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0",
		"#  Rank  0 Group  0 Pid   1234 on   node-a device  0 [0000:18:00] NVIDIA H100",
	} {
		if rest, tag := StripPrefix([]byte(in)); string(rest) != in || tag != (Tag{}) {
			t.Errorf("StripPrefix(%q) = %q, %+v; want it unchanged", in, rest, tag)
		}
	}
}

// Output interleaved from several ranks: each line keeps its own rank, and
// the input's family is the one most lines had.
func TestLinesStripInterleavedRanksAndReportTheFamily(t *testing.T) {
	in := "[1,0]<stdout>:# nThread 1\n" +
		"[1,1]<stdout>:#  Rank  1 Group  0\n" +
		"plain line\n" +
		"[1,0]<stdout>:#  Rank  0 Group  0\n"
	l := NewLines(strings.NewReader(in), MaxLine)
	l.StripPrefixes()
	var got []string
	for {
		b, ok := l.Next()
		if !ok {
			break
		}
		got = append(got, l.Tag().Rank+"|"+string(b))
	}
	want := []string{"0|# nThread 1", "1|#  Rank  1 Group  0", "|plain line", "0|#  Rank  0 Group  0"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p := l.Prefix(); p != PrefixMPI {
		t.Errorf("Prefix() = %q, want %q", p, PrefixMPI)
	}
	plain := NewLines(strings.NewReader("a\nb\n"), MaxLine)
	plain.StripPrefixes()
	for _, ok := plain.Next(); ok; _, ok = plain.Next() {
	}
	if p := plain.Prefix(); p != "" {
		t.Errorf("Prefix() of unprefixed input = %q, want none", p)
	}
}
