// Command gdrcheck proves GPUDirect RDMA works on a GPU node or a Slurm
// allocation: it collects node evidence, runs Ginkgo spec suites against it
// and writes JUnit, results.json and comparison tables.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gdrcheck/gdrcheck/results"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "gdrcheck:", ee.err)
		}
		os.Exit(ee.code)
	}
	// Bad flags, unreadable input: nothing was evaluated.
	fmt.Fprintln(os.Stderr, "gdrcheck:", err)
	os.Exit(results.ExitUnevaluable)
}
