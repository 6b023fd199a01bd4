package version

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{"a driver version keeps its components", "580.95.05", "580.95.5", ""},
		{"an NCCL version parses", "2.28.3", "2.28.3", ""},
		{"a CUDA version parses", "13.0", "13.0", ""},
		{"a bare major parses", "580", "580", ""},
		{"an empty version is an error", " ", "", "empty version"},
		{"letters are an error", "12.x", "", `"12.x" is not a dotted numeric version`},
		{"an empty component is an error", "2..3", "", `"2..3" is not a dotted numeric version`},
		{"a sign is an error", "+2.3", "", `"+2.3" is not a dotted numeric version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%q) = %v, %v; want error %q", tc.in, v, err, tc.err)
				}
				return
			}
			if err != nil || v.String() != tc.want {
				t.Fatalf("Parse(%q) = %v, %v; want %s", tc.in, v, err, tc.want)
			}
		})
	}
}

func TestParseFactIgnoresWhatToolsPrintAfterTheNumber(t *testing.T) {
	for in, want := range map[string]string{
		"2.28.3+cuda13.0":   "2.28.3",
		"v2.19.6":           "2.19.6",
		"580.159.04 (open)": "580.159.4",
		"13.0.":             "13.0",
	} {
		v, err := ParseFact(in)
		if err != nil || v.String() != want {
			t.Errorf("ParseFact(%q) = %v, %v; want %s", in, v, err, want)
		}
	}
	if _, err := ParseFact("unknown"); err == nil {
		t.Error(`ParseFact("unknown") succeeded`)
	}
}

func TestRangeContains(t *testing.T) {
	for _, tc := range []struct {
		name, rng, version string
		want               bool
	}{
		{"a version inside a half-open range matches", ">=2.26, <2.30", "2.28.3", true},
		{"the lower bound is inclusive", ">=2.26, <2.30", "2.26", true},
		{"the upper bound is exclusive", ">=2.26, <2.30", "2.30.0", false},
		{"a version below the range does not match", ">=2.26, <2.30", "2.25.9", false},
		{"a driver with a zero-padded component compares numerically", ">=580.95.05", "580.159.04", true},
		{"a driver older than the bound does not match", ">=580.95.05", "570.195.03", false},
		{"missing components compare as zero", ">=13", "13.0", true},
		{"a bare version matches the versions it prefixes", "580", "580.95.05", true},
		{"a bare version does not match another branch", "580", "575.57.08", false},
		{"a bare minor matches its patch releases", "2.28", "2.28.3", true},
		{"= is exact", "=2.28", "2.28.3", false},
		{"== is the same as =", "==2.28.3", "2.28.3", true},
		{"!= excludes one version", ">=2.26, !=2.27.3", "2.27.3", false},
		{"> is strict", ">12.4", "12.4", false},
		{"<= is inclusive", "<=12.4", "12.4.0", true},
		{"spaces after operators are allowed", ">= 570, < 600", "580.95.05", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRange(tc.rng)
			if err != nil {
				t.Fatal(err)
			}
			v, err := Parse(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Contains(v); got != tc.want {
				t.Errorf("%q contains %s = %v, want %v", tc.rng, tc.version, got, tc.want)
			}
		})
	}
}

func TestParseRangeErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, err string }{
		{"an empty range", "", "empty range"},
		{"a doubled comma", ">=2.26,, <2.30", "empty constraint between commas"},
		{"a trailing comma", ">=2.26,", "empty constraint between commas"},
		{"an operator without a version", ">=", `constraint ">=": empty version`},
		{"a word", "latest", `constraint "latest": "latest" is not a dotted numeric version`},
		{"an unknown operator", "~>2.26", `constraint "~>2.26": "~>2.26" is not a dotted numeric version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRange(tc.in)
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseRange(%q) error = %v, want %q", tc.in, err, tc.err)
			}
		})
	}
}

func TestRangeStringIsCanonical(t *testing.T) {
	a, b := MustParseRange(">=2.26,<2.30"), MustParseRange(" >= 2.26 ,  <2.30 ")
	if a.String() != ">=2.26, <2.30" || !a.Equal(b) {
		t.Errorf("ranges render as %q and %q, want both %q", a, b, ">=2.26, <2.30")
	}
	if (Range{}).IsZero() != true || a.IsZero() {
		t.Error("IsZero is wrong")
	}
}

// A reported version matches itself and what it is a prefix of, and is
// written as the node wrote it; a fact that is no version matches
// everything but keeps its text for the report.
func TestReportedMatchesItselfWrittenAsReported(t *testing.T) {
	for _, tc := range []struct {
		fact, str string
		zero      bool
		in, out   []string
	}{
		{" 580.95.05 ", "580.95.05", false, []string{"580.95.5", "580.95.05.1"}, []string{"580.95.6", "580"}},
		{"2.28.3+cuda13.0", "2.28.3+cuda13.0", false, []string{"2.28.3"}, []string{"2.28.4"}},
		{"unknown", "unknown", true, []string{"1.0"}, nil},
		{"", "", true, []string{"1.0"}, nil},
	} {
		t.Run(tc.fact, func(t *testing.T) {
			r := Reported(tc.fact)
			if r.String() != tc.str || r.IsZero() != tc.zero {
				t.Errorf("Reported(%q) = %q (zero %t), want %q (zero %t)", tc.fact, r, r.IsZero(), tc.str, tc.zero)
			}
			for want, vs := range map[bool][]string{true: tc.in, false: tc.out} {
				for _, s := range vs {
					v, err := Parse(s)
					if err != nil {
						t.Fatal(err)
					}
					if got := r.Contains(v); got != want {
						t.Errorf("Reported(%q).Contains(%s) = %t, want %t", tc.fact, s, got, want)
					}
				}
			}
		})
	}
}
