package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	var progress bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, _, err := Run(Options{HostRoot: "/", NodeName: "live", Suites: []string{"mpi"}, MPIFactsTimeout: time.Second, Progress: &progress})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("--suites mpi still held after 45s by ompi_info's child (timeout 1s)")
	}
	if !strings.Contains(progress.String(), "ompi_info: killed after 1s") {
		t.Errorf("the mpi suite did not say ompi_info was killed:\n%s", progress.String())
	}
}
