package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
)

// NCCLRunner runs nccl-tests binaries.
type NCCLRunner struct {
	// Dir holds the binaries (--nccl-tests-dir); empty means PATH.
	Dir string
	// Launcher prefixes the command, e.g. srun arguments for multi-node
	// runs; empty runs the binary directly.
	Launcher []string
	// Env is added to the process environment (before the mode's).
	Env []string
	// Timeout bounds each run; zero means ten minutes.
	Timeout time.Duration
	// CPU samples host CPU time (busy and total seconds over all CPUs)
	// around a run; nil leaves utilisation unmeasured.
	CPU func() (busy, total float64, err error)
	// Fabric samples the RDMA port counters around a run, so errors and
	// the bytes that crossed each NIC during it are known; nil skips it.
	Fabric func() (node.FabricSample, error)
	// LogDir keeps each run's output, in the file its Spec.Log names.
	// Without it the output goes to a temporary file, removed once
	// parsed. Either way the output goes to disk as it arrives and is
	// parsed from there, never held: with NCCL's debug lines from every
	// rank of an allocation it grows with the ranks.
	LogDir string
}

// Lookup finds a binary in Dir, else on PATH.
func (r NCCLRunner) Lookup(name string) (string, error) {
	p, ok := find(r.Dir, name)
	switch {
	case ok:
		return p, nil
	case r.Dir != "":
		return "", fmt.Errorf("%w: %s in %q", nccl.ErrNotFound, name, r.Dir)
	}
	return "", fmt.Errorf("%w: %s on PATH (install nccl-tests, or set --nccl-tests-dir)", nccl.ErrNotFound, name)
}

// Run runs one spec and parses what it printed.
func (r NCCLRunner) Run(ctx context.Context, s nccl.Spec) nccl.Result {
	res := nccl.Result{Spec: s}
	bin, err := r.Lookup(s.Binary)
	if err != nil {
		res.Err = err
		return res
	}
	ctx, cancel, timeout := withTimeout(ctx, r.Timeout, 10*time.Minute)
	defer cancel()
	res.Command = append(append(append([]string{}, r.Launcher...), bin), s.Args...)
	out, err := OpenLog(r.LogDir, s.Binary, s.Log)
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
	cmd := command(ctx, res.Command, append(append(append(append([]string{}, nccl.SafeEnv...), nccl.DebugEnv...), r.Env...), s.Env...), killDelay)
	cmd.Stdout, cmd.Stderr = out, out

	var b0, t0 float64
	var cpuErr error = errors.New("not sampled")
	if r.CPU != nil {
		b0, t0, cpuErr = r.CPU()
	}
	var before node.FabricSample
	var fabricErr error = errors.New("not sampled")
	if r.Fabric != nil {
		before, fabricErr = r.Fabric()
	}
	start := time.Now()
	runErr := run(cmd)
	res.Duration = time.Since(start)
	res.CPUSeconds = TreeCPU(r.Launcher, cmd.ProcessState)
	if r.Fabric != nil && (fabricErr == nil || errors.Is(fabricErr, node.ErrAbsent)) {
		if after, err := r.Fabric(); err == nil || errors.Is(err, node.ErrAbsent) {
			d := node.Delta(before, after)
			res.Fabric = &d
		}
	}
	if r.CPU != nil && cpuErr == nil {
		if b1, t1, err := r.CPU(); err == nil && t1 > t0 {
			pct := 100 * (b1 - b0) / (t1 - t0)
			res.CPUPct = &pct
		}
	}
	if err := res.ReadBack(out); err != nil {
		res.Err = fmt.Errorf("%s: reading its output back: %w", s.Binary, err)
		return res
	}
	partial := ""
	if res.Tests != nil && res.Tests.Partial {
		partial = "; partial: " + res.Tests.PartialReason
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.Err = fmt.Errorf("%s timed out after %s%s", s.Binary, timeout, partial)
	case runErr != nil:
		res.Err = fmt.Errorf("%s: %w%s", s.Binary, runErr, res.FailureOrLast())
	case res.Tests == nil || len(res.Tests.Rows) == 0:
		res.Err = fmt.Errorf("%s printed no result table%s", s.Binary, res.FailureOrLast())
	case res.Tests.Failed():
		res.Err = fmt.Errorf("%s reported a failure%s%s", s.Binary, res.Tests.FailureText(), partial)
	case partial != "":
		// Exit 0 and rows, but the table stops short or is damaged:
		// the largest size measured is not known, so this is no pass.
		res.Err = fmt.Errorf("%s output is cut short or damaged%s", s.Binary, partial)
	}
	return res
}

// MeasureNCCL runs the plan, one binary at a time, telling progress what it
// starts. A missing optional binary is noted, not fatal.
func MeasureNCCL(ctx context.Context, r NCCLRunner, p nccl.Plan, exp nccl.Expectation, why []string, progress io.Writer) *nccl.Measurements {
	m := &nccl.Measurements{Expectation: exp, Why: why}
	if progress == nil {
		progress = io.Discard
	}
	gpus := []string{"-g", strconv.Itoa(max(p.GPUs, 1))}
	run := func(op string, mode nccl.Mode, args []string) {
		fmt.Fprintf(progress, "nccl: %s_perf (%s) ...\n", op, mode.Name)
		res := r.Run(ctx, nccl.Spec{Binary: op + "_perf", Args: append(append([]string{}, args...), gpus...), Env: mode.Env, Log: nccl.LogName(op, mode)})
		fmt.Fprintf(progress, "nccl: %s_perf (%s) took %s\n", op, mode.Name, res.Duration.Round(1e8))
		m.Runs = append(m.Runs, nccl.Measured{Op: op, Mode: mode, Result: res})
	}
	for _, op := range p.Ops {
		if _, err := r.Lookup(op + "_perf"); err != nil && op != "all_reduce" {
			m.Missing = append(m.Missing, op+"_perf")
			continue
		}
		run(op, nccl.ModeDirect, p.DirectArgs)
	}
	for _, mode := range p.Fallbacks {
		if ctx.Err() != nil {
			break
		}
		run("all_reduce", mode, p.FallbackArgs)
	}
	return m
}
