package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// find looks a binary up in dir (an executable file, not a directory),
// else on PATH when dir is "". Each tool words its own error: the hint
// names the tool's package and flag.
func find(dir, name string) (string, bool) {
	if dir != "" {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, true
		}
		return "", false
	}
	p, err := exec.LookPath(name)
	return p, err == nil
}

// withTimeout bounds a run: d, or def when d is zero or less.
func withTimeout(ctx context.Context, d, def time.Duration) (context.Context, context.CancelFunc, time.Duration) {
	if d <= 0 {
		d = def
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, d
}

// command is how every benchmark and build-facts command gdrcheck runs
// starts: argv killed when ctx ends, with env added to gdrcheck's own
// environment. waitDelay bounds the wait for its output once it is
// killed (zero waits for as long as the output stays open).
func command(ctx context.Context, argv, env []string, waitDelay time.Duration) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = waitDelay
	return cmd
}

// killDelay is how long a killed launcher's output may stay open: a
// killed launcher must not leave ranks behind, nor hold gdrcheck.
const killDelay = 5 * time.Second

// OpenLog opens the file a run's output goes to: a temporary file when
// dir is empty, else dir/name (a file name, nothing above it), or a
// fresh name in dir when name is empty. A file, not a pipe: the ranks
// write to it directly and nothing passes through gdrcheck's memory.
func OpenLog(dir, binary, name string) (*os.File, error) {
	if dir == "" {
		f, err := os.CreateTemp("", "gdrcheck-"+binary+"-*.log")
		if err != nil {
			return nil, fmt.Errorf("output file: %w", err)
		}
		return f, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	if name == "" {
		f, err := os.CreateTemp(dir, binary+"-*.log")
		if err != nil {
			return nil, fmt.Errorf("log file: %w", err)
		}
		return f, nil
	}
	if name != filepath.Base(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("log file %q: want a file name in the log directory", name)
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return f, nil
}

// TreeCPU is the CPU seconds (user + system) of a launched process tree.
// The kernel adds a waited-for child's rusage, descendants included, to
// its parent's, so after Wait the launcher's times hold its ranks'; a
// launcher that hands the ranks to a daemon (srun) holds only its own,
// so there it is nil, as it is for a process that never ran.
func TreeCPU(launcher []string, ps *os.ProcessState) *float64 {
	if ps == nil || len(launcher) > 0 && filepath.Base(launcher[0]) == "srun" {
		return nil
	}
	s := (ps.UserTime() + ps.SystemTime()).Seconds()
	return &s
}
