package bounded

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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

// The regexps the matchers of prefix_match.go replaced, and StripPrefix
// as it was with them: the matchers must agree with them on every line.
var (
	mpiRe      = regexp.MustCompile(`^\[(\d+),(\d+)\]<(?:stdout|stderr)>: ?`)
	rayRe      = regexp.MustCompile(`^\(([^()]*\bpid=\d+[^()]*)\) `)
	rayRankRe  = regexp.MustCompile(`\brank=(\d+)`)
	torchRe    = regexp.MustCompile(`^\[(?:rank|default)(\d+)\]: ?`)
	kubectlRe  = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) `)
	composeRe  = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*)\s+\| `)
	srunRe     = regexp.MustCompile(`^(\d+): `)
	pdshRe     = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*): `)
	toolLineRe = regexp.MustCompile(`^(?:#|\s*\d+\s+\d+\s|\s*-{10}|\s*#bytes|\s*RDMA_|[^\s:]+:\d+:\d+ \[|NCCL version|\s*\*{5}|\[\d+\.\d+\]\s+\[[^\]]*\]|\[[^\]\s:]+:\d+\s*:\d+:\d+\]|\| |\+-{10})`)
)

func regexpStripPrefix(line []byte) ([]byte, Tag) {
	var tag Tag
	for range 4 {
		rest, t, ok := regexpStripOne(line)
		if !ok {
			break
		}
		if tag.Family == "" || tag.Family == PrefixKubectl {
			tag.Family = t.Family
		}
		if tag.Rank == "" {
			tag.Rank = t.Rank
		}
		if tag.Host == "" {
			tag.Host = t.Host
		}
		line = rest
	}
	return line, tag
}

func regexpStripOne(line []byte) ([]byte, Tag, bool) {
	if len(line) == 0 {
		return line, Tag{}, false
	}
	switch line[0] {
	case '[':
		if m := mpiRe.FindSubmatch(line); m != nil {
			return line[len(m[0]):], Tag{Family: PrefixMPI, Rank: string(m[2])}, true
		}
		if m := torchRe.FindSubmatch(line); m != nil {
			return line[len(m[0]):], Tag{Family: PrefixTorch, Rank: string(m[1])}, true
		}
		return line, Tag{}, false
	case '(':
		if m := rayRe.FindSubmatch(line); m != nil {
			t := Tag{Family: PrefixRay}
			if r := rayRankRe.FindSubmatch(m[1]); r != nil {
				t.Rank = string(r[1])
			}
			return line[len(m[0]):], t, true
		}
		return line, Tag{}, false
	}
	if m := kubectlRe.Find(line); m != nil {
		return line[len(m):], Tag{Family: PrefixKubectl}, true
	}
	if m := composeRe.FindSubmatch(line); m != nil {
		return line[len(m[0]):], Tag{Family: PrefixCompose, Host: string(m[1])}, true
	}
	if m := srunRe.FindSubmatch(line); m != nil && toolLineRe.Match(line[len(m[0]):]) {
		return line[len(m[0]):], Tag{Family: PrefixSrun, Rank: string(m[1])}, true
	}
	if m := pdshRe.FindSubmatch(line); m != nil && !bytes.Contains(m[1], []byte(":")) && toolLineRe.Match(line[len(m[0]):]) {
		return line[len(m[0]):], Tag{Family: PrefixPdsh, Host: string(m[1])}, true
	}
	return line, Tag{}, false
}

// prefixSeeds are lines at the edges of each matcher: one byte short,
// one byte off, nested, and each family's shape.
var prefixSeeds = []string{
	"[1717282080.121144] [h:1:0] x", "CUDA device 0: x", "svc  | x", "svc  |x", "svc 	", "svc", "a  b | c", "[1,3]<stdout>:# x", "[12", "[1", "[1.", "[1,", "[1,3]<stdout>: # x", "[1,3]<stdin>:x", "[1,]<stdout>:x", "[,1]<stdout>:x", "[12,34]<stderr>:", "[1,3]<stdout>",
	"[rank0]:x", "[rank0]: x", "[default12]:x", "[rank]:x", "[rank0]x", "[defaultx]:x",
	"(head, rank=0, pid=3808) x", "(pid=1) x", "(xpid=1) x", "(a pid=) x", "(pid=1)x", "(a (pid=1) x", "(_rank=1 pid=2) x", "(rank=1x, rank=2 pid=3) x", "(pid=1 rank=",
	"2024-05-01T10:00:00Z x", "2024-05-01T10:00:00.123456789Z x", "2024-05-01T10:00:00.Z x", "2024-05-01T10:00:00+01:00 x", "2024-05-01T10:00:00-0100 x", "2024-05-01T10:00:00Z", "2024-05-01T10:00:00.5+01:00 [1,1]<stdout>:x",
	"svc-1  | x", "svc-1 |x", "svc-1\t| x", "-svc | x", "a.b_c-d \f| x",
	"0: # x", "12:      1048576        262144     float", "3: not a tool line", "0: 1 2", "0: 1 2 ", "0:  \t ---------- x", "0: *****", "0: ****", "0: #bytes", "0: RDMA_Write", "0: NCCL version 2",
	"gpu-07: # Avg", "gpu-07: h:1:2 [0] NCCL INFO x", "gpu-07: h:1:2[0]", "gpu-07: h:1: [", "gpu-07: h::2 [", "gpu-07: :1:2 [", "gpu-07: h:1:2 [",
	"node-a:2101:2101 [0] NCCL INFO Bootstrap", "gpu-07: Test NCCL failure common.cu:1189", "Note: the run was on 2 nodes",
	"0: [1700000000.000001] [gpu1:3836092:0]   | x |", "gpu-07: [1.2] \t[] x", "0: [1.2][h:1:2]", "0: [1.]  [h]", "0: [1.2]  [h",
	"gpu-07: [gpu1:3836092 :0:3836092] Caught signal", "0: [h:1:2:3]", "0: [h:1:2]", "0: [h :1:2:3]", "0: [:1:2:3]", "0: [h:1\t\t:2:3]x",
	"[2026-12-01 10:00:00] emu0:1:1 [0] NCCL INFO x", "", "\xff(pid=1) x", "(\xffpid=1) x", "(é pid=1) x", "2024-05-01T10:00:00Z 2024-05-01T10:00:00Z 0: 1: # x",
}

func FuzzPrefixMatchersAgreeWithTheRegexps(f *testing.F) {
	for _, s := range prefixSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkAgainstRegexps(t, line)
	})
}

func checkAgainstRegexps(t *testing.T, line string) {
	t.Helper()
	rest, tag := StripPrefix([]byte(line))
	wantRest, wantTag := regexpStripPrefix([]byte(line))
	if string(rest) != string(wantRest) || tag != wantTag {
		t.Errorf("StripPrefix(%q) = %q, %+v; the regexps give %q, %+v", line, rest, tag, wantRest, wantTag)
	}
	// The fast path of Lines.strip: a line it lets through has none.
	if unprefixed([]byte(line)) && (string(wantRest) != line || wantTag != Tag{}) {
		t.Errorf("unprefixed(%q), but the regexps strip %+v from it", line, wantTag)
	}
}

// Every seed, and every line of every text fixture and corpus file, gets
// what the regexps gave it.
func TestPrefixMatchersAgreeWithTheRegexpsOnEveryFixtureLine(t *testing.T) {
	for _, s := range prefixSeeds {
		checkAgainstRegexps(t, s)
	}
	lines, stripped := 0, 0
	err := filepath.WalkDir("../../fixtures", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txt") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(b)) {
			line = strings.TrimRight(line, "\r\n")
			checkAgainstRegexps(t, line)
			lines++
			if _, tag := StripPrefix([]byte(line)); tag.Family != "" {
				stripped++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lines < 10000 || stripped == 0 {
		t.Errorf("%d fixture lines, %d of them with a prefix: the fixtures were not found", lines, stripped)
	}
}
