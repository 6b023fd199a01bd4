package main

import (
	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

// newEmulatedRankCmd is the rank wrapper of emulated nodes (run
// --emulate-nodes): mpirun starts it once per rank, and it becomes that
// rank's node, then execs the benchmark.
func newEmulatedRankCmd() *cobra.Command {
	var nodes []string
	var gpus, physical int
	cmd := &cobra.Command{
		Use:    "emulated-rank --nodes A,B,... --gpus-per-node N -- COMMAND...",
		Short:  "Run COMMAND as one rank of an emulated node (used by run --emulate-nodes)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return nccl.EmulatedRank(nodes, gpus, physical, args)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&nodes, "nodes", nil, "the emulated nodes, in rank order")
	f.IntVar(&gpus, "gpus-per-node", 1, "ranks per node")
	f.IntVar(&physical, "physical-gpus", 0, "GPUs of this machine: with enough, each node gets its own")
	f.SetInterspersed(false)
	return cmd
}
