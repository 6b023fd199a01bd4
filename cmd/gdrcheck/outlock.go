package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/dirlock"
	"github.com/gdrcheck/gdrcheck/results"
)

// defaultLockTimeout is how long a command waits for an output directory
// another gdrcheck run holds: a CI job queued behind another into the same
// --out waits for it, as long as a run's own default --timeout, and a
// holder that hangs fails the waiter (exit 2) instead of hanging it too.
const defaultLockTimeout = time.Hour

// addLockTimeout gives a command that commits a set into a directory its
// --lock-timeout flag.
func addLockTimeout(cmd *cobra.Command, d *time.Duration, dir string) {
	cmd.Flags().DurationVar(d, "lock-timeout", defaultLockTimeout, "wait at most this long for "+dir+" while another gdrcheck run writes into it (its lock is "+dir+"/"+dirlock.File+"), then exit 2; 0 refuses at once")
}

// lockOut locks dir for the whole command (see internal/dirlock), saying
// on standard error when it waits; release unlocks it. A dir that does not
// exist has nothing to guard: the command reports that itself.
func lockOut(cmd *cobra.Command, dir string, timeout time.Duration) (release func(), err error) {
	if dir == "" {
		dir = "."
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	l, err := dirlock.Acquire(ctx, dir, timeout, cmd.ErrOrStderr())
	if err != nil {
		return nil, &exitError{code: results.ExitUnevaluable, err: err}
	}
	return l.Release, nil
}

// removeStaleLogs removes the staging directories of logs/ that a killed
// run left in dir; only a holder of dir's lock may, since a live run's are
// in use.
func removeStaleLogs(dir string) {
	stale, _ := filepath.Glob(results.StagedDirs(filepath.Join(dir, "logs")))
	for _, d := range stale {
		os.RemoveAll(d)
	}
}
