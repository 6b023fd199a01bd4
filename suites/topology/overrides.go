package topology

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites/overrides"
)

// The override audit lives with the topology specs because it judges
// settings against the topology's evidence (each GPU's path to each NIC),
// reads no GPU, and must run in the quick gate (--suites
// topology,kernel,bar1) where a hand-set NCCL_IB_HCA left from the last
// server SKU is caught before jobs are. The judgement itself is
// suites/overrides', which inventory and compare share.

// auditOverrides judges each inherited setting against the node: bad
// breaks the direct path (naming where it came from and the fix), notes
// fit or do not matter to the path.
func auditOverrides(ev *node.Evidence) (bad, notes []string) {
	o := ev.Overrides
	if o == nil {
		return nil, nil
	}
	for _, u := range o.Unreadable {
		bad = append(bad, "cannot read "+u+": a job would still read it")
	}
	for _, j := range overrides.Judge(ev) {
		where := j.Where()
		switch j.Verdict {
		case overrides.Shadowed:
			notes = append(notes, fmt.Sprintf("%s=%s (%s) is shadowed by an earlier setting", j.Name, j.Value, where))
		case overrides.NotJudged:
			notes = append(notes, fmt.Sprintf("MCA %s = %s (%s)", j.Name, j.Value, where))
		case overrides.Breaks:
			bad = append(bad, fmt.Sprintf("%s=%s (%s): %s", j.Name, j.Value, where, j.Why))
		case overrides.Ignored, overrides.Clamped:
			notes = append(notes, fmt.Sprintf("%s=%s (%s) is %s: %s", j.Name, j.Value, where, j.Verdict, j.Why))
		default:
			notes = append(notes, fmt.Sprintf("%s=%s (%s) fits this node", j.Name, j.Value, where))
		}
	}
	return bad, notes
}
