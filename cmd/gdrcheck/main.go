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
	"strings"
	"syscall"

	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"golang.org/x/sys/unix"
)

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
	ctx := interruptible()
	err := newRootCmd().ExecuteContext(ctx)
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "gdrcheck:", errText(ee.err))
		}
		os.Exit(ee.code)
	}
	// Bad flags, unreadable input: nothing was evaluated.
	fmt.Fprintln(os.Stderr, "gdrcheck:", errText(err))
	os.Exit(results.ExitUnevaluable)
}

// errText is an error for the terminal: each of its lines through the
// tables' rule, so a recorded string it quotes raw (a problem's cause, a
// file's line) moves no cursor and sets no window title.
func errText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = reports.Terminal(l)
	}
	return strings.Join(lines, "\n")
}

// interruptible is cancelled by the first SIGINT or SIGTERM, with the
// signal as its cause: the benchmarks stop, the suites skip what is left,
// and the report is still written, saying so (exit 2). A second signal
// finds the default action again and ends the process at once.
func interruptible() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		signal.Stop(sigs)
		name := s.String()
		if n, ok := s.(syscall.Signal); ok && unix.SignalName(n) != "" {
			name = unix.SignalName(n)
		}
		cancel(fmt.Errorf("interrupted by %s", name))
	}()
	return ctx
}
