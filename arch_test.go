package arch_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The arrows of DESIGN.md: data flows node evidence -> suites -> results ->
// reports, and nothing flows back. Checked on the whole import graph, in the
// style of crane's depcheck.
func TestImportArrows(t *testing.T) {
	rules := []struct {
		pkgs      string
		direct    bool // only the packages' own imports (Ginkgo itself uses os/exec)
		forbidden []string
		why       string
	}{
		{"./suites/...", true, []string{"os/exec", "syscall", "github.com/NVIDIA/go-nvml/pkg/nvml", "github.com/prometheus/procfs"},
			"specs only read evidence: they never shell out, read /sys or call NVML"},
		{"./suites/...", false, []string{"github.com/gdrcheck/gdrcheck/slurm", "github.com/gdrcheck/gdrcheck/runner"},
			"specs never submit jobs or run the runner"},
		{"./reports/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/gdrcheck/gdrcheck/harness", "github.com/onsi/ginkgo/v2", "github.com/onsi/gomega"},
			"reports are pure functions of results.json"},
		{"./results/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/gdrcheck/gdrcheck/harness", "github.com/gdrcheck/gdrcheck/reports", "github.com/gdrcheck/gdrcheck/slurm", "github.com/onsi/ginkgo/v2"},
			"results is the ground floor: it imports nothing of the pipeline"},
		{"./harness/...", false, []string{"github.com/gdrcheck/gdrcheck/reports"},
			"the harness writes results values; only cmd and the collector render them"},
		{"./harness/node/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/onsi/ginkgo/v2"},
			"evidence knows nothing of verdicts"},
		{"./harness/nccl/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/onsi/ginkgo/v2"},
			"parsers are plain libraries"},
		{"./harness/perftest/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/onsi/ginkgo/v2"},
			"parsers are plain libraries"},
		{"./harness/ucx/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/onsi/ginkgo/v2", "os/exec"},
			"parsers are plain libraries: the commands are run by harness/mpi"},
		{"./harness/osu/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/onsi/ginkgo/v2", "os/exec"},
			"parsers are plain libraries: the benchmarks are run by harness/mpi"},
		{"./harness/mpi/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/onsi/ginkgo/v2"},
			"evidence knows nothing of verdicts"},
		{"./slurm/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/gdrcheck/gdrcheck/harness", "github.com/onsi/ginkgo/v2", "github.com/onsi/gomega"},
			"slurm schedules, collects and drains; it judges nothing and never reads the host"},
	}
	// Only the suites speak Ginkgo and Gomega (tests aside): the runner
	// hands them evidence through suites.Run.
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "github.com/gdrcheck/gdrcheck/suites") {
			continue
		}
		for _, d := range f[1:] {
			if strings.HasPrefix(d, "github.com/onsi/ginkgo/v2") || strings.HasPrefix(d, "github.com/onsi/gomega") {
				t.Errorf("%s imports %s: only suites/... state expectations", f[0], d)
			}
		}
	}
	for _, r := range rules {
		args := []string{"list", "-deps", "-f", "{{.ImportPath}}", r.pkgs}
		if r.direct {
			args = []string{"list", "-f", `{{join .Imports "\n"}}`, r.pkgs}
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkgs, err, out)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[d] = true
		}
		for _, f := range r.forbidden {
			for d := range deps {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s imports %s: %s", r.pkgs, d, r.why)
				}
			}
		}
	}
}

// The shared floors stay below what uses them: the suites framework
// imports none of its areas (a matcher of one area lives in that area),
// and the host's evidence needs no baseline to compare versions
// (internal/version).
func TestSharedPackagesImportNothingAboveThem(t *testing.T) {
	for _, r := range []struct{ pkg, forbidden string }{
		{"./suites", "github.com/gdrcheck/gdrcheck/suites/"},
		{"./harness/node/...", "github.com/gdrcheck/gdrcheck/harness/baseline"},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", r.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		for _, d := range strings.Fields(string(out)) {
			if strings.HasPrefix(d, r.forbidden) {
				t.Errorf("%s imports %s", r.pkg, d)
			}
		}
	}
}
