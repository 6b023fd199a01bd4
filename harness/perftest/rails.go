package perftest

import (
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
