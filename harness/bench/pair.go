package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
)

// pairGrace is how long a pair's server may outlive its client: it
// ends with the test, and one still running after a failed client waits
// for a peer that is gone.
const pairGrace = 10 * time.Second

// PerftestBinary is the ucx_perftest a pair runs: --ucx-perftest where
// given, else Dir's or PATH's.
func (r MPIRunner) PerftestBinary() (string, error) {
	if r.Perftest == "" {
		return r.Lookup("ucx_perftest")
	}
	if fi, err := os.Stat(r.Perftest); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return r.Perftest, nil
	}
	return "", fmt.Errorf("--ucx-perftest %q: not an executable file", r.Perftest)
}

// RunPair runs one pair spec: a ucx_perftest server on a free port and a
// client of it on localhost, each with UCX_PROTO_INFO=y and the mode's
// variables, both in process groups killed at the timeout. The client
// reports the result; the protocol tables are both processes'.
func (r MPIRunner) RunPair(ctx context.Context, s mpi.BenchSpec) mpi.BenchRun {
	res := mpi.BenchRun{Spec: s}
	bin, err := r.PerftestBinary()
	if err != nil {
		res.Err = err
		return res
	}
	ctx, cancel, timeout := withTimeout(ctx, r.Timeout, 5*time.Minute)
	defer cancel()
	port, err := freePort()
	if err != nil {
		res.Err = fmt.Errorf("ucx_perftest: finding a free port: %w", err)
		return res
	}
	env := append(append([]string{}, mpi.ProtoEnv...), s.Mode.Env...)
	args := append(append([]string{}, s.Args...), "-p", strconv.Itoa(port))
	res.Command = append(append(append([]string{"env"}, env...), bin, "localhost"), args...)
	srvOut, cliOut, err := r.pairLogs(&res)
	if err != nil {
		res.Err = fmt.Errorf("ucx_perftest: %w", err)
		return res
	}
	defer srvOut.Close()
	defer cliOut.Close()
	start := time.Now()
	srv := command(ctx, append([]string{bin}, args...), env, killDelay)
	srv.Stdout, srv.Stderr = srvOut, srvOut
	if err := srv.Start(); err != nil {
		res.Err = fmt.Errorf("ucx_perftest server: %w", err)
		return res
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- wait(srv) }()
	runErr := awaitListen(ctx, port, srvDone)
	var cpu float64
	if runErr == nil {
		cli := command(ctx, append([]string{bin, "localhost"}, args...), env, killDelay)
		cli.Stdout, cli.Stderr = cliOut, cliOut
		runErr = run(cli)
		cpu += cpuOf(cli.ProcessState)
		if srvErr := awaitServer(srv, srvDone); runErr == nil && srvErr != nil {
			runErr = fmt.Errorf("its server: %w", srvErr)
		}
	} else if !errors.Is(runErr, errServerEnded) {
		killGroup(srv)
		<-srvDone
	}
	res.Duration = time.Since(start)
	cpu += cpuOf(srv.ProcessState)
	res.CPUSeconds = &cpu
	last, err := readPair(&res, srvOut, cliOut)
	if err != nil {
		res.Err = fmt.Errorf("ucx_perftest: reading its output back: %w", err)
		return res
	}
	res.Err = judgeRun(ctx, &res, runErr, timeout, last)
	return res
}

// pairLogs opens the server's and the client's output files.
func (r MPIRunner) pairLogs(res *mpi.BenchRun) (srv, cli *os.File, err error) {
	name := strings.TrimSuffix(mpi.BenchLog(res.Spec), ".log")
	if srv, err = OpenLog(r.LogDir, "ucx_perftest-server", name+".server.log"); err != nil {
		return nil, nil, err
	}
	if cli, err = OpenLog(r.LogDir, "ucx_perftest-client", name+".client.log"); err != nil {
		srv.Close()
		return nil, nil, err
	}
	if r.LogDir != "" {
		res.LogFile, res.ServerLogFile = cli.Name(), srv.Name()
	} else {
		os.Remove(srv.Name()) // open, they are read back before closing
		os.Remove(cli.Name())
	}
	return srv, cli, nil
}

// awaitServer waits for the server once its client ended, killing its
// group after pairGrace.
func awaitServer(srv *exec.Cmd, done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-time.After(pairGrace):
		killGroup(srv)
		<-done
		return fmt.Errorf("still running %s after its client ended: killed", pairGrace)
	}
}

// errServerEnded: awaitListen took the server's end.
var errServerEnded = errors.New("the server ended before listening")

// awaitListen waits until the server listens on port, as
// /proc/net/tcp{,6} shows: a probe connection would be the one client
// the server accepts. It fails where the server exits first or the run
// times out.
func awaitListen(ctx context.Context, port int, srvDone <-chan error) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if listening(port) {
			return nil
		}
		select {
		case err := <-srvDone:
			if err == nil {
				err = errors.New("exited")
			}
			return fmt.Errorf("%w on port %d: %w", errServerEnded, port, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// listening: a socket on any address listens on port (state 0A in
// /proc/net/tcp, whose local_address ends in the port in hex).
func listening(port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, p := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) > 3 && fs[3] == "0A" && strings.HasSuffix(fs[1], want) {
				f.Close()
				return true
			}
		}
		f.Close()
	}
	return false
}

// freePort is a TCP port free now: the kernel's pick, closed again for
// the server to take.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func cpuOf(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

// readPair reads a pair's result from the client (the server's where the
// client printed none), and the protocol tables of both: ParseLog keeps
// each process's apart by the pid in UCX's line prefix.
func readPair(res *mpi.BenchRun, srv, cli *os.File) (string, error) {
	last, err := readBack(res, cli)
	if err != nil {
		return "", err
	}
	if res.Perftest == nil {
		if _, err := srv.Seek(0, io.SeekStart); err != nil {
			return "", err
		}
		if p, err := ucx.ParsePerftest(srv); err == nil {
			res.Perftest = p
		}
	}
	for _, f := range []*os.File{srv, cli} {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", err
		}
	}
	res.UCX, _ = ucx.ParseLog(io.MultiReader(srv, strings.NewReader("\n"), cli))
	return last, nil
}
