package hostlist

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MaxNodes is the largest allocation gdrcheck is built for: 16,384
// hosts of 8 GPUs, more than the largest clusters put in one job. Node
// lists (--nodes, --nodes-file, a job's node list) stop there.
const MaxNodes = 16384

// MaxNames caps how many names one list may expand to: a typo such as
// gpu[1-999999999] is refused before it is held, its count computed
// from the range's ends.
const MaxNames = MaxNodes

// MaxName is the longest node name accepted (Linux allows 64 bytes for a
// host name; Slurm does not limit NodeName much further).
const MaxName = 255

// maxDigits keeps a range's numbers, and one past them, inside an int64;
// a longer run of digits is part of the name, not a number to count.
const maxDigits = 18

// ErrName is wrapped by every error about a node name.
var ErrName = errors.New("not a node name")

// Valid checks one node name.
func Valid(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrName)
	}
	if len(name) > MaxName {
		return fmt.Errorf("%w: %.40q... is %d bytes, over %d", ErrName, name, len(name), MaxName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '-' && c != '_') {
			return fmt.Errorf("%w: %q (a letter or digit, then letters, digits, '.', '-' or '_')", ErrName, name)
		}
	}
	return nil
}

// Expand turns a hostlist expression into its names, in the order
// written: "gpu[01-03,07],login" is gpu01 gpu02 gpu03 gpu07 login. A
// range keeps the width of its first number (gpu[0009-0010] is gpu0009
// gpu0010; gpu[9-10] is gpu9 gpu10), text may follow a bracket
// (node[1-2]-ib), and several brackets in one name multiply. Every name
// is checked with Valid; duplicates are kept (see Unique).
func Expand(expr string) ([]string, error) {
	var out []string
	items, err := splitTop(expr)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		names, err := expandItem(item, MaxNames-len(out))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", expr, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits at the commas outside brackets.
func splitTop(expr string) ([]string, error) {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(expr); i++ {
		switch expr[i] {
		case '[':
			if depth++; depth > 1 {
				return nil, fmt.Errorf("%q: brackets inside brackets", expr)
			}
		case ']':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("%q: ']' without '['", expr)
			}
		case ',':
			if depth == 0 {
				items = append(items, expr[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", expr)
	}
	items = append(items, expr[start:])
	for _, it := range items {
		if it == "" {
			return nil, fmt.Errorf("%q: an empty name", expr)
		}
	}
	return items, nil
}

// expandItem expands one name with brackets, at most limit names.
func expandItem(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if err := Valid(item); err != nil {
			return nil, err
		}
		if limit < 1 {
			return nil, tooMany()
		}
		return []string{item}, nil
	}
	end := open + strings.IndexByte(item[open:], ']')
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	nums, err := expandRanges(ranges, limit)
	if err != nil {
		return nil, err
	}
	// What follows the bracket, itself possibly with brackets, is expanded
	// once and reused for every number.
	tails := []string{""}
	if rest != "" {
		if tails, err = expandItemTail(rest, limit/len(nums)); err != nil {
			return nil, err
		}
	}
	if len(nums)*len(tails) > limit {
		return nil, tooMany()
	}
	out := make([]string, 0, len(nums)*len(tails))
	for _, n := range nums {
		for _, t := range tails {
			name := prefix + n + t
			if err := Valid(name); err != nil {
				return nil, err
			}
			out = append(out, name)
		}
	}
	return out, nil
}

// expandItemTail expands the text after a bracket, which need not be a
// name by itself ("-ib").
func expandItemTail(rest string, limit int) ([]string, error) {
	// A leading letter makes the tail a name Valid accepts; it is cut off
	// again below.
	names, err := expandItem("x"+rest, limit)
	if err != nil {
		return nil, err
	}
	for i := range names {
		names[i] = names[i][1:]
	}
	return names, nil
}

// expandRanges expands "01-03,07" into its numbers as written.
func expandRanges(s string, limit int) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := number(lo)
		b, err2 := number(hi)
		if err1 != nil || err2 != nil || a > b {
			return nil, fmt.Errorf("[%s]: %q is not a number or a range like 1-8 (numbers of at most %d digits)", s, part, maxDigits)
		}
		// Counted before it expands; counting up from a rather than
		// to b cannot overflow where b is the largest int64.
		n := b - a
		if n >= int64(limit-len(out)) {
			return nil, tooMany()
		}
		for i := int64(0); i <= n; i++ {
			out = append(out, pad64(a+i, len(lo)))
		}
	}
	return out, nil
}

func number(s string) (int64, error) {
	if s == "" || len(s) > maxDigits || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// pad64 writes k with at least width digits, as Slurm does.
func pad64(k int64, width int) string {
	s := strconv.FormatInt(k, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

func tooMany() error {
	return fmt.Errorf("more than %d names, the largest allocation gdrcheck is built for", MaxNames)
}

// Unique refuses a list that names a node twice.
func Unique(names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("%q named twice", n)
		}
		seen[n] = true
	}
	return nil
}

// ExpandAll expands each expression (a flag given several times, or the
// lines of a file) and refuses a node named twice.
func ExpandAll(exprs []string) ([]string, error) {
	var out []string
	for _, e := range exprs {
		names, err := Expand(e)
		if err != nil {
			return nil, err
		}
		if len(out)+len(names) > MaxNames {
			return nil, tooMany()
		}
		out = append(out, names...)
	}
	if err := Unique(out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadFile reads a node file: one name, or one hostlist expression, a
// line; blank lines and lines starting with '#' are skipped. The names
// are checked as Expand checks them and may not repeat.
func ReadFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	// One line is one name, or an expression no longer than Slurm writes.
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var exprs []string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(exprs) >= MaxNames {
			return nil, fmt.Errorf("%s: %w", path, tooMany())
		}
		exprs = append(exprs, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	names, err := ExpandAll(exprs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no node names", path)
	}
	return names, nil
}

// WriteFile writes names one a line, for ReadFile and for srun's
// --nodelist=FILE; each name is checked first, so no line can hold two.
func WriteFile(path string, names []string) error {
	var b strings.Builder
	for _, n := range names {
		if err := Valid(n); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
