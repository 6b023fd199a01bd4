package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealthCommandOnARecordedNode: the command is flags -> health.Run:
// a recorded node without peer memory exits 1 naming the check and the
// action, keeps its state file, and writes a textfile promtool accepts;
// a bad flag exits 2 before reading anything.
func TestHealthCommandOnARecordedNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prom := filepath.Join(dir, "health.prom")
	state := filepath.Join(dir, "state")
	r := gdrcheck(t, "health", "--host-root", nodes+"h100x8-proprietary-no-peermem.ttar", "--slurm", "off", "--state-dir", state, "--prom-textfile", prom)
	if r.code != 1 || !strings.Contains(r.stdout, "unhealthy action=RELOAD_DRIVER") || !strings.Contains(r.stdout, "peer-memory: no peer-memory path") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "health.json")); err != nil {
		t.Errorf("no state file: %v", err)
	}
	b, err := os.ReadFile(prom)
	if err != nil || !strings.Contains(string(b), `gdrcheck_health_state{action="RELOAD_DRIVER",check="peer-memory",node="h100-node",state="unhealthy"} 1`) {
		t.Fatalf("textfile %v:\n%s", err, b)
	}
	if _, err := exec.LookPath("promtool"); err == nil {
		lint := exec.Command("promtool", "check", "metrics")
		lint.Stdin = strings.NewReader(string(b))
		if out, err := lint.CombinedOutput(); err != nil {
			t.Errorf("promtool: %v\n%s", err, out)
		}
	}
	r = gdrcheck(t, "health", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--slurm", "off", "--state-dir", state)
	if r.code != 0 || !strings.Contains(r.stdout, "stale action=RERUN") || !strings.Contains(r.stdout, "deep result absent") {
		t.Errorf("healthy node without a deep result: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"--slurm", "maybe"}, {"--prom-textfile", filepath.Join(dir, "x.txt")}} {
		r = gdrcheck(t, append([]string{"health", "--host-root", nodes + "h100x8-nvswitch-cx7-pix.ttar", "--state-dir", state}, args...)...)
		if r.code != 2 {
			t.Errorf("health %v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
	if r := gdrcheck(t, "health", "--help"); r.code != 0 || !strings.Contains(r.stdout, "HealthCheckProgram") || !strings.Contains(r.stdout, "--breaker-percent") {
		t.Errorf("--help: exit %d\n%s", r.code, r.stdout)
	}
}
