package results

import (
	"fmt"
	"strconv"
	"strings"
)

// Line renders a metric as one readable line for system-out.
func (m Metric) Line() string {
	var b strings.Builder
	b.WriteString(m.Name)
	if m.Subject != "" {
		b.WriteString(" [" + m.Subject + "]")
	}
	b.WriteString(": " + FormatValue(m.Value))
	if m.Unit != "" {
		b.WriteString(" " + m.Unit)
	}
	if m.Baseline != nil {
		b.WriteString(", baseline " + FormatValue(*m.Baseline))
	}
	if m.DeltaPct != nil {
		b.WriteString(fmt.Sprintf(", delta %+.1f%%", *m.DeltaPct))
	}
	if m.Verdict != "" {
		b.WriteString(", " + m.Verdict)
	}
	return b.String()
}

// FormatValue renders a metric value with six significant digits.
func FormatValue(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// SizeString renders a message size in binary units: "2 GiB", "256 MiB",
// "8 B"; sizes that are not a whole number of the unit stay in bytes.
func SizeString(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// AllocationNode names the report entry of the scaling suite, which
// belongs to no single node; the multi-node runs (Results.Runs) are its.
const AllocationNode = "allocation"

// ContainerSuffix names the node entry of a run inside the workload's
// container next to the host's ("node7" and "node7-container").
const ContainerSuffix = "-container"

// SuiteCompare names the suite of a before/after comparison (gdrcheck
// compare, --compare-to). A drain skips it: a change since the last run
// is news, not a broken node; the node suites judge that.
const SuiteCompare = "compare"
