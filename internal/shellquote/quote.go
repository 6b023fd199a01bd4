// Package shellquote makes strings single words of POSIX sh, for the
// scripts and fragments gdrcheck writes (sbatch scripts, inventory
// --format env). It wraps mvdan.cc/sh/v3's syntax.Quote rather than
// quoting by hand: that quoter is kept against every shell's parsing
// rules and refuses what sh cannot hold (a NUL, a control character
// without an escape in POSIX sh) instead of writing it.
package shellquote

import (
	"fmt"

	"mvdan.cc/sh/v3/syntax"
)

// Word returns s as one sh word that expands to s: as it is where nothing
// in it means anything to sh, else single-quoted. Nothing inside single
// quotes is expanded, so $(...), backticks, ; and spaces stay text. A
// string sh cannot hold as one plain word (a NUL; a newline, ESC or other
// non-printable character, which POSIX sh has no escape for) is an error
// naming its place, never written.
func Word(s string) (string, error) {
	q, err := syntax.Quote(s, syntax.LangPOSIX)
	if err != nil {
		return "", fmt.Errorf("quoting %q for sh: %w", s, err)
	}
	return q, nil
}
