package hostlist

import (
	"strconv"
	"strings"
)

// Encode writes names as one hostlist expression that Expand (and Slurm:
// srun --nodelist, scontrol show hostnames) turns back into the same
// names in the same order, for a command line: consecutive names that
// differ only in a trailing number share a bracket (gpu00001 ...
// gpu16384 is gpu[00001-16384]), zero padding kept. Unlike Compress it
// neither sorts nor drops duplicates: the scaling runs take the first k
// nodes and emulated ranks are placed by position, so names are only
// merged where they are already neighbours. Each name is checked with
// Valid first.
func Encode(names []string) (string, error) {
	var b strings.Builder
	var cur block
	flush := func() {
		if len(cur.parts) == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		cur.write(&b)
		cur = block{}
	}
	for _, n := range names {
		if err := Valid(n); err != nil {
			return "", err
		}
		prefix, digits := splitNumber(n)
		if digits == "" {
			flush()
			cur = block{literal: true, prefix: n, parts: []part{{}}}
			flush()
			continue
		}
		v, _ := strconv.ParseInt(digits, 10, 64)
		if len(cur.parts) == 0 || cur.literal || cur.prefix != prefix {
			flush()
			cur = block{prefix: prefix}
		}
		if last := &cur.parts; len(*last) > 0 {
			p := &(*last)[len(*last)-1]
			if v == p.hi+1 && pad64(v, p.width) == digits {
				p.hi = v
				continue
			}
		}
		cur.parts = append(cur.parts, part{lo: v, hi: v, width: len(digits)})
	}
	flush()
	return b.String(), nil
}

// block is a run of names with one prefix, or one name without a number.
type block struct {
	literal bool
	prefix  string
	parts   []part
}

// part is lo..hi, each written with at least width digits.
type part struct {
	lo, hi int64
	width  int
}

func (k block) write(b *strings.Builder) {
	b.WriteString(k.prefix)
	if k.literal {
		return
	}
	if len(k.parts) == 1 && k.parts[0].lo == k.parts[0].hi {
		b.WriteString(pad64(k.parts[0].lo, k.parts[0].width))
		return
	}
	b.WriteByte('[')
	for i, p := range k.parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(pad64(p.lo, p.width))
		if p.hi != p.lo {
			b.WriteByte('-')
			b.WriteString(pad64(p.hi, p.width))
		}
	}
	b.WriteByte(']')
}

// splitNumber cuts a name's trailing number off. A name without a prefix
// (all digits) or with a number too long to count is kept whole: it has
// no number to share a bracket with.
func splitNumber(name string) (prefix, digits string) {
	prefix, digits = split(name)
	if prefix == "" || len(digits) > maxDigits {
		return name, ""
	}
	return prefix, digits
}
