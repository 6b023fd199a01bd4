package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
	"github.com/gdrcheck/gdrcheck/results"
)

// nobody is the unprivileged user the swapper runs as.
const nobody = 65534

// swapScript, run as nobody in the recording's proc/sys/kernel, swaps
// hostname for ever, each step one rename: a regular file, a link to the
// root-only secret ($1), a named pipe.
const swapScript = `cd "$2" && cp hostname good || exit 1
while :; do
	rm -f t; ln -s "$1" t && mv -f t hostname
	cp good t && mv -f t hostname
	rm -f t; mkfifo t && mv -f t hostname
	cp good t && mv -f t hostname
done`

// Run as root over a directory that user nobody owns and changes during
// the run, gdrcheck reads nothing outside it and never blocks: while
// nobody swaps proc/sys/kernel/hostname between a file, a link to a
// root-only file and a named pipe, every run (inventory, and run with its
// results files) ends, with the recorded name or refusing the swapped
// entry, and the root-only file's content reaches no output. Without
// --trust-root such a directory is refused before anything reads it.
func TestHostRootSwappedDuringTheRunReadsNothingOutsideAndNeverBlocks(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("running gdrcheck as root against a user's swapper needs root")
	}
	// Under os.TempDir, not t.TempDir: nobody must reach the recording.
	base, err := os.MkdirTemp("", "gdrcheck-race-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	mark := make([]byte, 16)
	rand.Read(mark)
	marker := "ROOT-ONLY-" + hex.EncodeToString(mark)
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(private, "secret")
	if err := os.WriteFile(secretFile, []byte(marker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "node")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ttar.ExtractFile(nodes+"h200x2-nv18-vm.ttar", dir); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}

	r := gdrcheck(t, "inventory", "--host-root", dir)
	if r.code != results.ExitUnevaluable || !strings.Contains(r.stderr, fmt.Sprintf("%q belongs to uid %d", dir, nobody)) || !strings.Contains(r.stderr, "--trust-root") {
		t.Fatalf("a directory nobody owns, without --trust-root: exit %d, want %d naming it and --trust-root\n%s", r.code, results.ExitUnevaluable, r.stderr)
	}

	swapper := exec.Command("sh", "-c", swapScript, "swap", secretFile, filepath.Join(dir, "proc/sys/kernel"))
	swapper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var swapErr strings.Builder
	swapper.Stderr = &swapErr
	if err := swapper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { swapper.Process.Kill(); swapper.Wait() })

	const runs = 60
	outcomes := map[string]int{}
	for i := range runs {
		out := t.TempDir()
		args := []string{"inventory", "--host-root", dir, "--trust-root", "--format", "json"}
		if i%2 == 1 {
			args = []string{"run", "-q", "--suites", "kernel", "--host-root", dir, "--trust-root", "--out", out}
		}
		// A guard against a run blocked for ever, not a measure.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "SLURMD_NODENAME=")
		r := runCmd(t, cmd)
		blocked := ctx.Err() != nil
		cancel()
		if blocked {
			t.Fatalf("run %d (%s) blocked: killed after 30 seconds\n%s", i, args[0], r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, marker) {
			t.Fatalf("run %d (%s): the root-only file reached the output:\n%s\n%s", i, args[0], r.stdout, r.stderr)
		}
		markerInNoFile(t, out, marker)
		switch {
		case r.code == results.ExitUnevaluable && strings.Contains(r.stderr+r.stdout, "named pipe"):
			outcomes["refused a pipe"]++
		case r.code == results.ExitUnevaluable && strings.Contains(r.stderr+r.stdout, "which does not resolve inside"):
			outcomes["refused a link out"]++
		case r.code == results.ExitUnevaluable && strings.Contains(r.stderr+r.stdout, "changed while it was copied"):
			outcomes["refused a change"]++
		case r.code == 0 && (strings.Contains(r.stdout, `"node": "vm"`) || strings.Contains(r.stdout, "node vm:")):
			outcomes["read the recorded name"]++
		default:
			t.Errorf("run %d (%s): exit %d, neither the recorded node nor a refusal of the swapped entry\n%s\n%s", i, args[0], r.code, r.stdout, r.stderr)
		}
	}
	if swapper.Process.Signal(syscall.Signal(0)) != nil || swapErr.Len() > 0 {
		t.Fatalf("the swapper stopped: %s", swapErr.String())
	}
	t.Logf("%d runs: %v", runs, outcomes)
	// The swapper really swapped: runs met more than one of its states.
	if len(outcomes) < 2 {
		t.Errorf("every run saw the same thing (%v): the swapper did not swap", outcomes)
	}
}

// markerInNoFile fails the test if any file under dir holds marker.
func markerInNoFile(t *testing.T, dir, marker string) {
	t.Helper()
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), marker) {
				t.Errorf("the root-only file reached %s", p)
			}
		}
		return nil
	})
}
