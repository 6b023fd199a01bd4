// Package hostlist reads and writes node lists in Slurm's hostlist form
// (gpu[0001-0064,0070],login1), which `scontrol show hostnames` expands:
// a list of 16,384 names reads, and travels, as a few dozen bytes. Joined
// by commas, 16,384 eight-character names are 147 KB, over Linux's 128 KiB
// limit on one argv or environment string (MAX_ARG_STRLEN): the kernel
// refuses the exec with E2BIG.
//
// Compress writes a list for people (sorted, duplicates dropped); Encode
// writes one for a command line, to be expanded back to the same names in
// the same order (Expand). Node names come from Slurm, users and files, so
// Encode, Expand and the node files check every name: a letter or digit,
// then letters, digits, '.', '-' or '_'. Nothing that could split a list
// (',', '[', ']', space, newline) or read as an option (a leading '-')
// gets through.
package hostlist

import (
	"sort"
	"strconv"
	"strings"
)

// Compress writes names as a hostlist. Names that end in digits are
// grouped by the text before the digits and the digits' width (so zero
// padding survives: gpu0009,gpu0010 is gpu[0009-0010]), each group's
// numbers sorted and joined into ranges; the groups keep the order their
// first name had. A name holding a character that has a meaning in a
// hostlist ('[', ']', ',', or white space), or one of digits alone, is
// written as it is, alone.
func Compress(names []string) string {
	type group struct {
		prefix string
		width  int
		nums   []int
	}
	var order []string // a group key, or a name kept whole
	groups := map[string]*group{}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		prefix, digits := split(n)
		v, err := strconv.Atoi(digits)
		// A name of digits alone is kept whole too: its group's key
		// would read as a whole name's ("\x00" + the width).
		if prefix == "" || digits == "" || err != nil || len(digits) > 9 || strings.ContainsAny(n, "[],") || strings.ContainsFunc(n, isSpace) {
			order = append(order, "\x00"+n)
			continue
		}
		// Zero-padded numbers keep their width (gpu0009,gpu0010 is
		// gpu[0009-0010]); unpadded ones of any length are one group
		// (node9,node10 is node[9-10]).
		width := 0
		if len(digits) > 1 && digits[0] == '0' {
			width = len(digits)
		}
		key := prefix + "\x00" + strconv.Itoa(width)
		g, ok := groups[key]
		if !ok {
			g = &group{prefix: prefix, width: width}
			groups[key] = g
			order = append(order, key)
		}
		g.nums = append(g.nums, v)
	}
	// A number as long as a padded group's (gpu10000 beside gpu00001)
	// belongs to it: gpu[00001-10000].
	for _, g := range groups {
		u, ok := groups[g.prefix+"\x000"]
		if g.width == 0 || !ok {
			continue
		}
		kept := u.nums[:0]
		for _, v := range u.nums {
			if len(strconv.Itoa(v)) == g.width {
				g.nums = append(g.nums, v)
			} else {
				kept = append(kept, v)
			}
		}
		u.nums = kept
	}
	var b strings.Builder
	first := true
	for _, key := range order {
		if g, ok := groups[key]; ok && len(g.nums) == 0 {
			continue
		}
		i := 1
		if first {
			i, first = 0, false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		if name, whole := strings.CutPrefix(key, "\x00"); whole {
			b.WriteString(name)
			continue
		}
		g := groups[key]
		b.WriteString(g.prefix)
		if len(g.nums) == 1 {
			b.WriteString(pad(g.nums[0], g.width))
			continue
		}
		sort.Ints(g.nums)
		b.WriteByte('[')
		for j := 0; j < len(g.nums); {
			k := j
			for k+1 < len(g.nums) && g.nums[k+1] == g.nums[k]+1 {
				k++
			}
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(pad(g.nums[j], g.width))
			if k > j {
				b.WriteByte('-')
				b.WriteString(pad(g.nums[k], g.width))
			}
			j = k + 1
		}
		b.WriteByte(']')
	}
	return b.String()
}

// split cuts the trailing digits off a name.
func split(n string) (prefix, digits string) {
	i := len(n)
	for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
		i--
	}
	return n[:i], n[i:]
}

func pad(v, width int) string {
	s := strconv.Itoa(v)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}
