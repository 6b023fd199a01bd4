package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/perftest"
)

// MeasureRails runs ib_write_bw in loopback through each rail NIC with
// 8 MiB messages, the size vendors quote, for every memory; fabric, when
// set, samples the port counters around each run.
func MeasureRails(ctx context.Context, r PerftestRunner, rails []perftest.Rail, fabric func() (node.FabricSample, error), progress io.Writer) []perftest.RailRun {
	if progress == nil {
		progress = io.Discard
	}
	var out []perftest.RailRun
	for _, rail := range rails {
		for _, mem := range perftest.RailMemories {
			if ctx.Err() != nil {
				return out
			}
			fmt.Fprintf(progress, "perftest: ib_write_bw through %s, %s memory (GPU %d) ...\n", rail.NIC, mem, rail.GPU)
			spec := perftest.Spec{Binary: "ib_write_bw", Device: rail.NIC, Mem: mem, GPU: rail.GPU, Size: 8 << 20, ReportGbits: true}
			var before node.FabricSample
			var berr error
			if fabric != nil {
				before, berr = fabric()
			}
			res := r.Loopback(ctx, spec)
			run := perftest.RailRun{Rail: rail, Mem: mem, Result: res}
			if fabric != nil && berr == nil {
				if after, err := fabric(); err == nil {
					d := node.Delta(before, after)
					run.Fabric = &d
				}
			}
			out = append(out, run)
		}
	}
	return out
}
