// Package version is the dotted numeric Version gdrcheck compares
// (drivers, NCCL, CUDA) and the Range a baseline profile or a known-bad
// cell states over it. harness/baseline and harness/node share it, so the
// node's evidence needs no baseline to compare two libraries' versions.
package version

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is a dotted numeric version: 580.95.05, 2.28.3, 13.0. Missing
// trailing components compare as zero, so 13 == 13.0.
type Version []int

// Parse parses a dotted numeric version strictly: one to six
// components of decimal digits ("05" is 5).
func Parse(s string) (Version, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty version")
	}
	parts := strings.Split(s, ".")
	if len(parts) > 6 {
		return nil, fmt.Errorf("%q has more than six components", s)
	}
	v := make(Version, len(parts))
	for i, p := range parts {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return nil, fmt.Errorf("%q is not a dotted numeric version", s)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("%q: component %q is out of range", s, p)
		}
		v[i] = n
	}
	return v, nil
}

// ParseFact parses a version as tools print it: a leading "v" and
// anything after the dotted number ("2.28.3+cuda13.0", "580.95.05 (open)")
// are ignored.
func ParseFact(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	end := 0
	for end < len(t) && (t[end] == '.' || ('0' <= t[end] && t[end] <= '9')) {
		end++
	}
	v, err := Parse(strings.TrimRight(t[:end], "."))
	if err != nil {
		return nil, fmt.Errorf("%q is not a version", s)
	}
	return v, nil
}

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than w.
func (v Version) Compare(w Version) int {
	for i := 0; i < max(len(v), len(w)); i++ {
		a, b := v.at(i), w.at(i)
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (v Version) at(i int) int {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// hasPrefix reports whether v starts with the components of p: 580 is a
// prefix of 580.95.05, and 13.0 of 13 (missing components are zero).
func (v Version) hasPrefix(p Version) bool {
	for i := range p {
		if v.at(i) != p[i] {
			return false
		}
	}
	return true
}

func (v Version) String() string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ".")
}

// Range is a set of versions: constraints joined by commas, all of which
// must hold. A constraint is an operator (>=, >, <=, <, = or ==, !=) and a
// version, or a bare version, which matches every version it is a prefix
// of ("580" matches 580.95.05; "2.28" matches 2.28.3). The zero Range is
// unspecified and matches everything.
type Range struct {
	src  string
	cons []constraint
}

type constraint struct {
	op string // ">=", ">", "<=", "<", "=", "!=", "" (prefix)
	v  Version
}

// ParseRange parses a version range such as ">=2.26, <2.30".
func ParseRange(s string) (Range, error) {
	src := strings.TrimSpace(s)
	if src == "" {
		return Range{}, errors.New("empty range")
	}
	var r Range
	var texts []string
	for _, part := range strings.Split(src, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return Range{}, errors.New("empty constraint between commas")
		}
		op := ""
		for _, o := range []string{">=", "<=", "==", "!=", ">", "<", "="} {
			if strings.HasPrefix(part, o) {
				op = o
				break
			}
		}
		v, err := Parse(strings.TrimSpace(part[len(op):]))
		if err != nil {
			return Range{}, fmt.Errorf("constraint %q: %w", part, err)
		}
		if op == "==" {
			op = "="
		}
		r.cons = append(r.cons, constraint{op, v})
		texts = append(texts, op+strings.TrimSpace(part[len(op):]))
	}
	r.src = strings.Join(texts, ", ")
	return r, nil
}

// MustParseRange is ParseRange for literals; it panics on an error.
func MustParseRange(s string) Range {
	r, err := ParseRange(s)
	if err != nil {
		panic(err)
	}
	return r
}

// Reported is the range a version a node reported stands for in a
// profile: the version itself, matched as a prefix and written as the
// node wrote it; a fact that is no version keeps its text and constrains
// nothing. "" is the zero Range.
func Reported(fact string) Range {
	if v, err := ParseFact(fact); err == nil {
		return Range{src: strings.TrimSpace(fact), cons: []constraint{{v: v}}}
	}
	return Range{src: strings.TrimSpace(fact)}
}

// IsZero reports an unspecified range.
func (r Range) IsZero() bool { return len(r.cons) == 0 }

// String is the range as written, spaced canonically: ">=2.26, <2.30".
func (r Range) String() string { return r.src }

// Contains reports whether v satisfies every constraint.
func (r Range) Contains(v Version) bool {
	for _, c := range r.cons {
		cmp := v.Compare(c.v)
		ok := false
		switch c.op {
		case ">=":
			ok = cmp >= 0
		case ">":
			ok = cmp > 0
		case "<=":
			ok = cmp <= 0
		case "<":
			ok = cmp < 0
		case "=":
			ok = cmp == 0
		case "!=":
			ok = cmp != 0
		default:
			ok = v.hasPrefix(c.v)
		}
		if !ok {
			return false
		}
	}
	return true
}

// Equal reports whether two ranges were written alike (up to spacing and
// "==" for "=").
func (r Range) Equal(o Range) bool { return r.src == o.src }
