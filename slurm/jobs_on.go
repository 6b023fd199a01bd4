package slurm

import (
	"context"
	"fmt"
	"strings"
)

// OtherJobsOn names the jobs other than except that hold the node now
// (running, or ending: COMPLETING); "" when there are none. An epilog asks
// it before a deep run: its own job is still COMPLETING then.
func (c Client) OtherJobsOn(ctx context.Context, node, except string) (string, error) {
	out, err := c.run(ctx, nil, "squeue", "-h", "-w", node, "-t", "RUNNING,COMPLETING,CONFIGURING,SUSPENDED", "-o", "%A")
	if err != nil {
		return "", err
	}
	var others []string
	for _, id := range strings.Fields(string(out)) {
		if id != except {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return "", nil
	}
	return fmt.Sprintf("job(s) %s on %s", strings.Join(others, ","), node), nil
}
