package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// newDebugCmd holds commands that measure gdrcheck's own machinery, not a
// node's health.
func newDebugCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "debug",
		Short: "Measure gdrcheck's own machinery (cuinit)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "cuinit",
		Short: "Time dlopen(libcuda.so.1) and cuInit alone: the floor of the quick gate",
		Long: `cuinit loads libcuda.so.1 and calls cuInit, as the GPUDirect probe of every
run does, and prints how long that took in this process. Timed from outside
(examples/gate-vs-floor.sh), the whole command is the floor a quick gate
(run --suites topology,kernel,bar1) is measured against: the same binary,
the same start-up, no checks. Exit 2 when libcuda cannot be loaded or
initialised.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			took, driver, err := node.CUDAInitTime()
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("libcuda: %w", err)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dlopen+cuInit %.4f s (CUDA driver API %d)\n", took.Seconds(), driver)
			return nil
		},
	})
	return cmd
}
