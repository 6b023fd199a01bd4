package slurm

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/results"
)

// mergeNodes merges each expected node's results.json, read ahead of
// the merge so reading overlaps writing.
func (mg *merger) mergeNodes(expected []string) error {
	next, stop := results.ReadAheadFunc(len(expected), func(i int) (*results.Results, error) {
		return mg.jd.readResults(nodeFile(expected[i], resultsFile))
	})
	defer stop()
	for i, name := range expected {
		r, err := next(i)
		if err != nil {
			if err := mg.add(missingNode(mg.jd, name, mg.steps, mg.opt.Note, err)); err != nil {
				return err
			}
			continue
		}
		if err := mg.mergeNode(name, r); err != nil {
			return err
		}
	}
	return nil
}

// mergeNode merges the results name filed: its own node, or an
// unevaluable one where the file is not its own.
func (mg *merger) mergeNode(name string, r *results.Results) error {
	if why := foreignResults(name, r); why != "" {
		// Never merged: it would count another node twice and
		// this one not at all.
		return mg.add(results.Node{Name: name, Status: results.NodeUnevaluable, Reason: fmt.Sprintf("%s %s; node %s's own results are missing", mg.jd.path(nodeFile(name, resultsFile)), why, name)})
	}
	for _, n := range r.Nodes {
		// Raw logs are relative to the node's own directory.
		for i := range n.Runs {
			if n.Runs[i].Log != "" {
				n.Runs[i].Log = filepath.Join(nodesDir, name, n.Runs[i].Log)
			}
		}
		if err := mg.addOwn(n); err != nil {
			return err
		}
	}
	res := mg.res
	if res.Tool.Version == "" {
		res.Tool.Version = r.Tool.Version
	}
	if res.Started.IsZero() || r.Started.Before(res.Started) {
		res.Started = r.Started
	}
	return nil
}

// foreignResults says why a node's results.json is not that node's: it
// must carry exactly one node, named as the node it is filed under (a
// copy of another node's file, or one naming a foreign node, is not);
// "" when it is the node's own.
func foreignResults(name string, r *results.Results) string {
	switch len(r.Nodes) {
	case 0:
		return "holds no node"
	case 1:
		if got := r.Nodes[0].Name; got != name {
			return fmt.Sprintf("reports node %q, not %s: a copy of another node's results or a foreign node's", bounded.ClipString(got, maxNodeName), name)
		}
		return ""
	}
	names := make([]string, 0, 3)
	for _, n := range r.Nodes[:min(len(r.Nodes), 3)] {
		names = append(names, fmt.Sprintf("%q", bounded.ClipString(n.Name, maxNodeName)))
	}
	return fmt.Sprintf("holds %d nodes (%s), where a node's results carry exactly one", len(r.Nodes), strings.Join(names, ", "))
}

// maxNodeName is how much of a foreign node name a reason quotes: more
// than any host name (253 bytes).
const maxNodeName = 256
