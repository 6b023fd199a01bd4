package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// BuildFacts runs the mpi suite's build-facts commands (ompi_info,
// ucx_info, mpichversion) on the live host for mpi.Collect: the
// mpi.Commands gdrcheck uses.
type BuildFacts struct {
	// Timeout bounds each command; zero is a minute (ompi_info opens
	// every component).
	Timeout time.Duration
	// Ctx kills a command early (SIGINT, SIGTERM): its process group is
	// not the terminal's, so only gdrcheck can; nil never does.
	Ctx context.Context
	// UCXDir is the directory of the ucx_perftest the mpi suite was
	// given (--ucx-perftest): the ucx_info there, where there is one,
	// describes the UCX that pair runs on and is run before PATH's (a
	// UCX built --with-cuda under /opt beside the distribution's).
	UCXDir string
}

// commandTimeout bounds each command: ompi_info opens every component.
const commandTimeout = 60 * time.Second

// Look finds name on PATH (ucx_info in UCXDir first); "" when it is
// not there.
func (b BuildFacts) Look(name string) string {
	p, _ := b.lookup(name)
	return p
}

func (b BuildFacts) lookup(name string) (string, bool) {
	if name == "ucx_info" && b.UCXDir != "" {
		if p, ok := find(b.UCXDir, name); ok {
			return p, true
		}
	}
	return find("", name)
}

// capWriter keeps the first lim bytes written and counts the rest.
type capWriter struct {
	buf  bytes.Buffer
	lim  int64
	over bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.lim - int64(w.buf.Len())
	if int64(len(p)) > room {
		w.over = true
		w.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return w.buf.Write(p)
}

// Run runs argv found as Look finds it, its output capped; a command
// not found comes back with no Path.
func (b BuildFacts) Run(argv []string) mpi.Command {
	c := mpi.Command{Argv: argv}
	p, ok := b.lookup(argv[0])
	if !ok {
		return c
	}
	c.Path = p
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = commandTimeout
	}
	parent := b.Ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	cmd := command(ctx, append([]string{p}, argv[1:]...), nil, killDelay)
	out := &capWriter{lim: mpi.OutputLimit.Bytes}
	var stderr capWriter
	stderr.lim = 64 << 10
	cmd.Stdout, cmd.Stderr = out, &stderr
	err := run(cmd)
	c.Output = out.buf.String()
	switch {
	case parent.Err() != nil:
		c.Error = fmt.Sprintf("%s: interrupted: %v", path.Base(p), context.Cause(parent))
	case ctx.Err() != nil:
		c.Error = fmt.Sprintf("%s: killed after %s", path.Base(p), timeout)
	case errors.Is(err, exec.ErrWaitDelay):
		c.Error = fmt.Sprintf("%s: it exited, but a process it started kept its output open past %s, and was killed", path.Base(p), killDelay)
	case err != nil:
		c.Error = fmt.Sprintf("%s: %v: %s", path.Base(p), err, bounded.ClipString(stderr.buf.String(), 512))
	case out.over:
		c.Error = fmt.Sprintf("%s: output cut at %s", path.Base(p), bounded.Size(mpi.OutputLimit.Bytes))
	}
	return c
}
