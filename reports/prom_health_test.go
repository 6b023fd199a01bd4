package reports

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

// TestHealthTextfileCarriesTheActionAndTheBreaker: the node's state with
// its action as a label, every finding, the breaker named, a fail open
// as evaluated 0; promtool lints it.
func TestHealthTextfileCarriesTheActionAndTheBreaker(t *testing.T) {
	s := HealthState{Node: "gpu-017", State: "unhealthy", Action: results.ActionCheckCable, Check: "rail-port",
		Breaker: "circuit breaker open: partition gpu has 2 of 10 nodes drained", SlurmOp: "held",
		At: time.Unix(1796345679, 0), Elapsed: 180 * time.Millisecond,
		Findings: []HealthFinding{{Check: "rail-port", State: "unhealthy", Action: results.ActionCheckCable, Scope: results.ScopePort, Entity: "mlx5_3/1"},
			{Check: "deep", State: "stale", Action: results.ActionRerun, Scope: results.ScopeNode, Entity: "gpu-017\n\"x\""}}}
	var b bytes.Buffer
	if err := WriteHealthPrometheus(&b, s); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`gdrcheck_health_state{action="CHECK_CABLE",check="rail-port",node="gpu-017",state="unhealthy"} 1`,
		`gdrcheck_health_finding{action="CHECK_CABLE",check="rail-port",entity="mlx5_3/1",node="gpu-017",scope="port",state="unhealthy"} 1`,
		`gdrcheck_health_circuit_breaker_open{breaker="circuit breaker open: partition gpu has 2 of 10 nodes drained",node="gpu-017"} 1`,
		`gdrcheck_health_slurm_operation{node="gpu-017",op="held"} 1`,
		`gdrcheck_health_evaluated{failure="",node="gpu-017"} 1`,
		`gdrcheck_health_last_run_timestamp_seconds{node="gpu-017"} 1.796345679e+09`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("textfile lacks %s:\n%s", want, text)
		}
	}
	series := regexp.MustCompile(`^gdrcheck_health_[a-z_]+\{[^\n]*\} [-0-9.e+]+$`)
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(l, "# ") && !series.MatchString(l) {
			t.Errorf("line %q is no series: an entity's newline split one", l)
		}
	}
	s.Failure, s.Breaker = "state directory \"/var/lib/gdrcheck\" is not writable", ""
	b.Reset()
	if err := WriteHealthPrometheus(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `gdrcheck_health_evaluated{failure="state directory \"/var/lib/gdrcheck\" is not writable",node="gpu-017"} 0`) ||
		!strings.Contains(b.String(), `gdrcheck_health_circuit_breaker_open{breaker="",node="gpu-017"} 0`) {
		t.Errorf("fail open textfile:\n%s", b.String())
	}
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed: lint skipped")
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(b.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
