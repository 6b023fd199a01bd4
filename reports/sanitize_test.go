package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/results"
)

// hostileTexts is what real tools and kernels put in the strings that end
// up in JUnit and on the page; each used to make junit.xml unparseable
// ("PCDATA invalid Char value 27", "Input is not proper UTF-8").
var hostileTexts = []string{
	"kernel: \x1b[31mNVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus\x1b[0m", // ANSI colours
	"NCCL WARN NUL\x00inside",
	"\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x1f\x7f",
	"latin-1 caf\xe9 and a lone \xff\xfe",
	"an output cut inside a character: \xe2\x82",
	"an encoded surrogate \xed\xa0\x80",
	"]]>", "a]]>b]]]]>c", "<![CDATA[x]]>",
	"noncharacters \ufffe\uffff\ufdd0\U0001fffe, C1 \u0085\u009b",
	"tab\tnewline\ncarriage return\r\ncrlf\r",
	"",
	`<&>"' and ordinary UTF-8: é € 𝄞 ✓`,
}

// textResults is a run in which the texts a, b and c fill every string
// field the JUnit writer and the page print; sel picks the node status,
// the first spec's state and whether testcases carry properties.
func textResults(a, b, c string, sel uint8) *results.Results {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	status := []string{results.NodeEvaluated, results.NodeUnevaluable, results.NodeMissing, b}[sel%4]
	state := []string{results.StatePassed, results.StateFailed, results.StateSkipped, results.StatePending, c}[sel/4%5]
	base, delta := 338.0, -2.5
	spec := func(name, state string) results.Spec {
		return results.Spec{
			Name: name, State: state, Duration: 0.25, Message: c, Location: b, Output: c + a,
			Notes:   []string{a, c},
			Metrics: []results.Metric{{Name: a, Value: 330, Unit: b, Subject: c, Verdict: a, Baseline: &base, DeltaPct: &delta}},
		}
	}
	return &results.Results{
		Schema: results.Schema, Started: t0, Finished: t0.Add(2 * time.Second),
		Tool: results.Tool{Version: a, Args: []string{"run", b}, Suites: []string{c}},
		Nodes: []results.Node{
			{
				Name: a, Status: status, Reason: c, Profile: b, Started: t0, Finished: t0.Add(time.Second),
				Facts:  []results.Fact{{Name: a, Value: b}, {Name: c, Value: a}},
				Suites: []results.Suite{{Name: b, Specs: []results.Spec{spec(a, state), spec(b, results.StateFailed), spec(c, results.StateSkipped)}}},
				Runs: []results.Run{{Suite: "collectives", Tool: a, Op: b, Mode: "direct", Transport: c, BusBW: 330, Error: a,
					Points:   []results.Point{{Size: 1 << 20, BusBW: 100}, {Size: 1 << 30, BusBW: 330}},
					Baseline: &results.Band{Profile: b, Metric: c, Expected: 338, Low: 320, High: 360}}},
			},
			{Name: a, Status: results.NodeMissing, Reason: b},
		},
	}
}

// xmlCharError says where b first leaves UTF-8 or XML 1.0's Char
// production (#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
// [#x10000-#x10FFFF]), written out here apart from the writer's own rule.
func xmlCharError(b []byte) error {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		ok := r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
		if r == utf8.RuneError && n == 1 {
			return fmt.Errorf("byte %d: %#x is not UTF-8", i, b[i])
		}
		if !ok {
			return fmt.Errorf("byte %d: %U is not an XML 1.0 character", i, r)
		}
		i += n
	}
	return nil
}

func TestCleanTextKeepsCleanTextAndMakesTheRestVisible(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"GPU 0000:18:00.0 -> mlx5_0 is PHB", "GPU 0000:18:00.0 -> mlx5_0 is PHB"},
		{"tab\tnewline\ncr\r é € 𝄞 \ufffd", "tab\tnewline\ncr\r é € 𝄞 \ufffd"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\x00b\x01\x7f", `a\x00b\x01\x7f`},
		{"C1 \u0085", `C1 \u0085`},
		{"\ufffe\uffff\ufdd0\U0010ffff", `\ufffe\uffff\ufdd0\U0010ffff`},
		{"caf\xe9", "caf\ufffd"},
		{"cut \xe2\x82", "cut \ufffd\ufffd"},
		{"surrogate \xed\xa0\x80", "surrogate \ufffd\ufffd\ufffd"},
	} {
		if got := cleanText(c.in); got != c.want {
			t.Errorf("cleanText(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := cleanText(c.want); got != c.want {
			t.Errorf("cleanText is not idempotent on %q: %q", c.want, got)
		}
	}
}

func TestTruncateCutsAtTheStartOfARune(t *testing.T) {
	s := "ab€€" // € is 3 bytes: runes start at 0, 1, 2, 5
	for limit, kept := range map[int]string{0: "", 1: "a", 2: "ab", 3: "ab", 4: "ab", 5: "ab€", 6: "ab€", 7: "ab€", 8: s} {
		want := kept
		if kept != s {
			want += fmt.Sprintf("\n[... %d bytes trimmed]\n", len(s)-len(kept))
		}
		if got := truncate(s, limit); got != want {
			t.Errorf("truncate(%q, %d) = %q, want %q", s, limit, got, want)
		}
	}
}

// cutResults has failed specs whose 64 KiB+ outputs of 2-, 3- and 4-byte
// characters put the writer's cut at every offset inside a character.
func cutResults() *results.Results {
	r := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: "gpu01", Status: results.NodeEvaluated}}}
	var specs []results.Spec
	for _, ch := range []string{"é", "€", "𝄞", "\xff", "\x1b"} {
		for k := range 5 {
			out := strings.Repeat("x", k) + strings.Repeat(ch, 64<<10/len(ch)+2)
			specs = append(specs, results.Spec{Name: fmt.Sprintf("cut %q after %d", ch, k), State: results.StateFailed, Message: "m", Output: out})
		}
	}
	r.Nodes[0].Suites = []results.Suite{{Name: "kernel", Specs: specs}}
	return r
}

func TestJUnitOfHostileTextValidatesAgainstTheXUnitSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("xmllint is needed (make deps installs libxml2-utils): %v", err)
	}
	dir := t.TempDir()
	var files []string
	write := func(name string, r *results.Results) []byte {
		var buf bytes.Buffer
		if err := WriteJUnit(&buf, r, JUnitOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := xmlCharError(buf.Bytes()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
		return buf.Bytes()
	}
	n := len(hostileTexts)
	for i, a := range hostileTexts {
		for sel := range 20 {
			write(fmt.Sprintf("text%02d-%02d.xml", i, sel), textResults(a, hostileTexts[(i+1)%n], hostileTexts[(i+5)%n], uint8(sel)))
		}
	}
	cut := write("cut.xml", cutResults())
	out, err := exec.Command(xmllint, append([]string{"--noout", "--schema", "testdata/junit-10.xsd"}, files...)...).CombinedOutput()
	if err != nil {
		t.Errorf("JUnit of hostile text fails junit-10.xsd: %v\n%.4000s", err, out)
	}

	var doc junitSuites
	if err := xml.Unmarshal(cut, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Suites[0].Cases {
		kept, _, _ := strings.Cut(c.SystemOut.Text, "\n[... ")
		if strings.Contains(c.Name, `\xff`) {
			continue // not UTF-8 to begin with: repaired, not cut
		}
		if strings.ContainsRune(kept, utf8.RuneError) {
			t.Errorf("%s: the cut split a character: ...%q", c.Name, kept[len(kept)-8:])
		}
		if strings.Contains(c.Name, `\x1b`) {
			kept = strings.ReplaceAll(kept, `\x1b`, "\x1b")
		}
		if len(kept) > 64<<10 || len(kept) < 64<<10-3 {
			t.Errorf("%s: kept %d bytes of the output, want the 64 KiB limit less at most 3", c.Name, len(kept))
		}
	}
}

func TestJUnitShowsControlCharactersAndKeepsCDATAEnds(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, textResults(hostileTexts[0], "]]>", "NUL\x00 caf\xe9", 1), JUnitOptions{}); err != nil {
		t.Fatal(err)
	}
	x := buf.String()
	for _, want := range []string{`\x1b[31mNVRM`, `NUL\x00 caf` + "\ufffd", "]]]]><![CDATA[>"} {
		if !strings.Contains(x, want) {
			t.Errorf("JUnit lacks %q", want)
		}
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range doc.Suites[0].Cases {
		found = found || c.Failure != nil && strings.HasSuffix(c.Failure.Text, "\n]]>")
	}
	if !found {
		t.Error("no failure keeps its location ]]> through CDATA")
	}
}

func TestHTMLShowsControlCharactersAndStaysValidUTF8(t *testing.T) {
	for i, a := range hostileTexts {
		page := renderHTML(t, textResults(a+"<b>", hostileTexts[(i+1)%len(hostileTexts)], hostileTexts[(i+5)%len(hostileTexts)], uint8(i)))
		checkSVGs(t, page)
		if err := xmlCharError([]byte(page)); err != nil {
			t.Errorf("text %d: page: %v", i, err)
		}
		for _, r := range page {
			if mustEscape(r) {
				t.Errorf("text %d: page holds %U", i, r)
				break
			}
		}
		if strings.Contains(page, "<b>") || !strings.Contains(page, "&lt;b&gt;") {
			t.Errorf("text %d: html/template no longer escapes the results", i)
		}
	}
	page := renderHTML(t, textResults(hostileTexts[0], "", "", 0))
	if !strings.Contains(page, `\x1b[31mNVRM`) {
		t.Error("the page does not show the ESC as \\x1b")
	}
}

func TestWritersLeaveTheResultsAsTheyWere(t *testing.T) {
	r := textResults(hostileTexts[0], hostileTexts[3], hostileTexts[1], 1)
	if err := WriteJUnit(&bytes.Buffer{}, r, JUnitOptions{TestcaseProperties: true}); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&bytes.Buffer{}, r); err != nil {
		t.Fatal(err)
	}
	if want := textResults(hostileTexts[0], hostileTexts[3], hostileTexts[1], 1); !reflect.DeepEqual(r, want) {
		t.Error("cleaning the report changed the results it was made from")
	}
}

func TestTablesShowControlCharactersInsteadOfSendingThem(t *testing.T) {
	var b strings.Builder
	tb := Table{Header: []string{"node", "message"}, Rows: [][]string{{"n1", "\x1b[31mred\x1b[0m \xff"}}}
	if err := tb.Render(&b, FormatText); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(b.String(), 0x1b) || !strings.Contains(b.String(), `\x1b[31mred\x1b[0m`) || !strings.Contains(b.String(), "\uFFFD") {
		t.Errorf("table:\n%q", b.String())
	}
}
