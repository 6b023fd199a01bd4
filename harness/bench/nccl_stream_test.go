package bench_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

// peakHeap samples the heap while f runs and returns the most it saw
// above where it started.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			var s runtime.MemStats
			runtime.ReadMemStats(&s)
			if s.HeapAlloc > base && s.HeapAlloc-base > peak.Load() {
				peak.Store(s.HeapAlloc - base)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// NCCL's debug lines from every rank of a large allocation: 48 MiB of
// them before the result table. The output goes to the run's log as it
// arrives and is parsed from there; this process holds only its tail.
func TestRunnerStreamsItsOutputToTheLogAndHoldsOnlyATail(t *testing.T) {
	r := runner(t, fakebin.H200Recordings(recorded))
	r.LogDir = filepath.Join(t.TempDir(), "logs")
	line := "gpu00001:1234:1234 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0,mlx5_1,mlx5_2,mlx5_3 cudaDriverVersion 12080"
	r.Launcher = []string{"sh", "-c", `yes "$0" | head -c 48M; exec "$@"`, line}
	var res nccl.Result
	peak := peakHeap(func() {
		res = r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf", Args: []string{"-g", "2"}, Log: "all_reduce_perf-direct.log"})
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := res.BusBW(); got != 341.61 {
		t.Errorf("busbw %.2f, want the recording's 341.61", got)
	}
	if res.LogFile != filepath.Join(r.LogDir, "all_reduce_perf-direct.log") {
		t.Errorf("log file %q", res.LogFile)
	}
	fi, err := os.Stat(res.LogFile)
	if err != nil || fi.Size() < 48<<20 {
		t.Fatalf("log %v, %v: want the whole output", fi, err)
	}
	// Had the output been held, the heap would have grown past its size.
	if peak > 16<<20 {
		t.Errorf("the heap grew by %d MiB during a run of %d MiB of output", peak>>20, fi.Size()>>20)
	}
	if len(res.Tail) > nccl.TailBytes || !bytes.Contains(res.Tail, []byte("# Avg bus bandwidth")) {
		t.Errorf("tail of %d bytes does not end the output:\n%s", len(res.Tail), res.Tail)
	}
	if bytes.Contains(res.Tail, []byte(line[:20])) && !bytes.HasPrefix(res.Tail, []byte(line[:20])) {
		t.Errorf("the tail does not start at a line")
	}
}

func TestRunnerWithoutALogDirLeavesNoFileBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := runner(t, fakebin.H200Recordings(recorded))
	res := r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf", Args: []string{"-g", "2"}})
	if res.Err != nil || res.LogFile != "" || !strings.Contains(string(res.Tail), "# Avg bus bandwidth") {
		t.Fatalf("err %v, log %q, tail %q", res.Err, res.LogFile, res.Tail)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
	r.LogDir = t.TempDir()
	for _, bad := range []string{"../x.log", "a/b.log", "..", "/etc/x.log"} {
		if res := r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf", Log: bad}); res.Err == nil || !strings.Contains(res.Err.Error(), "want a file name") {
			t.Errorf("log %q: %v", bad, res.Err)
		}
	}
}

// A launcher that never starts the ranks says why on its last line; the
// run's error quotes it from the tail.
func TestARunThatNeverStartedQuotesItsLauncher(t *testing.T) {
	r := runner(t, fakebin.H200Recordings(recorded))
	r.Launcher = []string{"sh", "-c", `echo "srun: error: Unable to allocate resources: Requested node configuration is not available" >&2; exit 1`}
	res := r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf"})
	if res.Err == nil || res.Err.Error() != "all_reduce_perf: exit status 1: last output: srun: error: Unable to allocate resources: Requested node configuration is not available" {
		t.Errorf("error %v", res.Err)
	}
}
