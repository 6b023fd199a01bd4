package suites

import (
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// FailIf fails the spec with one line per finding. The first line is short
// and stable, so the same failure groups together across runs in Jenkins;
// the full list follows.
func FailIf(findings []string) {
	if len(findings) == 0 {
		return
	}
	msg := findings[0]
	if len(findings) > 1 {
		msg = fmt.Sprintf("%s (and %d more)\n%s", findings[0], len(findings)-1, strings.Join(findings, "\n"))
	}
	ginkgo.Fail(msg, 1)
}

// GPUName names a GPU in failure messages: "GPU 3 0000:39:00.0", or its bus
// id alone when NVML did not see it.
func GPUName(g node.GPU) string {
	if g.Index < 0 {
		return "GPU " + g.BusID
	}
	return fmt.Sprintf("GPU %d %s", g.Index, g.BusID)
}
