package reports

import (
	"os"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// DefaultWidth is what the console views fit when $COLUMNS says nothing
// usable: a CI log viewer's width, and most terminals'.
const DefaultWidth = 120

// minWidth is the narrowest terminal honoured: below it a table of the
// summary's six columns cannot be drawn at all.
const minWidth = 40

// ConsoleWidth is the width the console tables and lists fit: $COLUMNS
// where it is a number of at least 40 (a shell exports it where the user
// sized the terminal), else 120.
func ConsoleWidth() int {
	n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS")))
	if err != nil || n < minWidth {
		return DefaultWidth
	}
	return n
}

// listWidth is what the failure and skip lists wrap to: 100 columns, a
// comfortable line to read, or the terminal where it is narrower.
func listWidth() int { return min(100, ConsoleWidth()) }

// wrap breaks s at spaces into lines of at most width columns; a word
// longer than width stays whole on its own line, so a path in a list can
// still be copied.
func wrap(s string, width int) []string { return wrapWords(s, width, false) }

// wrapCell is wrap for a table cell, which must fit its column: a word
// longer than width breaks after a separator (/ , ; : = - _ .) within the
// width where it has one, so paths and node lists break where people
// read them apart, else at the width.
func wrapCell(s string, width int) []string { return wrapWords(s, width, true) }

func wrapWords(s string, width int, breakWords bool) []string {
	width = max(width, 1)
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case twwidth.Width(line)+1+twwidth.Width(word) <= width:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
		for breakWords && twwidth.Width(line) > width {
			head, rest := breakWord(line, width)
			out = append(out, head)
			line = rest
		}
	}
	if line != "" || len(out) == 0 {
		out = append(out, line)
	}
	return out
}

// Wrap is wrap for the commands' own lines (the banner, a node's line):
// the line at the console's width, each further line indented by two.
func Wrap(s string) string {
	return strings.Join(wrap(s, ConsoleWidth()-2), "\n  ")
}

// WrapItem is a list item of the commands' own (a failed node and its
// reason): two spaces before its first line, four before each further
// one, every line within the console's width.
func WrapItem(s string) string {
	return "  " + strings.Join(wrap(s, ConsoleWidth()-4), "\n    ")
}

// breakWord cuts a word wider than width after its last separator that
// keeps the head within width, else at width runes.
func breakWord(w string, width int) (head, rest string) {
	r := []rune(w)
	cut := min(width, len(r))
	for i := cut; i > width/3; i-- {
		if strings.ContainsRune("/,;:=-_.", r[i-1]) {
			cut = i
			break
		}
	}
	return string(r[:cut]), string(r[cut:])
}

// fitColumns returns column widths whose table (a border and a space of
// padding each side of every cell: 3 per column, plus 1) fits width: the
// widest columns are cut to one level, so the narrow ones keep their
// natural width, and none below its floor. ok is false where the floors
// themselves do not fit.
func fitColumns(natural, floor []int, width int) (out []int, ok bool) {
	avail := width - 3*len(natural) - 1
	out = make([]int, len(natural))
	level := 0
	for _, w := range natural {
		level = max(level, w)
	}
	for ; level > 0; level-- {
		total := 0
		for i := range out {
			out[i] = max(floor[i], min(natural[i], level))
			total += out[i]
		}
		if total <= avail {
			return out, true
		}
	}
	return out, false
}

// columnWidths fits the columns, breaking as few words as it can: first
// every column at least as wide as its longest word (up to 12), then as
// its header's longest word, then with any word broken.
func columnWidths(header []string, rows [][]string, width int) []int {
	n := len(header)
	natural, words, heads := make([]int, n), make([]int, n), make([]int, n)
	measure := func(row []string, floor []int) {
		for i, c := range row {
			if i >= n {
				break
			}
			natural[i] = max(natural[i], twwidth.Width(c))
			for _, w := range strings.Fields(c) {
				floor[i] = max(floor[i], min(twwidth.Width(w), 12))
			}
		}
	}
	measure(header, heads)
	copy(words, heads)
	for _, r := range rows {
		measure(r, words)
	}
	var out []int
	for _, floor := range [][]int{words, heads, make([]int, n)} {
		var ok bool
		if out, ok = fitColumns(natural, floor, width); ok {
			break
		}
	}
	return out
}

// fitRows wraps the header and cells of a text table to widths that fit
// width; it says whether any cell took more than one line.
func fitRows(header []string, rows [][]string, width int) ([]string, [][]string, bool) {
	widths := columnWidths(header, rows, width)
	wrapped := false
	fit := func(row []string) []string {
		out := make([]string, len(row))
		for i, c := range row {
			out[i] = c
			if i < len(widths) && twwidth.Width(c) > widths[i] {
				out[i] = strings.Join(wrapCell(c, widths[i]), "\n")
				wrapped = true
			}
		}
		return out
	}
	h := fit(header)
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = fit(r)
	}
	return h, out, wrapped
}
