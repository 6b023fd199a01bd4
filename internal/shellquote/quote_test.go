package shellquote

import (
	"os/exec"
	"strings"
	"testing"
)

// Each quoted word, given to sh as the argument of printf, comes back as
// the string it was made from, and runs nothing.
func TestWordsExpandToThemselvesUnderSh(t *testing.T) {
	marker := t.TempDir() + "/ran"
	for _, s := range []string{
		"plain", "", "with space", "it's", `"dq"`, "$(touch " + marker + ")", "`touch " + marker + "`",
		"a;touch " + marker, "~root", "*", "#not a comment", "=x", "if", "$HOME", `back\slash`, "NVIDIA H200",
	} {
		q, err := Word(s)
		if err != nil {
			t.Fatalf("Word(%q): %v", s, err)
		}
		for _, sh := range []string{"sh", "bash", "dash"} {
			out, err := exec.Command(sh, "-c", "printf %s "+q).Output()
			if err != nil {
				t.Fatalf("%s: printf %s: %v", sh, q, err)
			}
			if string(out) != s {
				t.Errorf("%s: %s expands to %q, want %q", sh, q, out, s)
			}
		}
	}
	if _, err := exec.Command("test", "-e", marker).Output(); err == nil {
		t.Errorf("a quoted word ran a command: %s exists", marker)
	}
}

// What POSIX sh cannot hold in a word is refused, not written.
func TestWordRefusesWhatShCannotHold(t *testing.T) {
	for _, s := range []string{"a\x00b", "line\ntouch x", "esc\x1b[2J", "bad\xffbyte", "cr\r"} {
		q, err := Word(s)
		if err == nil {
			t.Errorf("Word(%q) = %q, want an error", s, q)
			continue
		}
		if !strings.Contains(err.Error(), "quoting") {
			t.Errorf("Word(%q): %v does not say what it was doing", s, err)
		}
	}
}
