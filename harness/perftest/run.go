package perftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Runner runs perftest binaries (ib_write_bw, ib_read_bw, ib_write_lat...).
type Runner struct {
	// Dir holds the binaries (--perftest-dir); empty means PATH.
	Dir string
	// Timeout bounds each Run, and each Loopback as a whole (both sides);
	// zero means five minutes. A run still going then is killed.
	Timeout time.Duration
	// Env is added to the process environment.
	Env []string
}

// Spec is one perftest invocation.
type Spec struct {
	Binary string // ib_write_bw, ib_read_bw, ib_write_lat...
	Device string // -d: the RDMA device (mlx5_0); "" lets perftest take the first
	Port   int    // -i: the device's port; 0 leaves perftest's default, 1
	// Mem is where the buffers live: MemHost (or MemUnknown, the same
	// flags), MemCUDA (--use_cuda=<GPU>, registered with ibv_reg_mr: the
	// nvidia_peermem path) or MemCUDADMABuf (--use_cuda=<GPU>
	// --use_cuda_dmabuf: ibv_reg_dmabuf_mr).
	Mem Mem
	GPU int // CUDA device index for --use_cuda
	// Size is the message size in bytes (-s); 0 leaves perftest's
	// default. All (-a) runs every size from 2 bytes to 8 MiB instead.
	Size        int64
	All         bool
	Iters       int  // -n; 0 leaves perftest's default
	ReportGbits bool // --report_gbits: bandwidth in Gb/s rather than MiB/s
	// TCPPort is the port the two sides exchange queue pair details on
	// (-p); 0 leaves perftest's default, 18515. Runs at the same time
	// need different ports.
	TCPPort int
	// Server is "" to run the server side; a host name or address runs
	// the client against a server there. For Loopback it is the address
	// the client connects to, 127.0.0.1 when "".
	Server string
	Extra  []string // more perftest options, before the host
}

// Args are the command-line arguments of the spec, in the order perftest
// prints them back.
func (s Spec) Args() []string {
	var a []string
	if s.Device != "" {
		a = append(a, "-d", s.Device)
	}
	if s.Port > 0 {
		a = append(a, "-i", strconv.Itoa(s.Port))
	}
	switch {
	case s.All:
		a = append(a, "-a")
	case s.Size > 0:
		a = append(a, "-s", strconv.FormatInt(s.Size, 10))
	}
	if s.Iters > 0 {
		a = append(a, "-n", strconv.Itoa(s.Iters))
	}
	if s.TCPPort > 0 {
		a = append(a, "-p", strconv.Itoa(s.TCPPort))
	}
	switch s.Mem {
	case MemCUDA:
		a = append(a, "--use_cuda="+strconv.Itoa(s.GPU))
	case MemCUDADMABuf:
		a = append(a, "--use_cuda="+strconv.Itoa(s.GPU), "--use_cuda_dmabuf")
	}
	if s.ReportGbits {
		a = append(a, "--report_gbits")
	}
	a = append(a, s.Extra...)
	if s.Server != "" {
		a = append(a, s.Server)
	}
	return a
}

// mem is the memory the flags ask for: "" means host.
func (s Spec) mem() Mem {
	if s.Mem == MemUnknown {
		return MemHost
	}
	return s.Mem
}

// Sides of a run.
const (
	SideServer = "server"
	SideClient = "client"
)

func (s Spec) side() string {
	if s.Server == "" {
		return SideServer
	}
	return SideClient
}

// RunResult is what one side of a run produced.
type RunResult struct {
	Spec    Spec
	Side    string // SideServer or SideClient
	Command []string
	Output  []byte // stdout and stderr together
	// Result is the parsed output, with Mem set from the spec's flags;
	// nil when the output holds nothing perftest prints (a server of a
	// write or read test prints only its banner, at most).
	Result   *Result
	Duration time.Duration
	// Attempts counts the client's tries to reach its server (Loopback
	// retries while the server is not yet listening).
	Attempts int
	// Server is the server side of a Loopback, its output kept.
	Server *RunResult
	// Err is why the run failed: the binary missing, a failure perftest
	// reported (wrapping ErrRunFailed, with the decoded cause), a
	// non-zero exit, a timeout (wrapping context.DeadlineExceeded), or a
	// client that printed no result.
	Err error
}

// ErrNotFound says the binary is not in Dir or on PATH.
var ErrNotFound = errors.New("perftest binary not found")

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
func (r Runner) Lookup(name string) (string, error) {
	if r.Dir != "" {
		p := filepath.Join(r.Dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
		return "", fmt.Errorf("%w: %s in %q", ErrNotFound, name, r.Dir)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s on PATH (install perftest, or set --perftest-dir)", ErrNotFound, name)
	}
	return p, nil
}

func (r Runner) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return 5 * time.Minute
}

// Run runs one side of a spec (the server when Spec.Server is "") and
// parses what it printed.
func (r Runner) Run(ctx context.Context, s Spec) RunResult {
	bin, err := r.Lookup(s.Binary)
	if err != nil {
		return RunResult{Spec: s, Side: s.side(), Err: err}
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
func (r Runner) Loopback(ctx context.Context, s Spec) RunResult {
	cs, ss := s, s
	if cs.Server == "" {
		cs.Server = "127.0.0.1"
	}
	ss.Server = ""
	bin, err := r.Lookup(s.Binary)
	if err != nil {
		return RunResult{Spec: cs, Side: SideClient, Err: err}
	}
	timeout := r.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sctx, kill := context.WithCancel(ctx)
	defer kill()

	srv := r.start(sctx, bin, ss)
	var cli RunResult
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
func refused(r RunResult) bool {
	return bytes.Contains(r.Output, []byte("Couldn't connect"))
}

// proc is one running side.
type proc struct {
	res    RunResult
	out    bytes.Buffer
	start  time.Time
	done   chan struct{}
	err    error // from Start or Wait
	ctxErr error // the context's error when the process ended
	// killed says why Loopback killed it; "" when it was not.
	killed string
}

func (r Runner) start(ctx context.Context, bin string, s Spec) *proc {
	args := s.Args()
	p := &proc{res: RunResult{Spec: s, Side: s.side(), Command: append([]string{bin}, args...)}, done: make(chan struct{})}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), r.Env...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		p.err = err
		p.res.Duration = time.Since(p.start)
		close(p.done)
		return p
	}
	go func() {
		p.err = cmd.Wait()
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
func (p *proc) finish(timeout time.Duration) RunResult {
	<-p.done
	res := p.res
	res.Output = p.out.Bytes()
	res.Result, _ = Parse(bytes.NewReader(res.Output))
	if res.Result != nil {
		setMem(res.Result, res.Spec)
	}
	res.Err = p.judge(res, timeout)
	return res
}

// setMem records the memory the flags asked for: the text does not always
// say (an excerpt without the command line, a host run), and the JSON never
// tells the CUDA paths apart.
func setMem(r *Result, s Spec) {
	want := s.mem()
	flags := "no memory flags"
	if want != MemHost {
		flags = strings.Join(Spec{Mem: s.Mem, GPU: s.GPU}.Args(), " ")
	}
	switch {
	case r.Mem == want && r.MemEvidence != "":
	case r.Mem == MemUnknown || r.Mem == want:
		r.MemEvidence = "runner flags: " + flags
	default:
		r.MemEvidence = fmt.Sprintf("runner flags: %s (the output suggested %s: %s)", flags, r.Mem, r.MemEvidence)
	}
	r.Mem = want
}

func (p *proc) judge(res RunResult, timeout time.Duration) error {
	name := res.Spec.Binary + " " + res.Side
	var f *Failure
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
		return fmt.Errorf("%s: %s failure: %s%s: %w", name, f.Kind, cause(f), exit, ErrRunFailed)
	case p.err != nil:
		return fmt.Errorf("%s: %w%s", name, p.err, lastLine(res.Output))
	case res.Side == SideClient && res.Result == nil:
		return fmt.Errorf("%s printed no perftest output%s: %w", name, lastLine(res.Output), ErrRunFailed)
	case res.Side == SideClient && f != nil:
		return fmt.Errorf("%s: %s: %w", name, f.Cause, ErrRunFailed)
	case res.Side == SideClient && partial != "":
		// A run cut short measured only part of what it was asked to:
		// never a pass.
		return fmt.Errorf("%s output is cut short%s: %w", name, partial, ErrRunFailed)
	}
	return nil
}

// cause is the line that names the failure, with the names of its status
// and errno numbers.
func cause(f *Failure) string {
	c := f.Cause
	if f.WCStatusName != "" && !strings.Contains(c, f.WCStatusName) && f.WCStatus != nil {
		c += " (" + f.WCStatusName + ")"
	}
	if f.ErrnoName != "" && !strings.Contains(c, f.ErrnoName) {
		c += " (" + f.ErrnoName + ")"
	}
	return c
}

func causeSuffix(f *Failure, printed bool) string {
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
