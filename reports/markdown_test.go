package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// A node string that tries to end its cell, add a row or a heading, and
// put a link, an image or HTML into a job summary: rendered by goldmark
// with GitHub's table extension, the table keeps one row of two cells and
// none of it becomes markup.
func TestMarkdownTablesHoldHostileCells(t *testing.T) {
	hostile := "n1|topology|7|0|0|PASS\n## All nodes passed\n![ok](http://example.invalid/b.svg) [x](javascript:alert(1)) <img src=x> www.example.invalid root@example.invalid a\\|b"
	var md bytes.Buffer
	tb := Table{Title: "Summary", Header: []string{"node", "status"}, Rows: [][]string{{hostile, "FAIL"}}}
	if err := tb.Render(&md, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(md.Bytes(), &html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	if n := strings.Count(page, "<tr>"); n != 2 {
		t.Errorf("%d rows, want the header and one:\n%s", n, page)
	}
	if n := strings.Count(page, "<td"); n != 2 {
		t.Errorf("%d cells, want 2:\n%s", n, page)
	}
	for _, bad := range []string{"<img", "<a ", "<h2", "href"} {
		if strings.Contains(page, bad) {
			t.Errorf("the cell became markup (%s):\n%s", bad, page)
		}
	}
	if !strings.Contains(page, ">FAIL</td>") {
		t.Errorf("the FAIL cell is lost:\n%s", page)
	}
}

// A title naming a recorded host ("GPU rails on <host>") is cleaned as
// the cells are: its ESC never reaches the terminal, its newline no line.
func TestTableTitlesAreCleaned(t *testing.T) {
	for _, format := range []string{FormatText, FormatMarkdown} {
		var b bytes.Buffer
		tb := Table{Title: "GPU rails on evil\x1b]0;pwned\x07\n## forged", Header: []string{"gpu"}, Rows: [][]string{{"0"}}}
		if err := tb.Render(&b, format); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "\n## forged") {
			t.Errorf("%s: title not cleaned: %q", format, out)
		}
	}
	if got := Terminal("node\x1b[2J\nx"); got != `node\x1b[2J\nx` {
		t.Errorf("Terminal: %q", got)
	}
}
