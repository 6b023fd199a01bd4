package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/slurm"
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
			if err := slurm.CheckGPUsPerNode(gpus); err != nil {
				return err
			}
			names, err := hostlist.ExpandAll(nodes)
			if err != nil {
				return fmt.Errorf("--nodes: %w", err)
			}
			return bench.EmulatedRank(names, gpus, physical, args)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&nodes, "nodes", nil, "the emulated nodes in rank order, a hostlist (emu[1-4])")
	f.IntVar(&gpus, "gpus-per-node", 1, "ranks per node")
	f.IntVar(&physical, "physical-gpus", 0, "GPUs of this machine: with enough, each node gets its own")
	f.SetInterspersed(false)
	return cmd
}
