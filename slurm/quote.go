package slurm

import (
	"fmt"
	"regexp"
)

// Words of the batch script are quoted by internal/shellquote; these
// checks refuse, before that, what Slurm or the script's lines could not
// hold.

// Names Slurm itself accepts for partitions, accounts, QOS and
// reservations; anything else is refused before it reaches a script.
var slurmName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Time limits as sbatch --time takes them: minutes, M:S, H:M:S, D-H,
// D-H:M, D-H:M:S, or UNLIMITED.
var slurmTime = regexp.MustCompile(`^(UNLIMITED|infinite|\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2})$`)

// Constraint expressions: features joined by & | , and grouped with [ ] ( )
// and counts (*N).
var slurmConstraint = regexp.MustCompile(`^[A-Za-z0-9_.&|,\[\]()*-]{1,256}$`)

func checkName(flag, v string) error {
	if v != "" && !slurmName.MatchString(v) {
		return fmt.Errorf("--%s %q: only letters, digits, '_', '.' and '-' are allowed", flag, v)
	}
	return nil
}

// checkWord refuses control characters (a newline would end a script
// line, a NUL would cut an argument) in values that are quoted anyway.
func checkWord(flag, v string) error {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("--%s %q: control characters are not allowed", flag, v)
		}
	}
	return nil
}
