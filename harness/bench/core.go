package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
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
// starts: argv with env added to gdrcheck's own environment, in a process
// group of its own that is killed whole when ctx ends, so a launcher's
// ranks or a command's children do not outlive it. waitDelay bounds the
// wait for its output once it is killed or has exited (zero is
// killDelay): a child that keeps the output open must not hold gdrcheck.
// Run it with run, or Start it and wait for it with wait.
func command(ctx context.Context, argv, env []string, waitDelay time.Duration) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(node.ChildEnv(os.Environ()), env...)
	// Its own group keeps the terminal's ^C from reaching it before
	// gdrcheck reports; Pdeathsig kills it when gdrcheck is killed
	// outright (kill -9, the OOM killer), as its group no longer is.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd) }
	if waitDelay <= 0 {
		waitDelay = killDelay
	}
	cmd.WaitDelay = waitDelay
	return cmd
}

// killGroup kills the process group command started cmd in: the process
// and every child still in it.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return os.ErrProcessDone
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return fmt.Errorf("killing process group %d: %w", cmd.Process.Pid, err)
	}
	return nil
}

// run runs a command made by command.
func run(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	return wait(cmd)
}

// wait waits for a started command made by command. Where its output was
// still held open when the process ended (ErrWaitDelay), what holds it is
// a child left in its group, and is killed: nothing it started outlives
// the run.
func wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		killGroup(cmd)
	}
	return err
}

// killDelay is how long a killed or finished process's output may stay
// open: a killed launcher must not leave ranks behind, nor hold gdrcheck.
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
