package bench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/perftest"
)

const perftestCorpus = "../../fixtures/corpus/perftest/"

// fakePerftest returns a runner whose Dir holds the fake perftest
// (fixtures/fakebin/perftest) as each named binary, replaying recordings
// (keyed "<binary>-<mem>", values files to replay).
func fakePerftest(t *testing.T, binaries []string, recordings map[string]string) bench.PerftestRunner {
	t.Helper()
	dir, env := fakebin.Perftest(t, binaries, recordings)
	return bench.PerftestRunner{Dir: dir, Env: env, Timeout: time.Minute}
}

// freePort is a TCP port nothing listens on, so tests can run their
// loopbacks side by side.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var perftestRecordings = map[string]string{
	"ib_write_bw-cuda-dmabuf": perftestCorpus + "gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt",
	"ib_write_bw-host":        perftestCorpus + "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt",
	"ib_write_bw-cuda":        "../perftest/testdata/ib_write_bw-cuda-peermem-missing-couldnt-allocate-mr-synthetic.txt",
	"ib_write_lat-host":       "../perftest/testdata/ib_write_lat-ib-host-a-synthetic.txt",
}

func perftestRunner(t *testing.T) bench.PerftestRunner {
	return fakePerftest(t, []string{"ib_write_bw", "ib_write_lat"}, perftestRecordings)
}

func TestLoopbackReplaysTheDMABufRun(t *testing.T) {
	r := perftestRunner(t)
	res := r.Loopback(context.Background(), perftest.Spec{
		Binary: "ib_write_bw", Device: "mlx5_3", Mem: perftest.MemCUDADMABuf, All: true, ReportGbits: true, TCPPort: freePort(t),
	})
	if res.Err != nil {
		t.Fatalf("%v\n%s", res.Err, res.Output)
	}
	p := res.Result
	if p == nil || p.Mem != perftest.MemCUDADMABuf || p.MsgSize != 8388608 || p.BWPeakGbps != 140.55 || p.BWAvgGbps != 140.40 || p.Device != "mlx5_3" {
		t.Fatalf("result %+v", p)
	}
	if !strings.Contains(p.MemEvidence, "using DMA-BUF for GPU buffer") {
		t.Errorf("the printed DMA-BUF line should stay the evidence: %q", p.MemEvidence)
	}
	cmd := strings.Join(res.Command[1:], " ")
	if !strings.HasSuffix(res.Command[0], "/ib_write_bw") || !strings.Contains(cmd, "--use_cuda=0 --use_cuda_dmabuf") || !strings.HasSuffix(cmd, " 127.0.0.1") {
		t.Errorf("client command %q", res.Command)
	}
	if res.Side != perftest.SideClient || res.Attempts < 1 {
		t.Errorf("side %s, %d attempts", res.Side, res.Attempts)
	}
	s := res.Server
	if s == nil || s.Err != nil || s.Side != perftest.SideServer {
		t.Fatalf("server %+v", s)
	}
	if strings.Contains(strings.Join(s.Command, " "), "127.0.0.1") || !strings.Contains(string(s.Output), "Waiting for client to connect") {
		t.Errorf("server command %q, output %q", s.Command, s.Output)
	}
}

func TestLoopbackReportsTheHostMemoryFailureWithItsCause(t *testing.T) {
	r := perftestRunner(t)
	res := r.Loopback(context.Background(), perftest.Spec{Binary: "ib_write_bw", All: true, ReportGbits: true, TCPPort: freePort(t)})
	if !errors.Is(res.Err, perftest.ErrRunFailed) {
		t.Fatalf("error %v, want ErrRunFailed", res.Err)
	}
	want := "ib_write_bw client: completion failure: Failed status 10: wr_id 0 syndrom 0x88 (IBV_WC_REM_ACCESS_ERR) (exit status 1): perftest run failed"
	if res.Err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", res.Err, want)
	}
	p := res.Result
	if p.Mem != perftest.MemHost || p.Failure == nil || p.Failure.WCStatus == nil || *p.Failure.WCStatus != 10 || p.Failure.Side != "client" {
		t.Errorf("result %+v failure %+v", p, p.Failure)
	}
	// The rows before the failure are kept: host memory reached 381 Gb/s.
	if len(p.Rows) != 16 || p.BWPeakGbps != 381.50 || p.MsgSize != 65536 {
		t.Errorf("%d rows, %.2f Gb/s at %d", len(p.Rows), p.BWPeakGbps, p.MsgSize)
	}
	if res.Server == nil || res.Server.Err != nil {
		t.Errorf("server %+v", res.Server)
	}
}

func TestRunnerNamesTheMRFailureOfAPeermemlessNode(t *testing.T) {
	r := perftestRunner(t)
	port := freePort(t)
	res := r.Loopback(context.Background(), perftest.Spec{Binary: "ib_write_bw", Device: "mlx5_0", Mem: perftest.MemCUDA, All: true, TCPPort: port})
	want := "ib_write_bw client: mr failure: Couldn't allocate MR with error=14 (EFAULT) (exit status 1): perftest run failed"
	if res.Err == nil || res.Err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", res.Err, want)
	}
	if res.Result.Mem != perftest.MemCUDA || res.Result.Failure.Errno != 14 {
		t.Errorf("result %+v", res.Result)
	}
}

func TestRunnerRunsOneSide(t *testing.T) {
	r := perftestRunner(t)
	port := freePort(t)
	ctx := context.Background()
	var srv perftest.RunResult
	done := make(chan struct{})
	go func() {
		srv = r.Run(ctx, perftest.Spec{Binary: "ib_write_lat", TCPPort: port})
		close(done)
	}()
	var cli perftest.RunResult
	for i := 0; i < 50; i++ {
		cli = r.Run(ctx, perftest.Spec{Binary: "ib_write_lat", TCPPort: port, Server: "127.0.0.1"})
		if !strings.Contains(string(cli.Output), "Couldn't connect") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	<-done
	if cli.Err != nil || srv.Err != nil {
		t.Fatalf("client %v, server %v", cli.Err, srv.Err)
	}
	if cli.Result.Kind != perftest.KindLat || cli.Result.Mem != perftest.MemHost || len(cli.Result.Rows) == 0 {
		t.Errorf("client result %+v", cli.Result)
	}
	if srv.Result != nil {
		t.Errorf("the server printed no perftest output, parsed as %+v", srv.Result)
	}
}

func TestLoopbackWaitsForTheServerToListen(t *testing.T) {
	r := perftestRunner(t)
	r.Env = append(r.Env, "GDRCHECK_FAKE_PERFTEST_LISTEN_DELAY=700ms")
	res := r.Loopback(context.Background(), perftest.Spec{Binary: "ib_write_bw", Mem: perftest.MemCUDADMABuf, All: true, TCPPort: freePort(t)})
	if res.Err != nil {
		t.Fatalf("%v\n%s", res.Err, res.Output)
	}
	if res.Attempts < 2 || res.Result.BWPeakGbps != 140.55 {
		t.Errorf("%d attempts, %.2f Gb/s", res.Attempts, res.Result.BWPeakGbps)
	}
}

func TestRunnerMissingBinaryIsNotFound(t *testing.T) {
	r := perftestRunner(t)
	for name, res := range map[string]perftest.RunResult{
		"Run":      r.Run(context.Background(), perftest.Spec{Binary: "ib_read_bw", Server: "127.0.0.1"}),
		"Loopback": r.Loopback(context.Background(), perftest.Spec{Binary: "ib_read_bw"}),
	} {
		if !errors.Is(res.Err, perftest.ErrNotFound) || !strings.Contains(res.Err.Error(), "ib_read_bw in ") {
			t.Errorf("%s: %v", name, res.Err)
		}
	}
	_, err := bench.PerftestRunner{}.Lookup("ib_no_such_test_bw")
	if !errors.Is(err, perftest.ErrNotFound) || !strings.Contains(err.Error(), "on PATH") {
		t.Errorf("PATH lookup: %v", err)
	}
}

func TestLoopbackKillsAHungSide(t *testing.T) {
	cases := []struct {
		name      string
		env       string
		clientErr string // substring of the client's own error, "" for none
		err       string // substring of the loopback's error
	}{
		{"a hung client", "GDRCHECK_FAKE_PERFTEST_CLIENT_SLEEP=30s", "ib_write_bw client timed out after 500ms", "ib_write_bw client timed out after 500ms"},
		{"a server that never exits", "GDRCHECK_FAKE_PERFTEST_SERVER_SLEEP=30s", "", "server side: ib_write_bw server timed out after 500ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := perftestRunner(t)
			r.Timeout = 500 * time.Millisecond
			r.Env = append(r.Env, c.env)
			start := time.Now()
			res := r.Loopback(context.Background(), perftest.Spec{Binary: "ib_write_bw", Mem: perftest.MemCUDADMABuf, All: true, TCPPort: freePort(t)})
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %s: the hung side was not killed", took)
			}
			if res.Err == nil || !strings.Contains(res.Err.Error(), c.err) || !errors.Is(res.Err, context.DeadlineExceeded) {
				t.Errorf("error %v, want %q", res.Err, c.err)
			}
			if c.clientErr == "" && res.Result != nil && res.Result.BWPeakGbps != 140.55 {
				t.Errorf("the client's result is lost: %+v", res.Result)
			}
			if res.Server == nil || res.Server.Duration > 5*time.Second {
				t.Errorf("server %+v", res.Server)
			}
		})
	}
}

func TestLoopbackGivesUpWhenNoServerListens(t *testing.T) {
	t.Run("a server that cannot listen ends the retries", func(t *testing.T) {
		r := perftestRunner(t)
		// Something else holds the port on 127.0.0.1; the client dials
		// 127.0.0.2, where nothing listens.
		blocker, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer blocker.Close()
		port := blocker.Addr().(*net.TCPAddr).Port
		start := time.Now()
		res := r.Loopback(context.Background(), perftest.Spec{Binary: "ib_write_bw", TCPPort: port, Server: "127.0.0.2"})
		if res.Err == nil || !strings.Contains(res.Err.Error(), "connection failure: Couldn't connect to 127.0.0.2:") ||
			!strings.Contains(res.Err.Error(), "; server side: ib_write_bw server: other failure: Couldn't listen to port") {
			t.Errorf("error %v", res.Err)
		}
		if time.Since(start) > 3*time.Second {
			t.Errorf("kept retrying after the server ended")
		}
	})
	t.Run("a server that never listens is killed after the retries", func(t *testing.T) {
		r := perftestRunner(t)
		r.Env = append(r.Env, "GDRCHECK_FAKE_PERFTEST_LISTEN_DELAY=1m")
		res := r.Loopback(context.Background(), perftest.Spec{Binary: "ib_write_bw", TCPPort: freePort(t)})
		if res.Err == nil || !strings.Contains(res.Err.Error(), "connection failure: Couldn't connect to 127.0.0.1:") {
			t.Errorf("error %v", res.Err)
		}
		if res.Server == nil || res.Server.Err == nil || !strings.Contains(res.Server.Err.Error(), "ib_write_bw server killed: no client reached it") {
			t.Errorf("server %+v", res.Server)
		}
		if res.Attempts != 20 {
			t.Errorf("%d attempts, want 20", res.Attempts)
		}
	})
}

// A run the timeout kills after part of its table is partial, and the
// error names the last size it read: never a pass.
func TestARunKilledByItsTimeoutIsPartialNamingTheLastSize(t *testing.T) {
	r := perftestRunner(t)
	rec, err := os.ReadFile(filepath.Join(perftestCorpus, "gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt"))
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(rec, []byte("\n 65536 "))
	if at < 0 {
		t.Fatal("the recording has no 64 KiB row")
	}
	r.Timeout = time.Second
	r.Env = append(r.Env, fmt.Sprintf("GDRCHECK_FAKE_PERFTEST_CUT=%d", at+12)) // inside the 64 KiB row
	res := r.Loopback(context.Background(), perftest.Spec{Binary: "ib_write_bw", Mem: perftest.MemCUDADMABuf, All: true, TCPPort: freePort(t)})
	if res.Err == nil || !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "partial: ") || !strings.Contains(res.Err.Error(), "32 KiB") {
		t.Errorf("error %v, want a timeout naming the partial output and its last whole row (32 KiB)", res.Err)
	}
}
