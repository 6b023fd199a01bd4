package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

// `--suites mpi` on the live host is not held by an ompi_info whose child
// keeps its stdout open (issue 32): the command's process group is killed
// at its timeout, a short one here, and the suite's commentary says so.
// Before, only ompi_info was killed and the run waited on the child.
func TestAnOMPIInfoWhoseChildHoldsStdoutDoesNotHoldTheMPISuite(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho ompi:version:full:5.0.3\n/bin/sleep 300 &\nwait\n"
	if err := os.WriteFile(filepath.Join(dir, "ompi_info"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	h, err := node.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	// The node run's benchmarks step, as Run takes it (Run itself runs
	// the Ginkgo suites, once a process, which another test does).
	var progress bytes.Buffer
	r := &nodeRun{opt: Options{Suites: []string{"mpi"}, MPIFactsTimeout: time.Second, Progress: &progress},
		h: h, ev: &node.Evidence{}, sc: &suites.Context{}, n: &results.Node{Name: "live"}}
	done := make(chan struct{})
	go func() {
		r.benchmarks()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		t.Fatal("--suites mpi still held after 45s by ompi_info's child (timeout 1s)")
	}
	if r.sc.MPI == nil || !strings.Contains(r.sc.MPI.OMPIInfo.Error, "ompi_info: killed after 1s") {
		t.Errorf("the mpi suite's facts: %+v", r.sc.MPI)
	}
	if !strings.Contains(progress.String(), "ompi_info: killed after 1s") {
		t.Errorf("the mpi suite did not say ompi_info was killed:\n%s", progress.String())
	}
}
