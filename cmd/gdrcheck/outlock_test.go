package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/internal/dirlock"
	"github.com/gdrcheck/gdrcheck/results"
)

// lockRun is a run of the NCCL suites on the recorded H200 node into out,
// reporting as node; suites decide how many logs it keeps.
func lockRun(ncclDir string, env []string, out, node, suites string, more ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"run", "-q", "--host-root", nodes + "h200x2-nv18-vm.ttar", "--nccl-tests-dir", ncclDir,
		"--out", out, "--node-name", node, "--suites", suites}, more...)...)
	cmd.Env = append(append(os.Environ(), "SLURMD_NODENAME="), env...)
	return cmd
}

// checkOneRunsSet fails unless out holds one run's set: results.json,
// junit.xml and logs/ of the same run, the logs exactly those results.json
// names. It returns the node the set is of.
func checkOneRunsSet(t *testing.T, out string) string {
	t.Helper()
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	node := res.Nodes[0].Name
	var named []string
	for _, r := range res.Nodes[0].Runs {
		if r.Log != "" {
			named = append(named, r.Log)
		}
	}
	var onDisk []string
	entries, _ := os.ReadDir(filepath.Join(out, "logs"))
	for _, e := range entries {
		onDisk = append(onDisk, "logs/"+e.Name())
	}
	slices.Sort(named)
	if !slices.Equal(named, onDisk) {
		t.Errorf("%s: results.json (node %s) names the logs %q, logs/ holds %q", out, node, named, onDisk)
	}
	b, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &suites); err != nil || len(suites.Suites) == 0 || !strings.Contains(suites.Suites[0].Name, node) {
		t.Errorf("%s: junit.xml %+v (%v) is not of node %s, results.json's", out, suites, err, node)
	}
	stray, _ := filepath.Glob(filepath.Join(out, ".logs.*"))
	if len(stray) > 0 {
		t.Errorf("%s: staging left behind: %q", out, stray)
	}
	return node
}

func TestTwoRunsIntoOneOutLeaveOneRunsSet(t *testing.T) {
	t.Parallel()
	ncclDir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf", "all_gather_perf", "sendrecv_perf"}, fakebin.H200Recordings(recorded))
	out := t.TempDir()
	waited := 0
	for round := range 20 {
		// One run keeps logs and the other none: a mix of the two, or
		// logs of an earlier round left, shows as logs/ holding files
		// results.json does not name.
		a := lockRun(ncclDir, env, out, fmt.Sprintf("a%d", round), "collectives,negative")
		b := lockRun(ncclDir, env, out, fmt.Sprintf("b%d", round), "topology")
		var wg sync.WaitGroup
		rs := make([]result, 2)
		for i, c := range []*exec.Cmd{a, b} {
			wg.Go(func() { rs[i] = runCmd(t, c) })
		}
		wg.Wait()
		for i, r := range rs {
			if r.code != 0 {
				t.Fatalf("round %d, run %d: exit %d\n%s", round, i, r.code, r.stderr)
			}
			if strings.Contains(r.stderr, "waiting for "+out+", locked by another gdrcheck run") {
				waited++
			}
		}
		node := checkOneRunsSet(t, out)
		if node != fmt.Sprintf("a%d", round) && node != fmt.Sprintf("b%d", round) {
			t.Fatalf("round %d: the set is of %s", round, node)
		}
		if _, err := os.Stat(filepath.Join(out, "logs")); strings.HasPrefix(node, "a") == errors.Is(err, os.ErrNotExist) {
			t.Errorf("round %d: the set of %s, and logs/: %v", round, node, err)
		}
	}
	t.Logf("a run waited for the other in %d of 20 rounds", waited)
}

func TestARunWaitsForTheHolderOfItsOutOrRefuses(t *testing.T) {
	t.Parallel()
	ncclDir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf", "all_gather_perf", "sendrecv_perf"}, fakebin.H200Recordings(recorded))
	out := t.TempDir()
	// A set and a stray log of an earlier run: replaced whole, not mixed.
	if r := runCmd(t, lockRun(ncclDir, env, out, "before", "collectives,negative")); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(out, "logs", "stray.log"), []byte("an earlier run's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := dirlock.Acquire(context.Background(), out, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	holder := fmt.Sprintf("locked by another gdrcheck run (pid %d)", os.Getpid())

	r := runCmd(t, lockRun(ncclDir, env, out, "refused", "collectives", "--lock-timeout", "0"))
	if r.code != 2 || !strings.Contains(r.stderr, out+": "+holder) {
		t.Errorf("--lock-timeout 0 while held: exit %d, stderr:\n%s\nwant exit 2 naming the holder", r.code, r.stderr)
	}
	r = runCmd(t, lockRun(ncclDir, env, out, "gave-up", "collectives", "--lock-timeout", "200ms"))
	if r.code != 2 || !strings.Contains(r.stderr, "waiting for "+out+", "+holder) || !strings.Contains(r.stderr, "still after 200ms (--lock-timeout)") {
		t.Errorf("--lock-timeout 200ms while held: exit %d, stderr:\n%s\nwant a waiting line, then exit 2", r.code, r.stderr)
	}
	if res, err := results.Read(filepath.Join(out, "results.json")); err != nil || res.Nodes[0].Name != "before" {
		t.Errorf("a run that never got the lock wrote the set: %v", err)
	}

	// The default waits: once it says so, the holder lets go, and it runs.
	cmd := lockRun(ncclDir, env, out, "after", "collectives")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var said bytes.Buffer
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "waiting for "+out+", "+holder) {
			break
		}
	}
	if _, err := os.Stat(filepath.Join(out, "logs", "stray.log")); err != nil {
		t.Errorf("the waiting run touched the set before it held the lock: %v", err)
	}
	held.Release()
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute): // a deadline for the test, not a timing assertion
		cmd.Process.Kill()
		t.Fatalf("still waiting 2 minutes after the lock was released:\n%s", said.String())
	}
	if err != nil {
		t.Fatalf("the waiting run: %v\n%s", err, said.String())
	}
	if !strings.Contains(said.String(), "waiting for "+out+", "+holder) {
		t.Errorf("no waiting line on stderr:\n%s", said.String())
	}
	if node := checkOneRunsSet(t, out); node != "after" {
		t.Errorf("the set is of %s, want the run that waited", node)
	}
}
