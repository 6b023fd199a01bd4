package bounded

import (
	"bytes"
	"regexp"
)

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

var (
	mpiRe     = regexp.MustCompile(`^\[(\d+),(\d+)\]<(?:stdout|stderr)>: ?`)
	rayRe     = regexp.MustCompile(`^\(([^()]*\bpid=\d+[^()]*)\) `)
	rayRankRe = regexp.MustCompile(`\brank=(\d+)`)
	torchRe   = regexp.MustCompile(`^\[(?:rank|default)(\d+)\]: ?`)
	kubectlRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) `)
	composeRe = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*)\s+\| `)
	srunRe    = regexp.MustCompile(`^(\d+): `)
	pdshRe    = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*): `)
	// toolLineRe is what follows an "N: " or "host: " prefix when it is
	// one: a "#" header or footer, a table row, an NCCL "host:pid:tid"
	// line, "NCCL version", a perftest banner or dashed line, or a UCX
	// line ("[1700000000.000001] [host:pid:tid]", or its error handler's
	// "[host:pid:tid:tid]").
	toolLineRe = regexp.MustCompile(`^(?:#|\s*\d+\s+\d+\s|\s*-{10}|\s*#bytes|\s*RDMA_|[^\s:]+:\d+:\d+ \[|NCCL version|\s*\*{5}|\[\d+\.\d+\]\s+\[[^\]]*\]|\[[^\]\s:]+:\d+\s*:\d+:\d+\])`)
)

// Tag is what a stripped prefix names: its family, and the rank or host
// it gives ("" when it names neither).
type Tag struct {
	Family string
	Rank   string
	Host   string
}

// StripPrefix removes the launcher or collector prefixes before a line,
// nested ones too (Ray before mpirun, kubectl before anything), and says
// what the outermost named. A line without one comes back unchanged.
func StripPrefix(line []byte) ([]byte, Tag) {
	var tag Tag
	for range 4 { // nested prefixes: a few at most
		rest, t, ok := stripOne(line)
		if !ok {
			break
		}
		if tag.Family == "" || tag.Family == PrefixKubectl {
			tag.Family = t.Family
		}
		if tag.Rank == "" {
			tag.Rank = t.Rank
		}
		if tag.Host == "" {
			tag.Host = t.Host
		}
		line = rest
	}
	return line, tag
}

func stripOne(line []byte) ([]byte, Tag, bool) {
	if len(line) == 0 {
		return line, Tag{}, false
	}
	switch line[0] {
	case '[':
		if m := mpiRe.FindSubmatch(line); m != nil {
			return line[len(m[0]):], Tag{Family: PrefixMPI, Rank: string(m[2])}, true
		}
		if m := torchRe.FindSubmatch(line); m != nil {
			return line[len(m[0]):], Tag{Family: PrefixTorch, Rank: string(m[1])}, true
		}
		return line, Tag{}, false
	case '(':
		if m := rayRe.FindSubmatch(line); m != nil {
			t := Tag{Family: PrefixRay}
			if r := rayRankRe.FindSubmatch(m[1]); r != nil {
				t.Rank = string(r[1])
			}
			return line[len(m[0]):], t, true
		}
		return line, Tag{}, false
	}
	if m := kubectlRe.Find(line); m != nil {
		return line[len(m):], Tag{Family: PrefixKubectl}, true
	}
	if m := composeRe.FindSubmatch(line); m != nil {
		return line[len(m[0]):], Tag{Family: PrefixCompose, Host: string(m[1])}, true
	}
	if m := srunRe.FindSubmatch(line); m != nil && toolLineRe.Match(line[len(m[0]):]) {
		return line[len(m[0]):], Tag{Family: PrefixSrun, Rank: string(m[1])}, true
	}
	if m := pdshRe.FindSubmatch(line); m != nil && !bytes.Contains(m[1], []byte(":")) && toolLineRe.Match(line[len(m[0]):]) {
		return line[len(m[0]):], Tag{Family: PrefixPdsh, Host: string(m[1])}, true
	}
	return line, Tag{}, false
}

// prefixes counts the prefix families a reader stripped.
type prefixes struct {
	on     bool
	counts map[string]int
	last   Tag
}

// StripPrefixes makes Next strip launcher and collector prefixes (see
// StripPrefix); Prefix then says which family the input used.
func (l *Lines) StripPrefixes() { l.pfx.on = true }

// strip applies the prefix stripping to a line Next is about to return.
func (l *Lines) strip(b []byte) []byte {
	if !l.pfx.on {
		return b
	}
	rest, t := StripPrefix(b)
	l.pfx.last = t
	if t.Family != "" {
		if l.pfx.counts == nil {
			l.pfx.counts = map[string]int{}
		}
		l.pfx.counts[t.Family]++
	}
	return rest
}

// Tag is the prefix of the line last returned: its family and the rank or
// host it named; zero when the line had none.
func (l *Lines) Tag() Tag { return l.pfx.last }

// Prefix is the family of prefix most lines of the input had, "" when none
// had one. Output interleaved from several ranks shares one family.
func (l *Lines) Prefix() string {
	best, n := "", 0
	for f, c := range l.pfx.counts {
		if c > n || c == n && f < best {
			best, n = f, c
		}
	}
	return best
}
