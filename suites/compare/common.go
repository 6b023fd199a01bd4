package compare

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// ErrNoNodeInCommon is wrapped by Common's refusal of two runs that share
// no node: comparing them would compare nothing and pass.
var ErrNoNodeInCommon = errors.New("no node in common")

// Common refuses two runs with no node in common. Nodes pair by name,
// byte for byte, as Slurm matches them: slurmctld finds a node record by
// its exact name (src/common/node_conf.c:1015, xhash_get_str, hashed and
// compared over strlen bytes, src/common/xhash.c:91,107) and NodeHostName
// aliases with xstrcmp (src/common/read_config.c:2288, :2327), so gpu1
// and GPU1 are two nodes. The allocation's cross-node entry is no node;
// a run of one node pairs with a run before of one node whatever its
// name (Amend: a host renamed, two recordings of one machine).
func Common(before, after *results.Results) error {
	b, a := nodeNames(before), nodeNames(after)
	if len(b) == 1 && len(a) == 1 && len(before.Nodes) == 1 && len(after.Nodes) == 1 {
		return nil
	}
	for _, n := range a {
		if slices.Contains(b, n) {
			return nil
		}
	}
	why := ""
	for _, n := range a {
		if i := slices.IndexFunc(b, func(m string) bool { return strings.EqualFold(m, n) }); i >= 0 {
			why = fmt.Sprintf("; %q and %q differ in case only, and Slurm's node names are case-sensitive (src/common/node_conf.c:1015): compare runs of the same nodes under the same names", b[i], n)
			break
		}
	}
	return fmt.Errorf("%w: the run before has %s, the run after %s: nothing would be compared%s",
		ErrNoNodeInCommon, listNames(b), listNames(a), why)
}

// nodeNames are a run's node names, the allocation's entry left out.
func nodeNames(r *results.Results) []string {
	var out []string
	for _, n := range r.Nodes {
		if n.Name != results.AllocationNode {
			out = append(out, n.Name)
		}
	}
	return out
}

func listNames(names []string) string {
	switch {
	case len(names) == 0:
		return "no node"
	case len(names) > 4:
		return fmt.Sprintf("%s and %d more", strings.Join(names[:4], ", "), len(names)-4)
	}
	return strings.Join(names, ", ")
}
