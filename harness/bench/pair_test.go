package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/harness/mpi"
)

// fakePair puts the fake ucx_perftest pair's recordings in the
// environment and returns a runner of it.
func fakePair(t *testing.T, timeout time.Duration) MPIRunner {
	t.Helper()
	dir, env := fakebin.UCXPerftest(t, fakebin.H200UCXPairs("../../fixtures"))
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	return MPIRunner{Perftest: filepath.Join(dir, "ucx_perftest"), LogDir: t.TempDir(), Timeout: timeout}
}

// The real H200 pairs, replayed by the UCX_TLS gdrcheck was started
// with: each reads as its client's Final bandwidth and both processes'
// tables, and the tcp-only client's exit 255 fails the run with UCX's
// error line.
func TestPairRunReadsEachRealH200Pair(t *testing.T) {
	for _, c := range []struct {
		tls, fails string
		gbs        float64
	}{
		{"", "", 484.82058},
		{"^cuda_ipc", "", 35.62427},
		{"tcp,cuda_copy", "", 0.44895},
		{"tcp", "exit status 255: last output: [1796326343.367580] [vm:30383:0]    perftest_run.c:363  UCX  ERROR Failed to run test: Out of memory", 0},
	} {
		t.Run("UCX_TLS="+c.tls, func(t *testing.T) {
			r := fakePair(t, time.Minute)
			t.Setenv("UCX_TLS", c.tls)
			if c.tls == "" {
				os.Unsetenv("UCX_TLS")
			}
			res := r.Run(context.Background(), mpi.PairSpecs(mpi.ModeNoCUDAIPC)[0])
			bw, size, ok := res.BandwidthGBs()
			switch {
			case c.fails != "":
				if res.Err == nil || !strings.Contains(res.Err.Error(), c.fails) || ok {
					t.Errorf("err %v, bandwidth %v (%t), want it to fail with %q", res.Err, bw, ok, c.fails)
				}
			case res.Err != nil || !ok || size != mpi.PairSize || bw < c.gbs-1e-6 || bw > c.gbs+1e-6:
				t.Errorf("err %v, %v GB/s at %d (%t), want %v GB/s at 4 MiB", res.Err, bw, size, ok, c.gbs)
			case res.UCX == nil || len(res.UCX.Transfers) == 0 || res.CPUSeconds == nil:
				t.Errorf("no UCX tables or CPU time: %+v", res)
			}
			srv, err := os.ReadFile(res.ServerLogFile)
			if err != nil || !strings.Contains(string(srv), "Waiting for connection...") || !strings.HasSuffix(res.LogFile, "ucx_perftest-bw-intra-node-direct.client.log") {
				t.Errorf("server log %q (%v), client log %q", srv, err, res.LogFile)
			}
		})
	}
}

// The forced run's variable reaches both processes over gdrcheck's own
// UCX_TLS, on a port of its own, and UCX_PROTO_INFO=y is set.
func TestPairRunForcesTheFallbackOnBothSides(t *testing.T) {
	r := fakePair(t, time.Minute)
	t.Setenv("UCX_TLS", "tcp")
	res := r.Run(context.Background(), mpi.PairSpecs(mpi.ModeNoCUDAIPC)[1])
	if bw, _, ok := res.BandwidthGBs(); res.Err != nil || !ok || bw < 35.6 || bw > 35.7 {
		t.Errorf("err %v, %v GB/s (%t), want the ^cuda_ipc pipeline's 35.6", res.Err, bw, ok)
	}
	cmd := strings.Join(res.Command, " ")
	if !strings.HasPrefix(cmd, "env UCX_PROTO_INFO=y UCX_TLS=^cuda_ipc ") || !strings.Contains(cmd, "ucx_perftest localhost -t tag_bw -m cuda -s 4194304 -n 2000 -p ") {
		t.Errorf("command %q", cmd)
	}
}

// A hung transfer ends at the timeout with both processes killed, and a
// server that cannot start ends the run without a client.
func TestPairRunKillsBothSidesOfAHungPair(t *testing.T) {
	r := fakePair(t, time.Second)
	pids := filepath.Join(t.TempDir(), "pids")
	t.Setenv("GDRCHECK_FAKE_UCX_PIDS", pids)
	t.Setenv("GDRCHECK_FAKE_UCX_HANG", "client")
	res := r.Run(context.Background(), mpi.PairSpecs(mpi.ModeNoCUDAIPC)[0])
	if res.Err == nil || !strings.Contains(res.Err.Error(), "timed out after 1s") {
		t.Errorf("err %v", res.Err)
	}
	b, _ := os.ReadFile(pids)
	lines := strings.Fields(string(b))
	if len(lines) != 2 {
		t.Fatalf("pids %q, want the server's and the client's", b)
	}
	for _, p := range lines {
		f := filepath.Join(t.TempDir(), "pid")
		os.WriteFile(f, []byte(p), 0o644)
		if !gone(t, f) {
			t.Errorf("process %s outlived the timeout", p)
		}
	}
	t.Setenv("GDRCHECK_FAKE_UCX_HANG", "")
	t.Setenv("UCX_TLS", "rc") // no recording: the server exits 3 at once
	res = r.Run(context.Background(), mpi.PairSpecs(mpi.ModeNoCUDAIPC)[0])
	if res.Err == nil || !strings.Contains(res.Err.Error(), "the server ended before listening") {
		t.Errorf("err %v", res.Err)
	}
}
