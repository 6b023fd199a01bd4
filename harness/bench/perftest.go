package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/perftest"
)

// PerftestRunner runs perftest binaries (ib_write_bw, ib_read_bw, ib_write_lat...).
type PerftestRunner struct {
	// Dir holds the binaries (--perftest-dir); empty means PATH.
	Dir string
	// Timeout bounds each Run, and each Loopback as a whole (both sides);
	// zero means five minutes. A run still going then is killed.
	Timeout time.Duration
	// Env is added to the process environment.
	Env []string
}

// Loopback retries a client that found no server listening yet this many
// times, this far apart.
const (
	connectAttempts = 20
	connectDelay    = 250 * time.Millisecond
)

// serverGrace is how long a server may outlive its client before it is
// killed: perftest's server ends as soon as the test is over.
var serverGrace = 10 * time.Second

// Lookup finds a binary in Dir, else on PATH.
func (r PerftestRunner) Lookup(name string) (string, error) {
	p, ok := find(r.Dir, name)
	switch {
	case ok:
		return p, nil
	case r.Dir != "":
		return "", fmt.Errorf("%w: %s in %q", perftest.ErrNotFound, name, r.Dir)
	}
	return "", fmt.Errorf("%w: %s on PATH (install perftest, or set --perftest-dir)", perftest.ErrNotFound, name)
}

func (r PerftestRunner) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return 5 * time.Minute
}

// Run runs one side of a spec (the server when Spec.Server is "") and
// parses what it printed.
func (r PerftestRunner) Run(ctx context.Context, s perftest.Spec) perftest.RunResult {
	bin, err := r.Lookup(s.Binary)
	if err != nil {
		return perftest.RunResult{Spec: s, Side: s.Side(), Err: err}
	}
	timeout := r.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return r.start(ctx, bin, s).finish(timeout)
}

// Loopback runs both sides of a spec: the server, then the client against
// Spec.Server (127.0.0.1 when ""), retrying the client while the server is
// not listening yet. It returns the client's result with the server's in
// Server. Err is the client's failure, else the server's; a timeout kills
// both sides.
func (r PerftestRunner) Loopback(ctx context.Context, s perftest.Spec) perftest.RunResult {
	cs, ss := s, s
	if cs.Server == "" {
		cs.Server = "127.0.0.1"
	}
	ss.Server = ""
	bin, err := r.Lookup(s.Binary)
	if err != nil {
		return perftest.RunResult{Spec: cs, Side: perftest.SideClient, Err: err}
	}
	timeout := r.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sctx, kill := context.WithCancel(ctx)
	defer kill()

	srv := r.start(sctx, bin, ss)
	var cli perftest.RunResult
	for attempt := 1; ; attempt++ {
		cli = r.start(ctx, bin, cs).finish(timeout)
		cli.Attempts = attempt
		if !refused(cli) || attempt == connectAttempts || ctx.Err() != nil || srv.exited() {
			break
		}
		select {
		case <-time.After(connectDelay):
		case <-ctx.Done():
		case <-srv.done:
		}
		if ctx.Err() != nil || srv.exited() {
			break
		}
	}

	if refused(cli) {
		if !srv.exited() {
			srv.killed = "killed: no client reached it"
			kill()
		}
	} else {
		grace := time.NewTimer(serverGrace)
		select {
		case <-srv.done:
		case <-ctx.Done(): // the deadline: the server is killed with it
		case <-grace.C:
			srv.killed = fmt.Sprintf("still running %s after the client ended; killed", serverGrace)
			kill()
		}
		grace.Stop()
	}
	sres := srv.finish(timeout)
	cli.Server = &sres
	switch {
	case cli.Err == nil && sres.Err != nil:
		cli.Err = fmt.Errorf("server side: %w", sres.Err)
	case refused(cli) && sres.Err != nil && srv.killed == "":
		// The server ended on its own before any client reached it: its
		// failure is the cause.
		cli.Err = fmt.Errorf("%w; server side: %w", cli.Err, sres.Err)
	}
	return cli
}

// refused reports a client that found no server listening.
func refused(r perftest.RunResult) bool {
	return bytes.Contains(r.Output, []byte("Couldn't connect"))
}

// proc is one running side.
type proc struct {
	res    perftest.RunResult
	out    bytes.Buffer
	start  time.Time
	done   chan struct{}
	err    error // from Start or Wait
	ctxErr error // the context's error when the process ended
	// killed says why Loopback killed it; "" when it was not.
	killed string
}

func (r PerftestRunner) start(ctx context.Context, bin string, s perftest.Spec) *proc {
	args := s.Args()
	p := &proc{res: perftest.RunResult{Spec: s, Side: s.Side(), Command: append([]string{bin}, args...)}, done: make(chan struct{})}
	cmd := command(ctx, append([]string{bin}, args...), r.Env, killDelay)
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		p.err = err
		p.res.Duration = time.Since(p.start)
		close(p.done)
		return p
	}
	go func() {
		p.err = wait(cmd)
		p.res.Duration = time.Since(p.start)
		p.ctxErr = ctx.Err()
		close(p.done)
	}()
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// finish waits for the process and judges what it printed.
func (p *proc) finish(timeout time.Duration) perftest.RunResult {
	<-p.done
	res := p.res
	res.Output = p.out.Bytes()
	res.Result, _ = perftest.Parse(bytes.NewReader(res.Output))
	if res.Result != nil {
		perftest.SetMem(res.Result, res.Spec)
	}
	res.Err = p.judge(res, timeout)
	return res
}

func (p *proc) judge(res perftest.RunResult, timeout time.Duration) error {
	name := res.Spec.Binary + " " + res.Side
	var f *perftest.Failure
	partial := ""
	if res.Result != nil {
		f = res.Result.Failure
		if res.Result.Partial {
			partial = "; partial: " + res.Result.PartialReason
		}
	}
	// A failure with lines is one perftest printed; one without is the
	// parser noting that no row came, which is normal for a server.
	printed := f != nil && len(f.Lines) > 0
	switch {
	case p.killed != "":
		return fmt.Errorf("%s %s%s", name, p.killed, causeSuffix(f, printed))
	case errors.Is(p.ctxErr, context.DeadlineExceeded):
		return fmt.Errorf("%s timed out after %s%s%s: %w", name, timeout, causeSuffix(f, printed), partial, context.DeadlineExceeded)
	case errors.Is(p.ctxErr, context.Canceled):
		return fmt.Errorf("%s interrupted%s: %w", name, causeSuffix(f, printed), context.Canceled)
	case printed:
		exit := ""
		if p.err != nil {
			exit = " (" + p.err.Error() + ")"
		}
		return fmt.Errorf("%s: %s failure: %s%s: %w", name, f.Kind, cause(f), exit, perftest.ErrRunFailed)
	case p.err != nil:
		return fmt.Errorf("%s: %w%s", name, p.err, lastLine(res.Output))
	case res.Side == perftest.SideClient && res.Result == nil:
		return fmt.Errorf("%s printed no perftest output%s: %w", name, lastLine(res.Output), perftest.ErrRunFailed)
	case res.Side == perftest.SideClient && f != nil:
		return fmt.Errorf("%s: %s: %w", name, f.Cause, perftest.ErrRunFailed)
	case res.Side == perftest.SideClient && partial != "":
		// A run cut short measured only part of what it was asked to:
		// never a pass.
		return fmt.Errorf("%s output is cut short%s: %w", name, partial, perftest.ErrRunFailed)
	}
	return nil
}

// cause is the line that names the failure, with the names of its status
// and errno numbers.
func cause(f *perftest.Failure) string {
	c := f.Cause
	if f.WCStatusName != "" && !strings.Contains(c, f.WCStatusName) && f.WCStatus != nil {
		c += " (" + f.WCStatusName + ")"
	}
	if f.ErrnoName != "" && !strings.Contains(c, f.ErrnoName) {
		c += " (" + f.ErrnoName + ")"
	}
	return c
}

func causeSuffix(f *perftest.Failure, printed bool) string {
	if !printed {
		return ""
	}
	return "; it printed: " + cause(f)
}

// lastLine quotes the last line a process printed, for errors perftest
// did not explain itself.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if l == "" {
		return ""
	}
	return ": " + l
}
