package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// endless gives data over and over: a log on a loop, a pipe that never
// closes.
type endless struct {
	data []byte
	off  int
}

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.data[e.off:])
	e.off = (e.off + n) % len(e.data)
	return n, nil
}

func TestAnalyzeStopsAtMaxBytesOnEndlessDevices(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"nccl-log", "nccl-tests", "perftest"} {
		for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
			r := gdrcheck(t, "analyze", c, "--max-bytes", "64MiB", dev)
			if r.code != 2 || !strings.Contains(r.stderr, "reading stopped after 64 MiB: larger than the 64 MiB limit") || !strings.Contains(r.stderr, "--max-bytes") {
				t.Errorf("analyze %s %s: exit %d, stderr:\n%s\nwant exit 2 naming the 64 MiB cap and --max-bytes", c, dev, r.code, r.stderr)
			}
		}
	}
}

func TestAnalyzeJudgesWhatItReadOfAnEndlessPipeAsPartial(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd, file string
		code      int // 2: partial; 1: a failure was read before the cap
	}{
		{"nccl-log", directRun, 2},
		{"nccl-tests", directRun, 2},
		{"perftest", dmabufRun, 2},
		{"nccl-tests", wrongElements, 1},
		{"perftest", perftestCorpus + "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt", 1},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "analyze", c.cmd, "--max-bytes", "1MiB", "--format", "json", "-")
		cmd.Stdin = &endless{data: data}
		r := runCmd(t, cmd)
		var got struct {
			Partial bool   `json:"partial"`
			Reason  string `json:"partial_reason"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("analyze %s on %s repeated: %v\n%s\n%s", c.cmd, c.file, err, r.stdout, r.stderr)
		}
		if r.code != c.code || !got.Partial || !strings.Contains(got.Reason, "reading stopped after 1 MiB: larger than the 1 MiB limit") {
			t.Errorf("analyze %s on %s repeated: exit %d, %+v; want exit %d, partial at the 1 MiB cap", c.cmd, c.file, r.code, got, c.code)
		}
	}
}

func TestAnalyzeStopsAtTheFirstSignalOnAnEndlessPipe(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "analyze", "nccl-log", "-")
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stderr = pr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pr.Close()
		// Once it has read more than the pipe holds, it is past main's
		// signal handling and reading: the signal is not the default
		// action's.
		reading := make(chan struct{})
		go func(ready chan struct{}) {
			defer pw.Close()
			line := bytes.Repeat([]byte("NCCL INFO x\n"), 1<<12)
			for n := 0; ; n += len(line) {
				if n > 4<<20 && ready != nil {
					close(ready)
					ready = nil
				}
				if _, err := pw.Write(line); err != nil {
					return // it exited
				}
			}
		}(reading)
		<-reading
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute): // a deadline for the test, not a timing assertion
			cmd.Process.Kill()
			t.Fatalf("analyze nccl-log still reading 2 minutes after %s", sig)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "interrupted by "+map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]) {
			t.Errorf("after one %s: %v, stderr:\n%s\nwant exit 2 saying interrupted", sig, err, stderr.String())
		}
	}
}
