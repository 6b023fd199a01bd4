package slurm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// DrainPrefix starts every drain reason gdrcheck writes, so it can tell
// its own drains from everyone else's and never resume those.
const DrainPrefix = "gdrcheck:"

// drained says whether a node is drained or draining, and why.
func drained(r Record) (bool, string) {
	state := r["State"]
	return strings.Contains(state, "DRAIN"), strings.TrimSpace(r["Reason"])
}

// DrainResult says what Drain did to one node.
type DrainResult struct {
	Node   string
	Action string // drained, skipped
	Why    string
}

// Drain drains the failed nodes with a reason "gdrcheck: <short reason>".
// A node already drained for another reason is left alone (its reason is
// someone's evidence); one drained by gdrcheck gets the new reason.
func (c Client) Drain(ctx context.Context, failed map[string]string) ([]DrainResult, error) {
	recs, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]Record{}
	for _, r := range recs {
		byName[r["NodeName"]] = r
	}
	var out []DrainResult
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		r, ok := byName[name]
		if !ok {
			out = append(out, DrainResult{name, "skipped", "Slurm does not know the node"})
			continue
		}
		if d, reason := drained(r); d && !strings.HasPrefix(reason, DrainPrefix) {
			out = append(out, DrainResult{name, "skipped", "already drained by someone else: " + reason})
			continue
		}
		reason := DrainPrefix + " " + shortReason(failed[name])
		if _, err := c.run(ctx, nil, "scontrol", "update", "NodeName="+name, "State=DRAIN", "Reason="+reason); err != nil {
			return out, err
		}
		out = append(out, DrainResult{name, "drained", reason})
	}
	return out, nil
}

// Undrain resumes only the nodes drained by gdrcheck; names limits it to
// those nodes.
func (c Client) Undrain(ctx context.Context, names []string) ([]DrainResult, error) {
	recs, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []DrainResult
	for _, r := range recs {
		name := r["NodeName"]
		if len(want) > 0 && !want[name] {
			continue
		}
		d, reason := drained(r)
		switch {
		case !d:
			if want[name] {
				out = append(out, DrainResult{name, "skipped", "not drained"})
			}
			continue
		case !strings.HasPrefix(reason, DrainPrefix):
			out = append(out, DrainResult{name, "skipped", "drained by someone else: " + reason})
			continue
		}
		if _, err := c.run(ctx, nil, "scontrol", "update", "NodeName="+name, "State=RESUME"); err != nil {
			return out, err
		}
		out = append(out, DrainResult{name, "resumed", reason})
	}
	return out, nil
}

// maxReason is the longest drain reason gdrcheck writes after its prefix.
const maxReason = 120

// DrainReason is a cause shortened to leave room for the action it ends
// with (" action=RESET_GPU"), which remediation pipelines parse: the
// cause is a message from the node and is clipped, the action never. A
// cause without a valid action ends in none.
func DrainReason(cause string, a results.Action) string {
	if !a.Valid() {
		return shortReason(cause)
	}
	tail := " action=" + string(a)
	return clipReason(cause, maxReason-len(tail)) + tail
}

// shortReason keeps a drain reason to one line Slurm accepts.
func shortReason(s string) string { return clipReason(s, maxReason) }

func clipReason(s string, limit int) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == '"' {
			return ' '
		}
		return r
	}, s)
	if len(s) > limit {
		s = s[:limit-3] + "..."
	}
	return fmt.Sprint(strings.TrimSpace(s))
}
