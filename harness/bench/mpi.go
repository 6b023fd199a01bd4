package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/osu"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// MPIRunner runs the mpi suite's benchmarks.
type MPIRunner struct {
	Dir     string        // holds osu_bw & co.; "" searches PATH
	Timeout time.Duration // each run; zero is five minutes
	LogDir  string        // keeps each run's output; "" keeps none
	// Perftest is the ucx_perftest a pair runs (--ucx-perftest); ""
	// looks it up as Lookup does.
	Perftest string
}

// Lookup finds a binary in Dir, else on PATH.
func (r MPIRunner) Lookup(name string) (string, error) {
	p, ok := find(r.Dir, name)
	switch {
	case ok:
		return p, nil
	case r.Dir != "":
		return "", fmt.Errorf("%s not in %q", name, r.Dir)
	}
	return "", fmt.Errorf("%s not on PATH", name)
}

// Tool picks a ucx_perftest pair where Perftest names one, else the OSU
// micro-benchmarks where osu_bw and osu_latency are there, else a
// ucx_perftest pair (inside a node; across nodes it runs under the
// launcher, which needs it built --with-mpi).
func (r MPIRunner) Tool() (string, error) {
	if r.Perftest != "" {
		if _, err := r.PerftestBinary(); err != nil {
			return "", err
		}
		return mpi.ToolPerftestPair, nil
	}
	var missing []string
	for _, b := range []string{"osu_bw", "osu_latency"} {
		if _, err := r.Lookup(b); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) == 0 {
		return mpi.ToolOSU, nil
	}
	_, err := r.Lookup("ucx_perftest")
	if err == nil {
		return mpi.ToolPerftestPair, nil
	}
	missing = append(missing, err.Error())
	return "", fmt.Errorf("%w (%s): install the OSU micro-benchmarks built --enable-cuda (osu_bw, osu_latency: libexec/osu-micro-benchmarks/mpi/pt2pt) or UCX's ucx_perftest built --with-cuda, or set --mpi-bench-dir or --ucx-perftest", mpi.ErrBenchNotFound, strings.Join(missing, "; "))
}

// MeasureMPI runs the specs one at a time, telling progress what it starts.
func MeasureMPI(ctx context.Context, r MPIRunner, specs []mpi.BenchSpec, progress io.Writer) []mpi.BenchRun {
	if progress == nil {
		progress = io.Discard
	}
	var out []mpi.BenchRun
	for _, s := range specs {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(progress, "mpi: %s %s (%s, %s) ...\n", s.Binary, s.Op, s.Scope, s.Mode.Name)
		res := r.Run(ctx, s)
		fmt.Fprintf(progress, "mpi: %s %s (%s, %s) took %s\n", s.Binary, s.Op, s.Scope, s.Mode.Name, res.Duration.Round(1e8))
		out = append(out, res)
	}
	return out
}

// Run runs one spec: the launcher starts `env VAR=... BINARY ARGS` on
// each rank, so the variables reach ranks on other nodes whatever the
// launcher passes on.
func (r MPIRunner) Run(ctx context.Context, s mpi.BenchSpec) mpi.BenchRun {
	if s.Pair {
		return r.RunPair(ctx, s)
	}
	res := mpi.BenchRun{Spec: s}
	bin, err := r.Lookup(s.Binary)
	if err != nil {
		res.Err = err
		return res
	}
	ctx, cancel, timeout := withTimeout(ctx, r.Timeout, 5*time.Minute)
	defer cancel()
	env := append(append([]string{}, mpi.ProtoEnv...), s.Mode.Env...)
	res.Command = append(append(append(append(append([]string{}, s.Launcher...), "env"), env...), bin), s.Args...)
	out, err := OpenLog(r.LogDir, s.Binary, mpi.BenchLog(s))
	if err != nil {
		res.Err = fmt.Errorf("%s: %w", s.Binary, err)
		return res
	}
	defer out.Close()
	if r.LogDir != "" {
		res.LogFile = out.Name()
	} else {
		defer os.Remove(out.Name())
	}
	// gdrcheck runs as root on a node; Open MPI's mpirun refuses root
	// unless told (the variables stand for --allow-run-as-root, and other
	// launchers ignore them).
	cmd := command(ctx, res.Command, append([]string{"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"}, env...), killDelay)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	runErr := run(cmd)
	res.Duration = time.Since(start)
	if s.Scope == mpi.IntraNode { // a remote rank's CPU cannot be counted
		res.CPUSeconds = TreeCPU(s.Launcher, cmd.ProcessState)
	}
	last, err := readBack(&res, out)
	if err != nil {
		res.Err = fmt.Errorf("%s: reading its output back: %w", s.Binary, err)
		return res
	}
	res.Err = judgeRun(ctx, &res, runErr, timeout, last)
	return res
}

// judgeRun says why a run gave no measurement to use, or nil.
func judgeRun(ctx context.Context, res *mpi.BenchRun, runErr error, timeout time.Duration, last string) error {
	s := res.Spec
	switch {
	case res.Perftest != nil && res.Perftest.Waiting && res.Perftest.Iterations == 0:
		return fmt.Errorf("%w: ucx_perftest waited for a client (\"Waiting for connection...\"): it was built without MPI (--with-mpi), so a launcher cannot start it as a pair; use the OSU micro-benchmarks", mpi.ErrUnfit)
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("%s timed out after %s", s.Binary, timeout)
	case runErr != nil:
		return fmt.Errorf("%s: %w%s", s.Binary, runErr, last)
	case res.OSU != nil && !res.OSU.CUDA:
		return fmt.Errorf("%w: %s printed %q, not MPI-CUDA: the OSU micro-benchmarks were built without --enable-cuda, so the buffers were on the host", mpi.ErrUnfit, s.Binary, res.OSU.Title)
	case res.OSU != nil && len(res.OSU.Failed) > 0:
		return fmt.Errorf("%s: validation failed at %d bytes", s.Binary, res.OSU.Failed[0])
	case res.OSU != nil && res.OSU.Partial:
		return fmt.Errorf("%s output is cut short or damaged: %s", s.Binary, res.OSU.PartialReason)
	case res.OSU == nil && res.Perftest == nil:
		return fmt.Errorf("%s printed no result%s", s.Binary, last)
	}
	return nil
}

// readBack reads a run's output back from its file, a line at a time, and
// returns its last line for an error message.
func readBack(res *mpi.BenchRun, f *os.File) (string, error) {
	read := func(p func(io.Reader) error) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return p(f)
	}
	var err error
	if res.Spec.Binary == "ucx_perftest" {
		err = read(func(r io.Reader) error {
			p, err := ucx.ParsePerftest(r)
			if err == nil || p != nil && p.Waiting {
				res.Perftest = p
			}
			return nil
		})
	} else {
		err = read(func(r io.Reader) error { res.OSU, _ = osu.Parse(r); return nil })
	}
	if err == nil {
		err = read(func(r io.Reader) error { res.UCX, _ = ucx.ParseLog(r); return nil })
	}
	if err != nil {
		return "", err
	}
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	from := max(fi.Size()-4096, 0)
	tail := make([]byte, fi.Size()-from)
	n, _ := f.ReadAt(tail, from)
	t := bytes.TrimSpace(tail[:n])
	if i := bytes.LastIndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	}
	if len(t) == 0 {
		return "", nil
	}
	return ": last output: " + bounded.Clip(bytes.TrimSpace(t), 300), nil
}
