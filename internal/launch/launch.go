// Package launch holds what every benchmark gdrcheck starts through a
// launcher shares: the file its output goes to, and the CPU time of its
// process tree. harness/nccl (nccl-tests) and harness/mpi (OSU,
// ucx_perftest) use it.
package launch

import (
	"fmt"
	"os"
	"path/filepath"
)

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
