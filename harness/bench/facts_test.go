package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/node"
)

// standIn writes an ompi_info on a PATH of its own: it prints a line,
// leaves a child holding its stdout (recording the child's pid), then
// exits or waits on the child.
func standIn(t *testing.T, last string) (pidFile string) {
	t.Helper()
	dir := t.TempDir()
	pidFile = filepath.Join(dir, "child.pid")
	script := "#!/bin/sh\necho mca:opal:base:param:opal_built_with_cuda_support:value:true\n/bin/sleep 300 &\necho $! > " + pidFile + "\n" + last + "\n"
	if err := os.WriteFile(filepath.Join(dir, "ompi_info"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	return pidFile
}

// collect runs the mpi suite's collection on the live host through
// BuildFacts, failing the test if it is still held after bound.
func collect(t *testing.T, b BuildFacts, bound time.Duration) mpi.Facts {
	t.Helper()
	done := make(chan mpi.Facts, 1)
	go func() { done <- mpi.Collect("/", true, node.GDRCopy{}, b) }()
	select {
	case f := <-done:
		return f
	case <-time.After(bound):
		t.Fatalf("mpi.Collect still held after %s by a child that keeps ompi_info's stdout open", bound)
	}
	return mpi.Facts{}
}

// gone says the process died within a few seconds (a SIGKILL takes
// effect asynchronously): no such process, or a zombie no one has reaped
// yet (a container's init may not).
func gone(t *testing.T, pidFile string) bool {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the stand-in recorded no child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child pid %q: %v", b, err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return true
		}
		if _, rest, _ := strings.Cut(string(stat), ") "); strings.HasPrefix(rest, "Z") || strings.HasPrefix(rest, "X") {
			return true
		}
	}
	return false
}

// An ompi_info that hangs with a child holding its stdout is killed at
// the timeout, child and all (issue 32): before, the kill reached
// ompi_info alone and --suites mpi waited as long as the child lived.
func TestAHungOMPIInfoWhoseChildHoldsStdoutEndsAtItsTimeout(t *testing.T) {
	pidFile := standIn(t, "wait")
	f := collect(t, BuildFacts{Timeout: time.Second}, 20*time.Second)
	c := f.OMPIInfo
	if !c.Found() || !strings.Contains(c.Error, "ompi_info: killed after 1s") || !strings.Contains(c.Output, "opal_built_with_cuda_support:value:true") {
		t.Errorf("ompi_info = %+v", c)
	}
	if !gone(t, pidFile) {
		t.Error("the child holding ompi_info's stdout outlived the timeout")
	}
	if f.UCXInfo.Found() || f.MPICHVersion.Found() {
		t.Errorf("commands not on PATH were found: %+v %+v", f.UCXInfo, f.MPICHVersion)
	}
}

// An ompi_info that exits at once but leaves a child holding its stdout
// is waited for killDelay at most, and the child is killed; what it
// printed is kept.
func TestAnOMPIInfoThatLeavesAChildHoldingStdoutIsNotWaitedFor(t *testing.T) {
	pidFile := standIn(t, "exit 0")
	f := collect(t, BuildFacts{Timeout: time.Minute}, killDelay+15*time.Second)
	c := f.OMPIInfo
	if !strings.Contains(c.Error, "kept its output open") || !strings.Contains(c.Output, "opal_built_with_cuda_support:value:true") {
		t.Errorf("ompi_info = %+v", c)
	}
	if !gone(t, pidFile) {
		t.Error("the child holding ompi_info's stdout outlived it")
	}
}

// The ucx_info beside the ucx_perftest the suite was given describes the
// UCX that pair runs on, so it is the one judged, not the distribution's
// on PATH (a 1 x H200 with Debian's UCX, which has no cuda transports,
// and a UCX built --with-cuda under /tmp: before, the pair was blocked
// as a UCX misbuild of the wrong UCX). Without one there, PATH's is run.
func TestTheUCXInfoBesideTheGivenUCXPerftestIsTheOneRun(t *testing.T) {
	write := func(dir, out string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "ucx_info"), []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	onPath, built, bare := t.TempDir(), t.TempDir(), t.TempDir()
	write(onPath, "# Transport: tcp")
	write(built, "# Transport: cuda_ipc")
	t.Setenv("PATH", onPath)
	for _, c := range []struct {
		dir, path, says string
	}{
		{built, filepath.Join(built, "ucx_info"), "cuda_ipc"},
		{bare, filepath.Join(onPath, "ucx_info"), "tcp"},
		{"", filepath.Join(onPath, "ucx_info"), "tcp"},
	} {
		b := BuildFacts{Timeout: 10 * time.Second, UCXDir: c.dir}
		if got := b.Look("ucx_info"); got != c.path {
			t.Errorf("UCXDir %q: Look found %q, want %q", c.dir, got, c.path)
		}
		f := collect(t, b, 20*time.Second)
		if f.UCXInfo.Path != c.path || !strings.Contains(f.UCXInfo.Output, c.says) {
			t.Errorf("UCXDir %q: ran %q printing %q, want %q printing %q", c.dir, f.UCXInfo.Path, f.UCXInfo.Output, c.path, c.says)
		}
	}
	// Only ucx_info is looked for there: ompi_info stays PATH's.
	if got := (BuildFacts{UCXDir: built}).Look("ompi_info"); got != "" {
		t.Errorf("ompi_info found at %q, want none (not on PATH)", got)
	}
}
