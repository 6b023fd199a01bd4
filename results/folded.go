package results

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// A merged job's results.json (schema v2) also holds its nodes as the
// reports take them, folded (fold.go), under "groups": one entry a line,
// each group's representative (slim) followed by its members (lite).
// ReadFolded takes them from there, so `gdrcheck report` of a job of
// 16,384 nodes reads a few MB, never the files the refs name.

// foldedEntry is one entry of "groups".
type foldedEntry struct {
	Node
	// Cause is set on a group's representative: its Group.Cause.
	Cause *string `json:"group_cause,omitempty"`
	// Member marks a member of the representative before it.
	Member bool `json:"group_member,omitempty"`
}

// EndFolded is End with folded, the nodes as a Folder made them, written
// under "groups".
func (e *Encoder) EndFolded(head *Results, folded []Node) error {
	e.folded = folded
	e.groups = true
	return e.End(head)
}

// writeGroups writes e.folded under "groups".
func (e *Encoder) writeGroups() {
	e.write("  \"groups\": [")
	first := true
	put := func(fe foldedEntry) {
		if !first {
			e.write(",")
		}
		first = false
		e.write("\n    ")
		b, err := json.Marshal(fe)
		if err != nil {
			e.err = fmt.Errorf("encoding results: %w", err)
			return
		}
		if e.err == nil {
			_, e.err = e.w.Write(b)
		}
	}
	for _, n := range e.folded {
		fe := foldedEntry{Node: n.Slim()}
		if g := n.Group; g != nil {
			fe.Cause = &g.Cause
			put(fe)
			for _, m := range g.Members {
				put(foldedEntry{Node: m.Slim(), Member: true})
			}
			continue
		}
		put(fe)
	}
	if !first {
		e.write("\n  ")
	}
	e.write("],\n")
}

// decodeGroups reads "groups" into r.groups.
func decodeGroups(dec *docDecoder, r *Results) error {
	if err := expectDelim(dec, '['); err != nil {
		return err
	}
	r.groups = []Node{}
	count := 0
	for dec.PeekKind() != ']' {
		if count++; count > MaxNodes {
			return &offsetError{dec.InputOffset(), fmt.Errorf("more than %d folded nodes: %w", MaxNodes, bounded.ErrTooLarge)}
		}
		var fe foldedEntry
		where := fmt.Sprintf("groups[%d]", count-1)
		if err := decodeValue(dec, &fe, where); err != nil {
			return err
		}
		// Lite entries may keep nothing but a name and a status; the
		// node entries are checked in full.
		if err := checkNamed(fe.Node, where); err != nil {
			return &offsetError{dec.InputOffset(), err}
		}
		n := fe.Node
		switch {
		case fe.Member:
			last := len(r.groups) - 1
			if last < 0 || r.groups[last].Group == nil {
				return &offsetError{dec.InputOffset(), fmt.Errorf("%s (named %q): a group member after no group", where, bounded.ClipString(n.Name, 80))}
			}
			g := r.groups[last].Group
			g.Members = append(g.Members, n)
			continue
		case fe.Cause != nil:
			n.Group = &Group{Cause: *fe.Cause}
		}
		r.groups = append(r.groups, n)
	}
	if _, err := dec.ReadToken(); err != nil {
		return syntaxAt(dec, err)
	}
	return nil
}

// ReadFolded reads a results.json as a merged job's reports take it:
// slimmed, and folded past FoldAbove nodes (fold.go). A merged job's
// own "groups" are taken as they are, once they name the same nodes as
// its entries, without reading the files its refs name.
func ReadFolded(path string) (*Results, error) {
	f := NewFolder(0)
	var names []string
	refs := false
	keep := func(n Node) (Node, error) { refs = true; return n, nil }
	r, err := scanPath(path, func(n Node) error {
		names = append(names, n.Name)
		if n.Ref == "" {
			f.Add(n)
		}
		return nil
	}, keep)
	if err != nil {
		return nil, err
	}
	switch {
	case r.groups != nil:
		r.Nodes, r.groups = r.groups, nil
		if err := sameNodes(r, names); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return r, nil
	case refs:
		// Refs without groups (written by hand): read them.
		f = NewFolder(0)
		if r, err = Scan(path, func(n Node) error { f.Add(n); return nil }); err != nil {
			return nil, err
		}
	}
	r.Nodes = f.Nodes()
	return r, nil
}

// sameNodes refuses groups that do not stand for the entries named.
func sameNodes(r *Results, names []string) error {
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	bad := ""
	r.Each(func(n Node) {
		if count[n.Name]--; count[n.Name] < 0 && bad == "" {
			bad = n.Name
		}
	})
	if bad == "" && r.NodeCount() != len(names) {
		bad = "(a node of the entries)"
	}
	if bad != "" {
		return fmt.Errorf("its groups do not stand for its node entries: %q is in one and not the other", bounded.ClipString(bad, 80))
	}
	return nil
}

// scanPath is Scan with resolve for its refs.
func scanPath(path string, visit func(Node) error, resolve func(Node) (Node, error)) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return scanFile(f, path, -1, visit, resolve)
}
