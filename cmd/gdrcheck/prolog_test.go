package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/health"
	"github.com/gdrcheck/gdrcheck/results"
)

// prolog runs `gdrcheck prolog` on a fixture node as slurmd would: its
// environment is the job's (env), its state directory a fresh one unless
// given.
func prolog(t testing.TB, fixture, stateDir string, env []string, args ...string) result {
	t.Helper()
	a := append([]string{"prolog", "--host-root", nodes + fixture + ".ttar", "--state-dir", stateDir}, args...)
	return runCmd(t, commandWithEnv(a, append([]string{"SLURMD_NODENAME=node7", "SLURM_JOB_ID=42", "SLURM_JOB_GPUS=", "CUDA_VISIBLE_DEVICES=", "SLURM_JOB_COMMENT="}, env...)))
}

func loadProlog(t *testing.T, dir string) health.PrologRecord {
	t.Helper()
	rec, ok, err := health.LoadProlog(dir)
	if err != nil || !ok {
		t.Fatalf("LoadProlog(%s) = %v, %v", dir, ok, err)
	}
	return rec
}

func TestPrologFailsANodeWithoutPeerMemoryAndKeepsTheReason(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := prolog(t, "h100x8-proprietary-no-peermem", dir, []string{"SLURM_JOB_GPUS=0,3"}, "--deep", "never")
	if r.code != results.ExitFailed {
		t.Fatalf("exit %d, want 1 (Slurm drains and requeues)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rec := loadProlog(t, dir)
	if rec.Node != "node7" || rec.Job != "42" || rec.GPUs != "0,3" || rec.Exit != results.ExitFailed {
		t.Errorf("record node %q job %q gpus %q exit %d, want node7, 42, 0,3, 1", rec.Node, rec.Job, rec.GPUs, rec.Exit)
	}
	// The action is the kernel spec's own, as `gdrcheck run` gives it:
	// the peer-memory module to load, not a person to call.
	if !strings.HasPrefix(rec.Reason, "gdrcheck: prolog: kernel: no GPUDirect peer-memory mechanism works") || !strings.HasSuffix(rec.Reason, " action=RELOAD_DRIVER") || len(rec.Reason) > 120 {
		t.Errorf("reason %q: want gdrcheck's prefix, the kernel suite's cause and action=RELOAD_DRIVER, at most 120 bytes", rec.Reason)
	}
	if !strings.Contains(r.stderr, rec.Reason) {
		t.Errorf("stderr does not name the reason %q:\n%s", rec.Reason, r.stderr)
	}
	// Only the job's GPUs were registered: 0 and 3 are 18:00.0 and 2a:00.0
	// of this shape, each with its own rail NIC.
	for _, f := range rec.Verdict.Findings {
		if strings.Contains(f.Cause, "0000:19:00.0") {
			t.Errorf("a finding names GPU 0000:19:00.0, which the job does not hold: %s", f.Cause)
		}
	}
}

func TestPrologPassesAHealthyNodeQuicklyWithoutTheDeepSuites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := prolog(t, "h100x8-nvswitch-cx7-pix", dir, []string{"SLURM_JOB_GPUS=1,2"})
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rec := loadProlog(t, dir)
	if rec.Verdict.State != "healthy" || rec.Reason != "" {
		t.Errorf("verdict %s, reason %q: want healthy and none", rec.Verdict.Summary(), rec.Reason)
	}
	// No deep result yet, but the job holds 2 of 8 GPUs: a deep run
	// would drive the other jobs' GPUs too.
	if !strings.HasPrefix(rec.Deep, "skipped: no deep result yet") {
		t.Errorf("deep %q: want it skipped for a job holding part of the node", rec.Deep)
	}
	if _, ok, _ := health.LoadDeep(dir); ok {
		t.Error("a deep result was stored, but no deep run was due")
	}
}

func TestPrologRunsTheDeepSuitesWhenTheJobAsksAndCachesThem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := prolog(t, "h100x8-nvswitch-cx7-pix", dir, []string{"SLURM_JOB_COMMENT=train " + health.DeepComment}, "--deep", "asked")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (nccl-tests missing is gdrcheck's to fix, not the job's)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rec := loadProlog(t, dir)
	if !strings.HasPrefix(rec.Deep, "ran (the job asked") {
		t.Errorf("deep %q: want it run because the job asked", rec.Deep)
	}
	d, ok, err := health.LoadDeep(dir)
	if err != nil || !ok {
		t.Fatalf("no deep result cached: %v", err)
	}
	if !strings.Contains(d.Key.HCAFirmware, "mlx5_7=") || d.Key.Driver == "" {
		t.Errorf("deep key %+v: want the whole node's eight NICs and the driver", d.Key)
	}
	// The same job without the word runs the quick gate alone.
	dir2 := t.TempDir()
	if r := prolog(t, "h100x8-nvswitch-cx7-pix", dir2, []string{"SLURM_JOB_COMMENT=gdrcheck=deeper"}, "--deep", "asked"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if rec := loadProlog(t, dir2); rec.Deep != "" {
		t.Errorf("deep %q for a comment without %s", rec.Deep, health.DeepComment)
	}
}

func TestPrologFailsAJobGPUTheNodeDoesNotShow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := prolog(t, "h200x2-nv18-vm", dir, []string{"SLURM_JOB_GPUS=1,5"}, "--deep", "never")
	if r.code != results.ExitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rec := loadProlog(t, dir)
	if want := "gdrcheck: job-gpus: job GPUs 1,5: GPU 5: this node has no /dev/nvidia5 (2 GPUs) action=REBOOT"; rec.Reason != want {
		t.Errorf("reason\n%q, want\n%q", rec.Reason, want)
	}
}

func TestPrologFailsOpenWhenItCannotEvaluate(t *testing.T) {
	t.Parallel()
	t.Run("an unreadable host root", func(t *testing.T) {
		dir := t.TempDir()
		r := runCmd(t, commandWithEnv([]string{"prolog", "--host-root", filepath.Join(t.TempDir(), "missing"), "--state-dir", dir}, []string{"SLURMD_NODENAME=node7"}))
		if r.code != 0 || !strings.Contains(r.stderr, "fail open") {
			t.Errorf("exit %d, want 0 and \"fail open\" on stderr:\n%s", r.code, r.stderr)
		}
	})
	t.Run("a state directory it cannot write", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "not-a-dir")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// A healthy node: the record is lost, the job still starts.
		r := prolog(t, "h100x8-nvswitch-cx7-pix", file, nil, "--deep", "never")
		if r.code != 0 || !strings.Contains(r.stderr, "the record was not kept") {
			t.Errorf("exit %d, want 0 and the lost record on stderr:\n%s", r.code, r.stderr)
		}
	})
	t.Run("its own deadline", func(t *testing.T) {
		dir := t.TempDir()
		r := prolog(t, "h100x8-proprietary-no-peermem", dir, nil, "--deep", "never", "--timeout", "1ns")
		if r.code != 0 {
			t.Fatalf("exit %d, want 0 (the gate did not finish: gdrcheck's failure, not the node's)\n%s", r.code, r.stderr)
		}
		if rec := loadProlog(t, dir); rec.Exit != results.ExitUnevaluable {
			t.Errorf("record exit %d, want 2: %s", rec.Exit, rec.Verdict.Summary())
		}
	})
}

func TestEpilogCachesTheDeepResultOnceAndThenSkips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"epilog", "--host-root", nodes + "h100x8-proprietary-no-peermem.ttar", "--state-dir", dir}
	// No Slurm here: squeue is missing, so the epilog cannot tell the
	// node is idle and runs nothing, exit 0.
	env := []string{"SLURMD_NODENAME=node7", "SLURM_JOB_ID=42", "PATH=" + t.TempDir()}
	r := runCmd(t, commandWithEnv(args, env))
	if r.code != 0 || !strings.Contains(r.stderr, "fail open") {
		t.Fatalf("without squeue: exit %d, want 0 and fail open\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, ok, _ := health.LoadDeep(dir); ok {
		t.Fatal("a deep result without knowing the node was idle")
	}
	fake := t.TempDir()
	// squeue lists only the epilog's own job: the node is idle.
	if err := os.WriteFile(filepath.Join(fake, "squeue"), []byte("#!/bin/sh\necho 42\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env[2] = "PATH=" + fake + ":/usr/bin:/bin"
	r = runCmd(t, commandWithEnv(args, env))
	if r.code != 0 || !strings.Contains(r.stdout, "deep run") {
		t.Fatalf("exit %d, want 0 and a deep run\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	d, ok, err := health.LoadDeep(dir)
	if err != nil || !ok || d.Exit != results.ExitFailed || !strings.HasPrefix(d.Check, "kernel / ") || d.Action == "" {
		t.Fatalf("deep result %+v, %v: want the kernel suite's failure with an action", d, err)
	}
	r = runCmd(t, commandWithEnv(args, env))
	if r.code != 0 || !strings.Contains(r.stdout, "still speaks for the node") {
		t.Errorf("second epilog: exit %d, want 0 and no run\nstdout:\n%s", r.code, r.stdout)
	}
	// Another job on the node: no deep run, even when forced.
	if err := os.WriteFile(filepath.Join(fake, "squeue"), []byte("#!/bin/sh\necho 42; echo 43\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runCmd(t, commandWithEnv(append(args, "--deep", "always"), env))
	if r.code != 0 || !strings.Contains(r.stdout, "not idle: job(s) 43 on node7") {
		t.Errorf("busy node: exit %d, want 0 and not idle\nstdout:\n%s", r.code, r.stdout)
	}
}

// BenchmarkProlog is `gdrcheck prolog` on the 8-GPU, 8-NIC fixture as
// slurmd starts it for a job given the whole node: a process of its own,
// the quick gate on every GPU and its rail NIC, the record written. The
// budget is 30 s on a real node; "max-s" is the slowest run.
func BenchmarkProlog(b *testing.B) {
	dir := b.TempDir()
	var slowest time.Duration
	for b.Loop() {
		began := time.Now()
		r := prolog(b, "h100x8-nvswitch-cx7-pix", dir, nil, "--deep", "asked")
		if r.code != 0 {
			b.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		slowest = max(slowest, time.Since(began))
	}
	b.ReportMetric(slowest.Seconds(), "max-s")
}
