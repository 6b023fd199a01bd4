package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

// A hung run's ranks die with their launcher at the timeout (issue 32):
// the launcher starts the rank in the background and waits, as mpirun
// does, and the whole process group is killed, not the launcher alone.
func TestATimedOutLauncherLeavesNoRankBehind(t *testing.T) {
	dir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf"}, fakebin.H200Recordings("../../fixtures/nccl-tests"))
	pidFile := filepath.Join(t.TempDir(), "rank.pid")
	launcher := filepath.Join(t.TempDir(), "launch")
	if err := os.WriteFile(launcher, []byte("#!/bin/sh\n\"$@\" &\necho $! > "+pidFile+"\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GDRCHECK_FAKE_NCCL_SLEEP", "60s")
	r := NCCLRunner{Dir: dir, Env: env, Launcher: []string{launcher}, Timeout: 500 * time.Millisecond}
	res := r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf"})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "timed out after 500ms") {
		t.Errorf("error %v", res.Err)
	}
	if !gone(t, pidFile) {
		t.Error("the rank outlived its killed launcher")
	}
}
