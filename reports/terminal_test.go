package reports

import "testing"

// Terminal text stays one line: ESC, BEL and the other controls become
// escapes, and so do newline and carriage return, which a terminal would
// obey (a carriage return rewrites the line it ends).
func TestTerminalKeepsTextOnOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"h100-node":                  "h100-node",
		"evil\x1b]0;pwned\x07":       `evil\x1b]0;pwned\x07`,
		"PASS\rFAIL":                 `PASS\rFAIL`,
		"n1\n## forged":              `n1\n## forged`,
		"bad\xffbyte":                "bad\uFFFDbyte",
		"tab\tkept, NEL\u0085 shown": "tab\tkept, NEL\\u0085 shown",
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}
