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
	return CommonSources(memory(before), memory(after))
}

// CommonSources is Common of two runs read node by node: only their
// names are read.
func CommonSources(before, after Source) error {
	b, a := nodeNames(before.Names()), nodeNames(after.Names())
	if len(b) == 1 && len(a) == 1 && before.Len() == 1 && after.Len() == 1 {
		return nil
	}
	inBefore := make(map[string]bool, len(b))
	for _, n := range b {
		inBefore[n] = true
	}
	for _, n := range a {
		if inBefore[n] {
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
func nodeNames(names []string) []string {
	var out []string
	for _, n := range names {
		if n != results.AllocationNode {
			out = append(out, n)
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
