package nccl

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// BusBWLimit is the highest bus bandwidth an nccl-tests collective can
// report on a node, one direction per GPU, from the node's evidence
// (node.Evidence.GPULimit, the slowest GPU's fastest path).
//
// nccl-tests scales busbw so that it reads as what each GPU's link
// carries (NVIDIA/nccl-tests doc/PERFORMANCE.md): all_gather,
// reduce_scatter, sendrecv and the rest can never pass one direction of
// the link, whatever the algorithm, since each GPU must receive or send
// that much. all_reduce's factor 2(n-1)/n assumes every byte crosses a
// GPU's link twice each way, as in rings and trees; a reduction inside
// the switch (NVLink SHARP, NCCL's NVLS on NVSwitch systems) sends each
// byte out and back once, so its busbw can reach up to twice the link
// (8 x H100 with NVLS report about 480 GB/s over 450 GB/s links).
// Unknown where the evidence gives no path for a GPU, and on a node of
// one GPU: a collective there never leaves the GPU's memory (sendrecv
// to itself reads at HBM speed), so no link bounds it.
func BusBWLimit(op string, ev *node.Evidence) node.Limit {
	if len(ev.GPUs) < 2 {
		return node.Limit{}
	}
	l := ev.GPULimit()
	if !l.Known() || op != "all_reduce" {
		return l
	}
	l.Value *= 2
	l.How = fmt.Sprintf("twice %s: a reduction inside the switch (NVLS, SHARP) moves each byte once each way", l.How)
	return l
}
