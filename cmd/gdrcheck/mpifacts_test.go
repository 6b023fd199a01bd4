package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// --mpi-facts-timeout reaches the build-facts commands: an ompi_info whose
// child holds its stdout is killed at the flag's second, not the default
// minute, and the run says so.
func TestTheMPIFactsTimeoutFlagBoundsOMPIInfo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := "#!/bin/sh\necho ompi:version:full:5.0.3\n/bin/sleep 300 &\nwait\n"
	if err := os.WriteFile(filepath.Join(dir, "ompi_info"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--suites", "mpi", "--mpi-facts-timeout", "1s", "--out", t.TempDir())
	cmd.Env = append(os.Environ(), "PATH="+dir+":/usr/bin:/bin")
	r := runCmd(t, cmd)
	if r.code == 0 {
		t.Errorf("exit 0 on a host whose ompi_info never answered")
	}
	if out := r.stdout + r.stderr; !strings.Contains(out, "ompi_info: killed after 1s") {
		t.Errorf("the run did not say ompi_info was killed after 1s:\n%s", out)
	}
}
