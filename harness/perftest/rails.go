package perftest

import (
	"context"
	"fmt"
	"io"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// Rail is a NIC and the GPU whose buffers it moves.
type Rail struct {
	NIC      string
	GPU      int    // CUDA/NVML index for --use_cuda
	GPUBusID string // for messages
}

// RailRun is one loopback measurement of a rail.
type RailRun struct {
	Rail   Rail
	Mem    Mem
	Result RunResult
	Fabric *node.FabricDelta
}

// RailMemories are the memories every rail is measured with: host memory
// as the reference, GPU memory through nvidia_peermem, and through
// DMA-BUF. What GPUDirect is worth is the GPU runs against the host run.
var RailMemories = []Mem{MemHost, MemCUDA, MemCUDADMABuf}

// MeasureRails runs ib_write_bw in loopback through each rail NIC with
// 8 MiB messages, the size vendors quote, for every memory; fabric, when
// set, samples the port counters around each run.
func MeasureRails(ctx context.Context, r Runner, rails []Rail, fabric func() (node.FabricSample, error), progress io.Writer) []RailRun {
	if progress == nil {
		progress = io.Discard
	}
	var out []RailRun
	for _, rail := range rails {
		for _, mem := range RailMemories {
			if ctx.Err() != nil {
				return out
			}
			fmt.Fprintf(progress, "perftest: ib_write_bw through %s, %s memory (GPU %d) ...\n", rail.NIC, mem, rail.GPU)
			spec := Spec{Binary: "ib_write_bw", Device: rail.NIC, Mem: mem, GPU: rail.GPU, Size: 8 << 20, ReportGbits: true}
			var before node.FabricSample
			var berr error
			if fabric != nil {
				before, berr = fabric()
			}
			res := r.Loopback(ctx, spec)
			run := RailRun{Rail: rail, Mem: mem, Result: res}
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
