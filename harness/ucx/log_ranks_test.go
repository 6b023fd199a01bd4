package ucx

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The real captures of ucx_perftest -t tag_bw -m cuda on an H200 (UCX
// 1.20.1, fixtures/corpus/ucx/h200-*): cuda_ipc, and UCX_TLS=^cuda_ipc.
const (
	h200IPC    = corpusDir + "h200-ucx1201-perftest-tag_bw-cuda-default-cuda_ipc-client.txt"
	h200IPCSrv = corpusDir + "h200-ucx1201-perftest-tag_bw-cuda-default-cuda_ipc-server.txt"
	h200Staged = corpusDir + "h200-ucx1201-perftest-tag_bw-cuda-tls-no-cuda_ipc-pipeline-client.txt"
	corpusDir  = "../../fixtures/corpus/ucx/"
)

func parse(t *testing.T, in string) *LogSummary {
	t.Helper()
	s, err := ParseLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gpuTables are a log's GPU-memory tables, each as its process, header
// and rows.
func gpuTables(s *LogSummary) []string {
	var out []string
	for _, x := range s.Transfers {
		if !x.GPU {
			continue
		}
		d := strings.TrimSpace(x.Rank) + " | " + x.Operation
		for _, r := range x.Rows {
			d += " | " + r.Range + " " + r.Protocol + " " + r.Lanes
		}
		out = append(out, d)
	}
	return out
}

// Only the operations whose own buffer is GPU memory are GPU tables:
// the healthy capture's "from host memory to cuda/dev[0]" tables are not.
func TestParseLogNamesTheMemoryOfEachTable(t *testing.T) {
	s := parse(t, read1(h200IPC))
	got := gpuTables(s)
	want := []string{
		"vm:29941 | tagged message by ucp_tag_send*(multi) from cuda/GPU0 | 0 eager short sysv/memory | 1..22150 (?) rendezvous cuda_copy, copy to attached, frag host, cuda_copy, frag host  | 22151..inf (?) rendezvous zero-copy flushed write to remote cuda_ipc/cuda",
		"vm:29941 | rendezvous data send(multi) from cuda/GPU0 to cuda | 0 fragmented copy-in copy-out sysv/memory | 1..inf zero-copy flushed write to remote cuda_ipc/cuda",
		"vm:29941 | rendezvous data fetch(multi) into cuda/GPU0 from cuda | 0 no data fetch  | 1..19234 (?) cuda_copy, copy to attached, frag host, cuda_copy, frag host  | 19235..inf (?) zero-copy flushed write to remote cuda_ipc/cuda",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("GPU tables:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	hostToGPU := 0
	for _, x := range s.Transfers {
		if !x.Complete {
			t.Errorf("line %d: a whole table read as cut", x.Line)
		}
		if x.Local == "host" && x.Remote == "cuda" {
			hostToGPU++
		}
	}
	if hostToGPU == 0 {
		t.Error("no host-to-cuda table read (the capture has several)")
	}
	for _, c := range []struct{ op, local, remote string }{
		{"remote memory write by ucp_put* from host memory to cuda/dev[0]", "host", "cuda"},
		{"rendezvous data fetch(multi) into cuda/GPU0 from cuda", "cuda", "cuda"},
		{"remote memory read by ucp_get* into host memory from cuda", "host", "cuda"},
		{"tagged message by ucp_tag_send*() from host memory", "host", ""},
		{"tag_send from cuda-managed/GPU0", "cuda-managed", ""},
	} {
		if l, r := memories(c.op); l != c.local || r != c.remote {
			t.Errorf("%q: local %q remote %q, want %q %q", c.op, l, r, c.local, c.remote)
		}
	}
}

// Two processes' lines interleaved one by one (server and client on one
// terminal) make each process's tables whole, as each alone does.
func TestParseLogKeepsEachProcesssTablesApart(t *testing.T) {
	a, b := strings.SplitAfter(read1(h200IPCSrv), "\n"), strings.SplitAfter(read1(h200Staged), "\n")
	var mixed strings.Builder
	for i := 0; i < max(len(a), len(b)); i++ {
		if i < len(a) {
			mixed.WriteString(a[i])
		}
		if i < len(b) {
			mixed.WriteString(b[i])
		}
	}
	want := append(gpuTables(parse(t, read1(h200IPCSrv))), gpuTables(parse(t, read1(h200Staged)))...)
	got := gpuTables(parse(t, mixed.String()))
	if len(got) != len(want) {
		t.Fatalf("%d GPU tables interleaved, %d apart:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(got, "\n"), w) {
			t.Errorf("interleaved, lost:\n%s", w)
		}
	}
}

// srun -l and pdsh put their prefix before UCX's: the tables are read
// through it, under the launcher's rank or host.
func TestParseLogReadsUCXLinesUnderSrunAndPdshPrefixes(t *testing.T) {
	plain := gpuTables(parse(t, read1(h200Staged)))
	for _, c := range []struct{ prefix, rank string }{{"0: ", "srun 0 vm:29954"}, {"gpu7: ", "pdsh gpu7 vm:29954"}} {
		in := c.prefix + strings.ReplaceAll(strings.TrimSuffix(read1(h200Staged), "\n"), "\n", "\n"+c.prefix) + "\n"
		got := gpuTables(parse(t, in))
		if len(got) != len(plain) || len(got) == 0 {
			t.Fatalf("%q: %d GPU tables, %d without the prefix", c.prefix, len(got), len(plain))
		}
		for i := range got {
			if want := strings.Replace(plain[i], "vm:29954", c.rank, 1); got[i] != want {
				t.Errorf("%q:\n%s\nwant\n%s", c.prefix, got[i], want)
			}
		}
	}
}

// A table the log stops in before its "..inf" row is not complete; the
// same table whole is.
func TestParseLogMarksATableCutBeforeItsBulkRow(t *testing.T) {
	in := read1(h200IPC)
	i := strings.Index(in, "|                  1..22150 |")
	cut := in[:i+strings.Index(in[i:], "\n")+1]
	s := parse(t, cut)
	last := s.Transfers[len(s.Transfers)-1]
	if !last.GPU || last.Complete || last.Range != "1..22150" {
		t.Errorf("cut table %+v", last)
	}
	for _, x := range parse(t, in).Transfers {
		if x.Line == last.Line && (!x.Complete || x.Range != "22151..inf") {
			t.Errorf("whole table %+v", x)
		}
	}
}

// ucx_perftest's header names the message size; a range's units are
// binary.
func TestParseLogReadsTheMessageSizeAndRanges(t *testing.T) {
	if s := parse(t, read1(h200IPCSrv)); len(s.MessageSizes) != 1 || s.MessageSizes[0] != 4194304 {
		t.Errorf("message sizes %v", s.MessageSizes)
	}
	if s := parse(t, read1(h200IPC)); s.MessageSizes != nil {
		t.Errorf("the client prints no header: %v", s.MessageSizes)
	}
	for _, c := range []struct {
		cell     string
		min, max uint64
	}{{"0", 0, 0}, {"1..22150", 1, 22150}, {"256K..inf", 256 << 10, maxSize}, {"26067..512K", 26067, 512 << 10}, {"0..4294967295", 0, 4294967295}} {
		p := &logReader{hotPath: hotPath{strs: map[string]string{}}}
		if r := p.newRow([]string{c.cell, "p"}); r.Min != c.min || r.Max != c.max {
			t.Errorf("%s: %d..%d", c.cell, r.Min, r.Max)
		}
		if r := p.newRowBytes([][]byte{[]byte(c.cell), []byte("p")}); r.Min != c.min || r.Max != c.max {
			t.Errorf("%s as bytes: %d..%d", c.cell, r.Min, r.Max)
		}
	}
}

// UCX's ERROR, DIAG, FATAL and WARN lines and its error handler's
// transport errors are kept as printed; the work-request detail after a
// transport error is not another error.
func TestParseLogKeepsUCXErrorLines(t *testing.T) {
	for _, c := range []struct {
		file  string
		want  []string // level, source, text start
		noTab bool
	}{
		{"ucx9515-osu_bw-DD-gpu-rdma-diag-input-output-error-local-protection.txt", []string{"DIAG ucp_ep.c:1508 ep 0x7f1eac0b5108: error 'Input/output error'", "FATAL ib_mlx5_log.c:177 Local protection on mlx5_0:1/IB"}, true},
		{"ucx9590-transport-retry-count-exceeded-mlx5_0-dci.txt", []string{"FATAL ib_mlx5_log.c:177 Transport retry count exceeded on mlx5_0:1/IB", "FATAL ib_mlx5_log.c:177 Transport retry count exceeded on mlx5_0:1/IB"}, true},
		{"ucx2973-ucx1.5-fatal-error-on-mlx5_3-transport-retry-count-exceeded.txt", []string{"FATAL ib_mlx5_log.c:115 Error on mlx5_3:1 QP 0xe6d7"}, true},
		{"ucx7843-transport-cuda-not-available-no-usable-transports.txt", []string{"WARN ucp_context.c:975 transport 'cuda' is not available", "ERROR ucp_context.c:1230 no usable transports/devices (asked cuda"}, true},
		{"codeindex-nixl-h200-mi300x-cannot-find-remote-protocol-put-cuda-to-rocm.txt", []string{"ERROR  cannot find remote protocol for: ucp_context_0 inter-node cfg#2 |"}, true},
		{"h200-ucx1201-perftest-tag_bw-cuda-default-cuda_ipc-client.txt", []string{"WARN perftest.c:825 CPU affinity is not set"}, false},
	} {
		s := parse(t, read1(corpusDir+c.file))
		var got []string
		for _, e := range s.Errors {
			got = append(got, e.Level+" "+e.Source+" "+e.Text)
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: errors %q", c.file, got)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s: error %q, want %q...", c.file, got[i], c.want[i])
			}
		}
		if c.noTab != (len(s.Transfers) == 0) {
			t.Errorf("%s: %d tables", c.file, len(s.Transfers))
		}
	}
	if s := parse(t, read1(corpusDir+"ucx9515-osu_bw-DD-gpu-rdma-diag-input-output-error-local-protection.txt")); s.Errors[1].Rank != "a670n1:162239" {
		t.Errorf("handler line's process %q", s.Errors[1].Rank)
	}
}

// ucx_perftest's "| Message size: 4194304 |" header is read behind every
// launcher's prefix, srun -l's and pdsh's too (before, only mpirun's), so
// such a log is judged by the rows of the size it moved.
func TestMessageSizeIsReadBehindEveryLauncherPrefix(t *testing.T) {
	b, err := os.ReadFile(h200IPCSrv)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "0: ", "[1,0]<stdout>:", "gpu-node01: ", "[rank0]:"} {
		var in strings.Builder
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if l != "" {
				in.WriteString(prefix + l)
			}
		}
		if s := parse(t, in.String()); !slices.Equal(s.MessageSizes, []uint64{4194304}) {
			t.Errorf("prefix %q: message sizes %v, want [4194304]", prefix, s.MessageSizes)
		}
	}
}
