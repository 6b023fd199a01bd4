package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/harness/node"
)

// startReplay starts a replay of the H200 recording whose nccl-tests hang,
// in a process group of its own, and returns once the benchmark runs: the
// archive is unpacked by then.
func startReplay(t *testing.T, tmp string) *exec.Cmd {
	t.Helper()
	dir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf", "all_gather_perf", "sendrecv_perf"}, fakebin.H200Recordings(recorded))
	cmd := exec.Command(bin, "run", "-q", "--suites", "collectives", "--host-root", nodes+"h200x2-nv18-vm.ttar", "--nccl-tests-dir", dir, "--out", t.TempDir())
	cmd.Env = append(append(os.Environ(), "SLURMD_NODENAME=", "TMPDIR="+tmp, "GDRCHECK_FAKE_NCCL_SLEEP=10m"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		// The benchmark is gdrcheck's child, in a process group of its
		// own (harness/bench), and dies with it (Pdeathsig).
		procs, _ := procfs.AllProcs()
		for _, p := range procs {
			if st, err := p.Stat(); err == nil && st.PPID == cmd.Process.Pid && strings.HasSuffix(st.Comm, "_perf") {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the replay never started nccl-tests")
		}
	}
}

// hostDirs lists the host directories under tmp.
func hostDirs(t *testing.T, tmp string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmp, node.HostDirPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// kill -9 leaves the unpacked archive behind; the next command that takes
// --host-root removes it, and not a running replay's. Which directories
// the sweep removes (not a link, not another user's) is tested in
// process in harness/node.
func TestTheRunAfterAKilledReplayRemovesWhatItLeft(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	killed := startReplay(t, tmp)
	left := hostDirs(t, tmp)
	if len(left) != 1 || !strings.HasPrefix(filepath.Base(left[0]), node.HostDirPrefix+strconv.Itoa(killed.Process.Pid)+"-") {
		t.Fatalf("host directories %v, want one named after pid %d", left, killed.Process.Pid)
	}
	syscall.Kill(-killed.Process.Pid, syscall.SIGKILL)
	killed.Wait()
	if _, err := os.Stat(filepath.Join(left[0], "sys")); err != nil {
		t.Fatalf("the killed replay's directory is not there to clean: %v", err)
	}

	// A replay running while the next command cleans up keeps its own.
	live := startReplay(t, tmp)
	liveDir, _ := filepath.Glob(filepath.Join(tmp, node.HostDirPrefix+strconv.Itoa(live.Process.Pid)+"-*"))
	if len(liveDir) != 1 {
		t.Fatalf("the running replay's directories: %v", liveDir)
	}

	cmd := exec.Command(bin, "inventory", "--host-root", nodes+"h200x2-nv18-vm.ttar")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if r := runCmd(t, cmd); r.code != 0 {
		t.Fatalf("inventory exit %d\n%s", r.code, r.stderr)
	}
	if got := hostDirs(t, tmp); len(got) != 1 || got[0] != liveDir[0] {
		t.Errorf("host directories left %v, want only the running replay's %s", got, liveDir[0])
	}
}
