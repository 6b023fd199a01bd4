package results

import (
	"regexp"
	"strings"
)

// Folding is how a job of thousands of nodes stays readable and fits in
// memory: nodes that look alike (same status, same facts, the same state
// for every spec and, where something failed, the same cause) fold into
// one Group. The first node of a group stands for it in Results.Nodes
// with everything the reports draw (runs, metrics, GPUs); the others are
// kept lite: their name, times, reason and failed specs, which is what a
// per-node verdict (JUnit's failing cases, a drain) needs. A merged
// job's results.json keeps its nodes unfolded (in full, or refs to their
// own files) and the folding beside them, under "groups" (folded.go).

// FoldAbove is the node count above which a merged job is folded; jobs up
// to it keep one entry per node.
const FoldAbove = 8

// MaxGroups bounds the groups kept in full: past it, a node that fits no
// group is kept lite, so nodes that all differ cannot fill the memory.
const MaxGroups = 256

// Group is the alike nodes a representative stands for.
type Group struct {
	// Cause is what failed, the same on every member ("" when none
	// failed): the node's reason, or the first failed spec's suite and
	// message's first line, the node's own name written {node}.
	Cause string
	// Members are the nodes after the representative, lite.
	Members []Node
}

// Size is how many nodes n stands for.
func (n Node) Size() int {
	if n.Group == nil {
		return 1
	}
	return 1 + len(n.Group.Members)
}

// Names are the names of the nodes n stands for, itself first.
func (n Node) Names() []string {
	out := []string{n.Name}
	if n.Group != nil {
		for _, m := range n.Group.Members {
			out = append(out, m.Name)
		}
	}
	return out
}

// Each calls f on every node the results hold, representatives and the
// members they stand for (lite), group by group.
func (r *Results) Each(f func(Node)) {
	for _, n := range r.Nodes {
		f(n)
		if n.Group != nil {
			for _, m := range n.Group.Members {
				f(m)
			}
		}
	}
}

// NodeCount is how many nodes the results hold, folded or not.
func (r *Results) NodeCount() int {
	c := 0
	for _, n := range r.Nodes {
		c += n.Size()
	}
	return c
}

// Folded says whether some node stands for others.
func (r *Results) Folded() bool {
	for _, n := range r.Nodes {
		if n.Group != nil {
			return true
		}
	}
	return false
}

// Failed says whether the node failed or could not be evaluated.
func (n Node) Failed() bool { return n.Status != NodeEvaluated || n.Counts().Failed > 0 }

// Cause is the one line a person reads for what went wrong on the node:
// its reason where it was not evaluated, else its first failed spec; ""
// when nothing failed.
func (n Node) Cause() string {
	if n.Status != NodeEvaluated {
		return n.Status + ": " + ownName(n.Name, firstLine(n.Reason))
	}
	for _, s := range n.Suites {
		for _, sp := range s.Specs {
			if sp.Failed() {
				return s.Name + ": " + ownName(n.Name, firstLine(sp.Message))
			}
		}
	}
	return ""
}

// Failed says the spec failed (Ginkgo's failed, panicked, interrupted
// ...): anything but passed, skipped or pending.
func (sp Spec) Failed() bool {
	return sp.State != StatePassed && sp.State != StateSkipped && sp.State != StatePending
}

// ownName writes the node's own name in a message as {node}, so the same
// cause on two nodes reads the same.
func ownName(node, s string) string {
	if node == "" {
		return s
	}
	return strings.ReplaceAll(s, node, "{node}")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// numbers masks the numbers of a cause for grouping: "busbw 341.2 GB/s"
// on one node and "339.8" on the next are the same cause.
var numbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// foldKey is what alike nodes share; "" for a node that never folds.
func foldKey(n Node) string {
	if n.Name == AllocationNode {
		return ""
	}
	var b strings.Builder
	b.WriteString(n.Status)
	b.WriteByte(0)
	b.WriteString(n.Profile)
	for _, f := range n.Facts {
		if f.Name == "host_root" {
			continue // where the node was read from, not what it is
		}
		b.WriteByte(0)
		b.WriteString(f.Name)
		b.WriteByte('=')
		b.WriteString(f.Value)
	}
	for _, s := range n.Suites {
		b.WriteByte(0)
		b.WriteString(s.Name)
		for _, sp := range s.Specs {
			b.WriteByte(1)
			b.WriteString(sp.Name)
			b.WriteByte('=')
			b.WriteString(sp.State)
			if sp.SkipKind == SkipCannotRun {
				b.WriteString("+" + SkipCannotRun)
			}
			if len(sp.Warnings()) > 0 {
				b.WriteString("+warning")
			}
			if sp.Action != "" {
				b.WriteString("+" + string(sp.Action) + "/" + string(sp.Scope))
			}
		}
	}
	b.WriteByte(0)
	b.WriteString(numbers.ReplaceAllString(n.Cause(), "#"))
	return b.String()
}

// Lite keeps of a node what a per-node verdict needs: name, status,
// reason, times, facts, each failed spec with its message, location
// and the start of its output (MaxLiteOutput), and each suite that could
// not run with its skips (the exit code reads them).
func (n Node) Lite() Node {
	l := Node{Name: n.Name, Status: n.Status, Reason: n.Reason, Facts: n.Facts, Profile: n.Profile, Action: n.Action, Started: n.Started, Finished: n.Finished}
	for _, s := range n.Suites {
		if s.CannotRun() {
			l.Suites = append(l.Suites, s)
			continue
		}
		var failed []Spec
		for _, sp := range s.Specs {
			if !sp.Failed() {
				continue
			}
			sp.Output = truncateBytes(sp.Output, MaxLiteOutput)
			sp.Notes = nil
			var ms []Metric
			for _, m := range sp.Metrics {
				if m.Verdict == "fail" {
					ms = append(ms, m)
				}
			}
			sp.Metrics = ms
			failed = append(failed, sp)
		}
		if len(failed) > 0 {
			l.Suites = append(l.Suites, Suite{Name: s.Name, Specs: failed})
		}
	}
	return l
}

// MaxLiteOutput is how much of a failed spec's output a folded member
// keeps: the representative keeps all of it.
const MaxLiteOutput = 1 << 10

func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut between characters, so the rest stays UTF-8.
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "\n[... cut]"
}

// Folder folds nodes as they are read, one at a time: the first FoldAbove
// are kept as they are, and from the one after, every node is folded.
type Folder struct {
	nodes  []Node
	groups map[string]int // fold key -> index in nodes
	folded bool
	above  int
}

// NewFolder folds past above nodes (FoldAbove where above is 0; a
// negative above never folds).
func NewFolder(above int) *Folder {
	if above == 0 {
		above = FoldAbove
	}
	return &Folder{groups: map[string]int{}, above: above}
}

// Add takes the next node, slimmed.
func (f *Folder) Add(n Node) {
	n = n.Slim()
	if !f.folded {
		f.nodes = append(f.nodes, n)
		if f.above < 0 || len(f.nodes) <= f.above {
			return
		}
		kept := f.nodes
		f.nodes, f.folded = nil, true
		for _, k := range kept {
			f.fold(k)
		}
		return
	}
	f.fold(n)
}

func (f *Folder) fold(n Node) {
	key := foldKey(n)
	if key == "" {
		f.nodes = append(f.nodes, n)
		return
	}
	if i, ok := f.groups[key]; ok {
		g := f.nodes[i].Group
		g.Members = append(g.Members, n.Lite())
		return
	}
	if len(f.groups) >= MaxGroups {
		// Nodes that all differ: each is kept lite and alone, and no
		// key is kept for it, so they cost a few hundred bytes each.
		f.nodes = append(f.nodes, n.Lite())
		return
	}
	n.Group = &Group{Cause: n.Cause()}
	f.groups[key] = len(f.nodes)
	f.nodes = append(f.nodes, n)
}

// Nodes are the nodes as folded so far.
func (f *Folder) Nodes() []Node { return f.nodes }
