package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// The caps that keep the parsers' memory bounded on hostile input
// (BenchmarkHostileInput in cmd/gdrcheck measures them on 200 MB): each
// capped input is read as partial, with a reason, never as whole.

const directRun = recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt"

// withLines inserts extra before the first line of file holding at.
func withLines(t *testing.T, file, at string, extra []string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(at))
	if i < 0 {
		t.Fatalf("%s has no %q", file, at)
	}
	i = bytes.LastIndexByte(b[:i], '\n') + 1
	return bytes.Join([][]byte{b[:i], []byte(strings.Join(extra, "\n") + "\n"), b[i:]}, nil)
}

func TestParseLogLumpsClassesPastTheCapKeepingTheVerdict(t *testing.T) {
	whole, err := ParseLog(openFixture(t, directRun))
	if err != nil || whole.Partial || whole.Outcome != VerdictDirect {
		t.Fatalf("the recorded direct run: %v, partial %v, %s", err, whole != nil && whole.Partial, whole.Outcome)
	}
	connections := func(s *LogSummary) (n int) {
		for _, c := range s.Transports {
			n += c
		}
		return n
	}
	tests := []struct {
		name, via, verdict string
		lumped             string // the class the lines past the cap are counted under
	}{
		{"100 made-up P2P modes stay direct", "P2P/mode%d", VerdictDirect, "P2P/other"},
		{"100 made-up GDRDMA plugins stay direct", "NET/plugin%d/0/GDRDMA", VerdictDirect, "NET/other/GDRDMA"},
		{"100 made-up transports are not known to be direct", "transport%d", VerdictFallback, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var extra []string
			for i := range 100 {
				extra = append(extra, fmt.Sprintf("vm:1933:1944 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via "+tt.via, i))
			}

			s, err := ParseLog(bytes.NewReader(withLines(t, directRun, "# Out of bounds", extra)))
			if err != nil {
				t.Fatal(err)
			}
			// The made-up classes beyond those that fit next to the run's.
			want := fmt.Sprintf("the log names more than 64 transport classes: %d connection lines past them are counted under \"other\" classes", 100-(maxClasses-len(whole.Uses)))
			if !s.Partial || !strings.Contains(s.PartialReason, want) {
				t.Errorf("partial %v %q, want a reason with %q", s.Partial, s.PartialReason, want)
			}
			if s.Outcome != tt.verdict || len(s.Uses) != maxClasses+1 || s.Transports[tt.lumped] == 0 {
				t.Errorf("verdict %s with %d classes (%d under %s), want %s with %d", s.Outcome, len(s.Uses), s.Transports[tt.lumped], tt.lumped, tt.verdict, maxClasses+1)
			}
			if n := connections(s); n != connections(whole)+100 {
				t.Errorf("%d connections counted, want every one: %d", n, connections(whole)+100)
			}
		})
	}
}

// NCCL's own classes are never lumped, past the cap too: judge takes SHM,
// sockets and CollNet apart from other transports.
func TestParseLogNeverLumpsTheClassesNCCLNames(t *testing.T) {
	var extra []string
	for i := range 100 {
		extra = append(extra, fmt.Sprintf("vm:1933:1944 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via plugin%d", i))
	}
	known := map[string]string{"SHM/direct/direct": ClassSHM, "NET/Socket/0": ClassNetSocket, "NET/IB/0": ClassNetIB,
		"NET/IB/0/GDRDMA": ClassNetIBGDR, "P2P/IPC": ClassP2PIPC}
	for via := range known {
		extra = append(extra, "vm:1933:1944 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via "+via)
	}
	s, err := ParseLog(bytes.NewReader(withLines(t, directRun, "# Out of bounds", extra)))
	if err != nil {
		t.Fatal(err)
	}
	for _, class := range known {
		if s.Transports[class] != 1 {
			t.Errorf("%s: %d connections, want its own 1 (transports %v)", class, s.Transports[class], s.Transports)
		}
	}
}

func TestParseLogKeepsAClippedCopyOfALongLine(t *testing.T) {
	long := strings.Repeat("w", 512<<10) // under the line limit, so read
	extra := []string{
		"vm:1933:1944 [0] NCCL WARN " + long,
		"vm:1933:1944 [0] NCCL INFO NCCL_LONG set by environment to " + long,
		"vm:1933:1944 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/" + long,
	}
	s, err := ParseLog(bytes.NewReader(withLines(t, directRun, "Init COMPLETE", extra)))
	if err != nil {
		t.Fatal(err)
	}
	var warn *Finding
	for i := range s.Findings {
		if strings.HasPrefix(s.Findings[i].Text, "www") {
			warn = &s.Findings[i]
		}
	}
	if warn == nil || len(warn.Text) != maxText+len("…") || !strings.HasSuffix(warn.Text, "…") {
		t.Errorf("the 512 KiB WARN is kept as %+v, want its first %d bytes and …", warn, maxText)
	}
	if v := s.Env["NCCL_LONG"]; len(v) != maxText+len("…") {
		t.Errorf("the 512 KiB variable is kept as %d bytes, want %d", len(v), maxText+len("…"))
	}
	for _, c := range s.Connections {
		if len(c.Via) > maxText+len("…") || len(c.Class) > maxField+len("…") {
			t.Errorf("a connection keeps a %d-byte via and a %d-byte class", len(c.Via), len(c.Class))
		}
	}
}

// table is an nccl-tests output of n rows of sizes 8, 16, 24 ... (a table
// whose sizes only grow), with its footer.
func table(n int) []byte {
	var b bytes.Buffer
	b.WriteString("# Collective test starting: all_reduce_perf\n")
	b.WriteString("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
	for i := range n {
		fmt.Fprintf(&b, "  %10d  %12d     float     sum      -1     9.86    0.00    0.00      0     9.64    0.00    0.00      0\n", 8*(i+1), 2*(i+1))
	}
	b.WriteString("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.00\n")
	return b.Bytes()
}

func TestParseTestsKeepsAtMostMaxRowsAndSaysSo(t *testing.T) {
	res, err := ParseTests(bytes.NewReader(table(maxRows)))
	if err != nil || res.Partial || len(res.Rows) != maxRows {
		t.Fatalf("%d rows: %v, %d kept, partial %v %q", maxRows, err, len(res.Rows), res.Partial, res.PartialReason)
	}
	res, err = ParseTests(bytes.NewReader(table(maxRows + 10)))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("more than %d result rows: the 10 past them (from line %d) were not kept", maxRows, maxRows+3)
	if !res.Partial || res.PartialReason != want || len(res.Rows) != maxRows || res.RowsOmitted != 10 {
		t.Errorf("%d rows kept, %d omitted, partial %v %q; want %d, 10, %q", len(res.Rows), res.RowsOmitted, res.Partial, res.PartialReason, maxRows, want)
	}
}

// rowsJSON is an nccl-tests -J document of n rows of growing sizes with
// the given row type.
func rowsJSON(n int, typ string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"args": ["./all_reduce_perf"], "nccl_version": 22803, "env": ["HOME=/root"], "results": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"size": %d, "count": %d, "type": %q, "redop": "sum", "root": "-1", "in_place": {"time": 9.6, "alg_bw": 0, "bus_bw": 0, "nwrong": 0}}`, 8*(i+1), 2*(i+1), typ)
	}
	b.WriteString(`], "average_bus_bandwidth": {"bandwidth": 0}}`)
	return b.Bytes()
}

func TestParseTestsJSONReadsValuesUpToTheLimitOnly(t *testing.T) {
	res, err := ParseTestsJSON(bytes.NewReader(rowsJSON(3, strings.Repeat("t", 600<<10))))
	if err != nil || res.Partial || len(res.Rows) != 3 || len(res.Rows[0].Type) != maxField+len("…") {
		t.Fatalf("rows of 600 KiB: %v, %d rows, partial %q", err, len(res.Rows), res.PartialReason)
	}
	res, err = ParseTestsJSON(bytes.NewReader(rowsJSON(3, strings.Repeat("t", 2<<20))))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial || !strings.Contains(res.PartialReason, "the JSON document stops or is damaged after 0 results: after byte") ||
		!strings.Contains(res.PartialReason, "larger than the 1 MiB limit on one value of an nccl-tests JSON file") {
		t.Errorf("a 2 MiB row: partial %v %q", res.Partial, res.PartialReason)
	}
	_, err = ParseTestsJSON(strings.NewReader(`{"args": ["` + strings.Repeat("a", 2<<20) + `"]}`))
	if !errors.Is(err, ErrNoData) || !errors.Is(err, bounded.ErrTooLarge) {
		t.Errorf("a 2 MiB argument and nothing else: %v, want ErrNoData and the limit", err)
	}
	env := `{"env": ["` + strings.Repeat("e", 100<<10) + `"` + strings.Repeat(`, "`+strings.Repeat("e", 100<<10)+`"`, 30) + `], ` + string(rowsJSON(1, "float")[1:])
	if res, err := ParseTestsJSON(strings.NewReader(env)); err != nil || res.Partial || len(res.Rows) != 1 {
		t.Errorf("an env of 3 MiB in 100 KiB variables is skipped, not a value: %v, partial %q", err, res.PartialReason)
	}
}

func TestParseTestsJSONKeepsAtMostMaxRows(t *testing.T) {
	res, err := ParseTestsJSON(bytes.NewReader(rowsJSON(maxRows+5, "float")))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("more than %d result rows: the 5 past them were not kept", maxRows)
	if !res.Partial || res.PartialReason != want || len(res.Rows) != maxRows {
		t.Errorf("%d rows kept, partial %v %q; want %d and %q", len(res.Rows), res.Partial, res.PartialReason, maxRows, want)
	}
}
