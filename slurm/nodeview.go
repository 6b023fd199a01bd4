package slurm

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"
)

// NodeView is one `scontrol show node -o` record as the health loop
// reads it: the state's flags, the reason without the stamp Slurm adds,
// who set it and when, and the fields a good state can be published in.
type NodeView struct {
	Name string
	// Flags are the State's words: IDLE+DRAIN is [IDLE DRAIN]; a trailing
	// "*" (not responding, older releases) becomes NOT_RESPONDING.
	Flags      []string
	Reason     string    // "" where none; "none" is read as none
	ReasonUser string    // the user in Slurm's "[user@time]" stamp
	ReasonAt   time.Time // the stamp's time, zero where there is none
	Partitions []string
	// HasExtra and HasComment say whether this Slurm shows the node's
	// Extra (22.05+) and Comment fields, so they can be updated.
	HasExtra, HasComment bool
	Extra, Comment       string // "" for Slurm's (null)
}

// reasonStamp is the "[user@2026-12-04T00:12:34]" Slurm appends to a
// node's reason in `scontrol show node` (slurm_protocol_defs.c,
// slurm_sprint_node_table: "Reason=%s [%s@%s]").
var reasonStamp = regexp.MustCompile(`\s*\[([^\]@\s]*)@([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\]$`)

// ViewOf reads a record. Slurm prints the stamp in the controller's
// local time; it is read in this host's, which is the cluster's.
func ViewOf(r Record) NodeView {
	v := NodeView{Name: r["NodeName"]}
	for _, f := range strings.Split(strings.TrimSpace(r["State"]), "+") {
		if f == "" {
			continue
		}
		if t, ok := strings.CutSuffix(f, "*"); ok {
			f = t
			v.Flags = append(v.Flags, "NOT_RESPONDING")
		}
		v.Flags = append(v.Flags, strings.ToUpper(f))
	}
	reason := strings.TrimSpace(r["Reason"])
	if m := reasonStamp.FindStringSubmatchIndex(reason); m != nil {
		v.ReasonUser = reason[m[2]:m[3]]
		v.ReasonAt, _ = time.ParseInLocation("2006-01-02T15:04:05", reason[m[4]:m[5]], time.Local)
		reason = strings.TrimSpace(reason[:m[0]])
	}
	if reason != "none" && reason != "(null)" {
		v.Reason = reason
	}
	if p := strings.TrimSpace(r["Partitions"]); p != "" && p != "(null)" {
		v.Partitions = strings.Split(p, ",")
	}
	v.Extra, v.HasExtra = field(r, "Extra")
	v.Comment, v.HasComment = field(r, "Comment")
	return v
}

func field(r Record, key string) (string, bool) {
	s, ok := r[key]
	s = strings.TrimSpace(s)
	if s == "(null)" {
		s = ""
	}
	return s, ok
}

// Has says whether the state carries the flag (DRAIN, MAINT, DOWN).
func (v NodeView) Has(flag string) bool { return slices.Contains(v.Flags, flag) }

// Drained says the node is drained or draining.
func (v NodeView) Drained() bool { return v.Has("DRAIN") || v.Has("DRAINED") || v.Has("DRAINING") }

// Ours says the reason is gdrcheck's: it starts with DrainPrefix.
func (v NodeView) Ours() bool { return strings.HasPrefix(v.Reason, DrainPrefix) }

// Node reads one node's record.
func (c Client) Node(ctx context.Context, name string) (NodeView, bool, error) {
	recs, err := c.Nodes(ctx)
	if err != nil {
		return NodeView{}, false, err
	}
	for _, r := range recs {
		if r["NodeName"] == name {
			return ViewOf(r), true, nil
		}
	}
	return NodeView{}, false, nil
}

// UpdateNode is one `scontrol update NodeName=<name> <fields>` call:
// fields such as "State=DRAIN", "Reason=gdrcheck: ...", as argv words,
// never through a shell.
func (c Client) UpdateNode(ctx context.Context, name string, fields ...string) error {
	_, err := c.run(ctx, nil, "scontrol", append([]string{"update", "NodeName=" + name}, fields...)...)
	return err
}
