package suites

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// GPUName names a GPU in failure messages: "GPU 3 0000:39:00.0", or its bus
// id alone when NVML did not see it.
func GPUName(g node.GPU) string {
	if g.Index < 0 {
		return "GPU " + g.BusID
	}
	return fmt.Sprintf("GPU %d %s", g.Index, g.BusID)
}
