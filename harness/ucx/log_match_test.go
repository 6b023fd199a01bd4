package ucx

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The regexps log_match.go's matchers replaced, which
// FuzzLogMatchersAgreeWithTheRegexps holds them to.
var (
	ucxPrefixRe  = regexp.MustCompile(`^\s*\[\d+\.\d+\]\s+\[([^\]]*)\]\s+(?:\S+\.c:\d+\s+UCX\s+INFO\s+)?`)
	levelLineRe  = regexp.MustCompile(`^\s*(?:(\S+:\d+)\s+)?UCX\s+(ERROR|DIAG|FATAL|WARN)\s+(.*?)\s*$`)
	epLineRe     = regexp.MustCompile(`^(\S+\s+(?:self|intra-node|inter-node)\s+cfg#\d+|ep_cfg\[\d+\]:)\s+((?:tag|rma|rma_am|amo|amo_am|am|stream|ka)\(.*)$`)
	peerWordRe   = regexp.MustCompile(`\b(self|intra-node|inter-node)\b`)
	configCellRe = regexp.MustCompile(`(?:\bcfg#\d+|\bep_cfg\[\d+\])$`)
	borderRe     = regexp.MustCompile(`^\+[-+]+\+$`)
	rangeCellRe  = regexp.MustCompile(`^\d+[KMGT]?(?:\.\.(?:\d+[KMGT]?|inf))?$`)
	memWordRe    = regexp.MustCompile(`\b(from|into|to)\s+([a-z][a-z0-9-]*)\b`)
)

// agree is the list of differences between each matcher and its regexp
// on s.
func agree(s string) []string {
	var diffs []string
	differ := func(what string, got, want any) {
		diffs = append(diffs, fmt.Sprintf("%s: matcher %q, regexp %q", what, got, want))
	}
	{
		n, proc, ok := matchUCXPrefix([]byte(s))
		var want []string
		if m := ucxPrefixRe.FindStringSubmatch(s); m != nil {
			want = []string{m[0], m[1]}
		}
		if got := []string{s[:n], string(proc)}; ok != (want != nil) || ok && !slices.Equal(got, want) {
			differ("ucxPrefix", got, want)
		}
	}
	{
		src, lvl, text, ok := matchLevelLine(s)
		var want []string
		if m := levelLineRe.FindStringSubmatch(s); m != nil {
			want = m[1:]
		}
		if got := []string{src, lvl, text}; ok != (want != nil) || ok && !slices.Equal(got, want) {
			differ("levelLine", got, want)
		}
	}
	{
		config, lanes, ok := matchEPLine(s)
		var want []string
		if m := epLineRe.FindStringSubmatch(s); m != nil {
			want = m[1:]
		}
		if got := []string{config, lanes}; ok != (want != nil) || ok && !slices.Equal(got, want) {
			differ("epLine", got, want)
		}
	}
	if got, want := findPeer(s), peerWordRe.FindString(s); got != want {
		differ("peerWord", got, want)
	}
	if got, want := isConfigCell(s), configCellRe.MatchString(s); got != want {
		differ("configCell", got, want)
	}
	if got, want := isBorder(s), borderRe.MatchString(s); got != want || isBorder([]byte(s)) != want {
		differ("border", got, want)
	}
	if got, want := isRangeCell(s), rangeCellRe.MatchString(s); got != want || isRangeCell([]byte(s)) != want {
		differ("rangeCell", got, want)
	}
	var got, want [][2]string
	memWords(s, func(w, m string) { got = append(got, [2]string{w, m}) })
	for _, m := range memWordRe.FindAllStringSubmatch(s, 4) {
		want = append(want, [2]string{m[1], m[2]})
	}
	if !slices.Equal(got, want) {
		differ("memWord", got, want)
	}
	return diffs
}

// matcherSeeds are the corpus's UCX lines, whole, after UCX's prefix and
// as cells, and lines written to sit at each matcher's edges.
func matcherSeeds(f *testing.F) []string {
	files, err := filepath.Glob("../../fixtures/corpus/ucx/*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no UCX corpus: %v", err)
	}
	var seeds []string
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			line = strings.TrimRight(line, "\n")
			seeds = append(seeds, line)
			if m := ucxPrefixRe.FindString(line); m != "" {
				rest := strings.TrimSpace(line[len(m):])
				seeds = append(seeds, rest)
				if cells, ok := tableRow(rest); ok {
					seeds = append(seeds, cells...)
				}
			}
		}
	}
	return append(seeds,
		"[1.2] [h:1:2] x.c:1 UCX INFO ", "[1.2] [h:1:2]\tx.c:1\fUCX\rINFO\n", "[1.2] [h:1:2] .c:1 UCX INFO a", "[1.2] [h:1:2] a.c: UCX INFO a",
		"[1.2] [h:1:2]x", "[1.] [h] x", "[.2] [h] x", "\v[1.2] [h] x", "[1.2] [h]] x", "[1.2] [h:\xff] y.c:3:4 UCX  INFO  z",
		"a:1 UCX WARN x ", ":1 UCX ERROR x", "a: UCX ERROR x", "UCX  DIAG\t", "UCX FATAL", "UCX WARNING x", "x UCX ERROR y", "a:1 UCX ERROR x\ny",
		"a::1\tUCX\tERROR\t\tx \t", "UCX:1 UCX WARN w", "UCX ERROR \xff \v",
		"mpi ep_cfg[3]: tag(rc_mlx5/mlx5_0:1)", "ep_cfg[]: tag(x)", "ep_cfg[1]:tag(x)", "h self cfg#1 rma_am(x", "h  intra-node  cfg#12  am(", "h inter-node cfg# tag(",
		"h inter-node cfg#2 ka(\n", "x self cfg#1 amo_am (", "ep_cfg[3]: self cfg#2 stream(x)",
		"selfish intra-nodes inter-node", "a-self", "_self", "self_", "intra-node-x", "\xffself\xff", "cfg#1", "xcfg#1", "-cfg#1", "ep_cfg[0]", "x ep_cfg[]", "acfg#",
		"+", "++", "+-+", "+--x-+", "0", "8K", "8k", "1..22150", "256K..inf", "1..", "..inf", "1..inf8", "1K..2T", "00..0M", "1KK",
		"from host memory", "into cuda/GPU2 from cuda/dev[0]", "to cuda-managed", "to cuda-", "from a-", "from a--b_", "fromcuda", "xfrom cuda", "to  \tz9 from x from y to q into r",
		"from -", "from cuda-b to c", "_to x", "from Cuda",
	)
}

func FuzzLogMatchersAgreeWithTheRegexps(f *testing.F) {
	for _, s := range matcherSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range agree(s) {
			t.Errorf("%q: %s", s, d)
		}
	})
}

// The hot path reads every log as line alone does.
func FuzzParseLogHotPathAgreesWithLine(f *testing.F) {
	files, err := filepath.Glob("../../fixtures/corpus/ucx/*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no UCX corpus: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(bytes.ReplaceAll(b, []byte("\n["), []byte("\n0: [")))
	}
	f.Add([]byte(IPCTable + IPCTable + "[1.2] [h:1:0] | 0..8K | a | b |\n[1.2] [h:1:0] | 0..8K\u00a0| a |\n[1.2] [h:2:0] +--+\n" +
		"[1.2] [h:1 :0] | x cfg#1 | UCX ERROR y |\n| x.c:1 | y |\n+-x-+\n| ep_cfg[1] | z |\n|\u00a0a | b by c |\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseLog(bytes.NewReader(data), false)
		want, werr := parseLog(bytes.NewReader(data), true)
		if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: the hot path gives %+v %v, line alone %+v %v", data, got, err, want, werr)
		}
	})
}

// Past maxEntries tables the hot path keeps no row's text: what it
// reports is still what line alone does.
func TestParseLogHotPathAgreesPastTheTablesKept(t *testing.T) {
	b, err := os.ReadFile(benchRecording)
	if err != nil {
		t.Fatal(err)
	}
	in := bytes.Repeat(b, maxEntries/2+100)
	got, err := parseLog(bytes.NewReader(in), false)
	want, werr := parseLog(bytes.NewReader(in), true)
	if err != nil || werr != nil || len(got.Transfers) != maxEntries || !reflect.DeepEqual(got, want) {
		t.Errorf("%v %v: %d transfers; the hot path and line alone differ: %v", err, werr, len(got.Transfers), !reflect.DeepEqual(got, want))
	}
}
