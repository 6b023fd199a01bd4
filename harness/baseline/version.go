package baseline

import "github.com/gdrcheck/gdrcheck/internal/version"

// Version and Range are internal/version's, which harness/node shares;
// the names stay here for the profiles and known-bad cells written with
// them.
type (
	Version = version.Version
	Range   = version.Range
)

// ParseVersion is version.Parse: a dotted numeric version, strictly.
func ParseVersion(s string) (Version, error) { return version.Parse(s) }

// ParseRange is version.ParseRange: ">=2.26, <2.30".
func ParseRange(s string) (Range, error) { return version.ParseRange(s) }

// MustParseRange is version.MustParseRange, for literals.
func MustParseRange(s string) Range { return version.MustParseRange(s) }
