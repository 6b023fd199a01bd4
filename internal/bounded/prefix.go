package bounded

// Prefixes launchers and log collectors put before each line of a tool's
// output. Each family is recognised by a shape no tool line starts with,
// except "N: " (srun -l) and "host: " (pdsh, clush), which nccl-tests' own
// "host: Test NCCL failure" and NCCL's "host:pid:tid" resemble: those two
// are stripped only when what follows is a line a tool writes.
const (
	PrefixMPI     = "mpirun"   // mpirun --tag-output: "[1,0]<stdout>:"
	PrefixRay     = "ray"      // "(head, rank=0, pid=3808) ", "(RayWorkerWrapper pid=581, ip=...) "
	PrefixSrun    = "srun"     // srun -l: "0: "
	PrefixTorch   = "torchrun" // "[rank0]:", "[default0]:"
	PrefixPdsh    = "pdsh"     // pdsh, clush: "host: "
	PrefixKubectl = "kubectl"  // kubectl logs --timestamps: "2024-05-01T10:00:00.123456789Z "
	PrefixCompose = "compose"  // docker compose logs: "svc-1  | "
)

// The families by number, so that counting them per line is an array
// index rather than a map update; family 0 is none.
const (
	famNone = iota
	famMPI
	famRay
	famSrun
	famTorch
	famPdsh
	famKubectl
	famCompose
	famCount
)

var familyNames = [famCount]string{"", PrefixMPI, PrefixRay, PrefixSrun, PrefixTorch, PrefixPdsh, PrefixKubectl, PrefixCompose}

// Tag is what a stripped prefix names: its family, and the rank or host
// it gives ("" when it names neither).
type Tag struct {
	Family string
	Rank   string
	Host   string
}

// tagSpan is a Tag that still points into its line: the hot path (Lines)
// keeps it as is, and only Tag() turns it into strings.
type tagSpan struct {
	family     int
	rank, host []byte
}

func (t tagSpan) tag() Tag {
	return Tag{Family: familyNames[t.family], Rank: string(t.rank), Host: string(t.host)}
}

// StripPrefix removes the launcher or collector prefixes before a line,
// nested ones too (Ray before mpirun, kubectl before anything), and says
// what the outermost named. A line without one comes back unchanged.
func StripPrefix(line []byte) ([]byte, Tag) {
	rest, t := stripPrefix(line)
	return rest, t.tag()
}

// stripPrefix is StripPrefix with the tag left in the line. The matchers
// (prefix_match.go) are hand-written, as the regexps they replaced cost
// more than the rest of a line's parsing; prefix_test.go holds them to
// those regexps.
func stripPrefix(line []byte) ([]byte, tagSpan) {
	var tag tagSpan
	for range 4 { // nested prefixes: a few at most
		if len(line) == 0 || !mayStartPrefix[line[0]] {
			break // most lines: one table lookup
		}
		rest, t, ok := stripOne(line)
		if !ok {
			break
		}
		if tag.family == famNone || tag.family == famKubectl {
			tag.family = t.family
		}
		if len(tag.rank) == 0 {
			tag.rank = t.rank
		}
		if len(tag.host) == 0 {
			tag.host = t.host
		}
		line = rest
	}
	return line, tag
}

// mayStartPrefix holds the bytes a prefix can start with: "[", "(", and
// the letters and digits a host, a service, a rank or a date starts with.
var mayStartPrefix = func() (t [256]bool) {
	t['['], t['('] = true, true
	for c := range 256 {
		t[c] = t[c] || isAlnum(byte(c))
	}
	return t
}()

func stripOne(line []byte) ([]byte, tagSpan, bool) {
	switch line[0] {
	case '[':
		if n, rank := matchMPI(line); n > 0 {
			return line[n:], tagSpan{family: famMPI, rank: rank}, true
		}
		if n, rank := matchTorch(line); n > 0 {
			return line[n:], tagSpan{family: famTorch, rank: rank}, true
		}
		return line, tagSpan{}, false
	case '(':
		if n, inner := matchRay(line); n > 0 {
			return line[n:], tagSpan{family: famRay, rank: rayRank(inner)}, true
		}
		return line, tagSpan{}, false
	}
	if isDigit(line[0]) && hasAt(line, 4, "-") {
		if n := matchKubectl(line); n > 0 {
			return line[n:], tagSpan{family: famKubectl}, true
		}
	}
	// compose's "svc-1  | ", srun's "0: " and pdsh's "host: " start with
	// a name (srun's digits are one), told apart by the byte after it.
	name := nameLen(line)
	switch {
	case name == len(line):
	case isSpace(line[name]):
		if n := matchComposeAfter(line, name); n > 0 {
			return line[n:], tagSpan{family: famCompose, host: line[:name]}, true
		}
	case hasAt(line, name, ": ") && isToolLine(line[name+2:]):
		if digitsLen(line, 0) == name {
			return line[name+2:], tagSpan{family: famSrun, rank: line[:name]}, true
		}
		return line[name+2:], tagSpan{family: famPdsh, host: line[:name]}, true
	}
	return line, tagSpan{}, false
}

// prefixes counts the prefix families a reader stripped.
type prefixes struct {
	on     bool
	counts [famCount]int
	last   tagSpan
}

// StripPrefixes makes Next strip launcher and collector prefixes (see
// StripPrefix); Prefix then says which family the input used.
func (l *Lines) StripPrefixes() { l.pfx.on = true }

// strip applies the prefix stripping to a line Next is about to return.
func (l *Lines) strip(b []byte) []byte {
	if !l.pfx.on {
		return b
	}
	if unprefixed(b) {
		l.pfx.last = tagSpan{}
		l.pfx.counts[famNone]++
		return b
	}
	rest, t := stripPrefix(b)
	l.pfx.last = t
	l.pfx.counts[t.family]++
	return rest
}

// unprefixed reports that no prefix starts b, for most lines of a log and
// without stripOne's call and loop: b starts with no byte a prefix starts
// with, or with a letter and a name ([A-Za-z0-9_.-]*) followed by neither
// ": " (as NCCL's "host:pid:tid" is) nor spaces and "| ". false means
// maybe.
func unprefixed(b []byte) bool {
	if len(b) == 0 || !mayStartPrefix[b[0]] {
		return true
	}
	if b[0] == '[' {
		// "[1717282080.121144]" (UCX's time): no prefix. Of the two
		// that start with "[", mpirun's has a "," after its digits
		// and torchrun's a letter after "[".
		d := digitsLen(b, 1)
		return d > 0 && !hasAt(b, 1+d, ",")
	}
	if !isAlnum(b[0]) || isDigit(b[0]) {
		return false
	}
	i := 1
	for i < len(b) && isNameByte[b[i]] {
		i++
	}
	if i < len(b) && isSpace(b[i]) {
		// "CUDA device 0: ...": compose's "svc-1  | " only when a "| "
		// follows the spaces.
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		return !hasAt(b, i, "| ")
	}
	return i < len(b) && (b[i] != ':' || i+1 < len(b) && b[i+1] != ' ')
}

// Tag is the prefix of the line last returned: its family and the rank or
// host it named; zero when the line had none. Like the line, it is valid
// until the next call to Next.
func (l *Lines) Tag() Tag { return l.pfx.last.tag() }

// TagIs reports whether the prefix of the line last returned is t, without
// making Tag's strings: a parser that names each line's rank keeps the
// last Tag and makes a new one only when this says it changed.
func (l *Lines) TagIs(t Tag) bool {
	s := l.pfx.last
	return familyNames[s.family] == t.Family && string(s.rank) == t.Rank && string(s.host) == t.Host
}

// Prefix is the family of prefix most lines of the input had, "" when none
// had one. Output interleaved from several ranks shares one family.
func (l *Lines) Prefix() string {
	best, n := "", 0
	for f, c := range l.pfx.counts[famNone+1:] {
		name := familyNames[f+1]
		if c > n || c > 0 && c == n && name < best {
			best, n = name, c
		}
	}
	return best
}
