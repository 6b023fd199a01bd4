package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

// runNoNCCL runs gdrcheck on a fixture with no nccl-tests anywhere on
// PATH (the tests' PATH holds none).
func runNoNCCL(t *testing.T, name string, extra ...string) (result, *results.Results) {
	t.Helper()
	out := t.TempDir()
	r := gdrcheck(t, append([]string{"run", "-q", "--host-root", nodes + name + ".ttar", "--out", out}, extra...)...)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\n%s%s", err, r.stdout, r.stderr)
	}
	return r, res
}

// summaryStatus is a suite's status in the console's summary table.
func summaryStatus(t *testing.T, stdout, suite string) string {
	t.Helper()
	m := regexp.MustCompile(`\| ` + suite + ` +\|[^\n]*\| (\w+) +\|\n`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no %s row in:\n%s", suite, stdout)
	}
	return m[1]
}

// issue 22: with no nccl-tests the NCCL suites proved nothing: SKIP, with
// the reason on the console, and exit 2 naming what to install.
func TestWithoutNCCLTestsTheNCCLSuitesAreSkipAndTheRunExits2(t *testing.T) {
	t.Parallel()
	r, res := runNoNCCL(t, "h100x8-nvswitch-cx7-pix")
	if r.code != results.ExitUnevaluable {
		t.Errorf("exit %d, want 2\n%s", r.code, r.stdout)
	}
	for _, s := range []string{"collectives", "negative"} {
		if got := summaryStatus(t, r.stdout, s); got != "SKIP" {
			t.Errorf("%s is %s, want SKIP", s, got)
		}
	}
	if got := summaryStatus(t, r.stdout, "kernel"); got != "PASS" {
		t.Errorf("kernel is %s", got)
	}
	for _, want := range []string{
		"Skipped: could not run here\n  collectives, negative (11 specs): nccl-tests binary not found: all_reduce_perf on PATH (install",
		"exit 2: collectives, negative could not run here: nccl-tests binary not found",
		"Skipped: does not apply here\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("console lacks %q:\n%s", want, r.stdout)
		}
	}
	// The reports say so too: text, markdown, the textfile.
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "results.json"), mustJSON(t, res), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "markdown"} {
		rep := gdrcheck(t, "report", out, "--format", format)
		if rep.code != results.ExitUnevaluable || !strings.Contains(rep.stdout, "SKIP") || !strings.Contains(rep.stdout, "nccl-tests binary not found") {
			t.Errorf("report --format %s: exit %d\n%s", format, rep.code, rep.stdout)
		}
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "  ") && len(l) > 100 {
			t.Errorf("a list line of %d columns: %q", len(l), l)
		}
	}
}

// The quick gate selects no NCCL suite: nothing it needs is missing, so
// no suite could not run (a single spec that could not, the Xid check on a
// recording without a kernel log, is listed but leaves its suite passing).
func TestTheQuickGateWithoutNCCLTestsStillExits0(t *testing.T) {
	t.Parallel()
	r, res := runNoNCCL(t, "h100x8-nvswitch-cx7-pix", "--suites", "topology,kernel,bar1")
	if r.code != 0 || strings.Contains(r.stdout, "exit 2:") || strings.Contains(r.stdout, "nccl-tests") {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}
	// Each selected suite ran and passed, its skips not-applicable ones
	// but the one the recording forces (it holds no kernel log: snapshot
	// was not root), and nothing was benchmarked.
	n := res.Nodes[0]
	if n.Status != results.NodeEvaluated || len(n.Runs) != 0 {
		t.Errorf("node %s (%s), %d runs: want evaluated with no benchmark", n.Status, n.Reason, len(n.Runs))
	}
	var names []string
	for _, s := range n.Suites {
		names = append(names, s.Name)
		if s.Status() != results.SuitePass || s.CannotRun() {
			t.Errorf("%s: %s, cannot run %v", s.Name, s.Status(), s.CannotRun())
		}
		passed := 0
		for _, sp := range s.Specs {
			switch {
			case sp.State == results.StatePassed:
				passed++
			case sp.State == results.StateSkipped && sp.SkipKind == results.SkipCannotRun &&
				strings.HasPrefix(sp.Name, "logs no Xid") && strings.HasPrefix(sp.Message, "kernel log not readable"):
			case sp.State != results.StateSkipped || sp.SkipKind != results.SkipNotApplicable:
				t.Errorf("%s / %s: %s (%s) %q", s.Name, sp.Name, sp.State, sp.SkipKind, sp.Message)
			case strings.Contains(sp.Message, "nccl-tests"):
				t.Errorf("%s / %s skipped for nccl-tests: %q", s.Name, sp.Name, sp.Message)
			}
		}
		if passed == 0 {
			t.Errorf("%s: no spec passed", s.Name)
		}
	}
	if got := strings.Join(names, ","); got != "topology,kernel,bar1" {
		t.Errorf("suites %s, want topology,kernel,bar1", got)
	}
}

// One GPU with nccl-tests: the shape skips leave the exit at 0, negative
// is SKIP for its shape, and one smoke all_reduce replaces the four
// one-rank sweeps.
func TestOneGPUWithNCCLTestsRunsOneSmokeRunAndExits0(t *testing.T) {
	t.Parallel()
	v, res, _ := runFixtureProm(t, "h200x1-vm")
	if v.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", v.ExitCode, strings.Join(v.Specs, "\n"))
	}
	n := res.Nodes[0]
	if len(n.Runs) != 1 || n.Runs[0].Op != "all_reduce" || n.Runs[0].Mode != "direct" {
		t.Errorf("runs %+v, want one direct all_reduce", n.Runs)
	}
	for _, s := range n.Suites {
		if s.Name == "negative" && (s.Status() != results.SuiteSkip || s.CannotRun()) {
			t.Errorf("negative: %s, cannot run %v", s.Status(), s.CannotRun())
		}
		if s.Name == "collectives" && s.Status() != results.SuitePass {
			t.Errorf("collectives: %s", s.Status())
		}
	}
}

func mustJSON(t *testing.T, r *results.Results) []byte {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func commandWithEnv(args, env []string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "SLURMD_NODENAME="), env...)
	return cmd
}

// issue 22: a word gdrcheck does not know is exit 2, never help and 0.
func TestUnknownSubcommandsAndArgumentsExit2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "nccltests", "x"}, `unknown command "nccltests" for "gdrcheck analyze"; did you mean nccl-tests?`},
		{[]string{"baseline", "shw"}, `unknown command "shw" for "gdrcheck baseline"; did you mean show?`},
		{[]string{"inventory", "extra"}, `unknown command "extra" for "gdrcheck inventory"`},
		{[]string{"nosuch"}, `unknown command "nosuch" for "gdrcheck"`},
		// -q is --quiet alone: submit's --qos has no shorthand.
		{[]string{"submit", "-q", "normal"}, "unknown shorthand flag: 'q'"},
	}
	for _, c := range cases {
		r := gdrcheck(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("gdrcheck %v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if r := gdrcheck(t, "baseline"); r.code != 0 || !strings.Contains(r.stdout, "Available Commands") {
		t.Errorf("gdrcheck baseline: exit %d\n%s", r.code, r.stdout)
	}
}

// issue 22: errors name the file and what was wrong, in the user's terms.
func TestErrorsNameTheFileWithoutGoInternals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, res := runNoNCCL(t, "h200x1-vm", "--suites", "topology")
	resultsJSON := filepath.Join(dir, "results.json")
	if err := os.WriteFile(resultsJSON, mustJSON(t, res), 0o644); err != nil {
		t.Fatal(err)
	}
	yamlFile := filepath.Join(dir, "node42.yaml")
	if err := os.WriteFile(yamlFile, []byte("node: node42\ngpus: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.ttar")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	root := nodes + "h200x1-vm.ttar"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"inventory", "--host-root", root, "--expect", resultsJSON}, `not an inventory (gdrcheck inventory --format yaml writes one): line 2: unknown key "schema"`},
		{[]string{"inventory", "--host-root", root, "--expect", dir}, "--expect " + dir + ": is a directory"},
		{[]string{"compare", dir, yamlFile}, "reading " + yamlFile + ": not a results.json: it is not JSON"},
		{[]string{"run", "-q", "--host-root", empty, "--out", t.TempDir()}, "--host-root " + empty + ": not a recorded node: it holds no sys/ directory"},
		{[]string{"run", "-q", "--host-root", filepath.Join(dir, "nosuch"), "--out", t.TempDir()}, "no such file or directory"},
	}
	for _, c := range cases {
		r := gdrcheck(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("gdrcheck %v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
		for _, internal := range []string{"node.Inventory", "literal null", "gdrcheck-host-"} {
			if strings.Contains(r.stderr, internal) {
				t.Errorf("gdrcheck %v: %q leaks %q", c.args, r.stderr, internal)
			}
		}
	}
}

// issue 22: baseline diff FILE reads the named files, not the others
// beside them.
func TestBaselineDiffReadsOnlyTheNamedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := os.ReadFile("../../fixtures/baselines/h200x2-nv18.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(a, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "unrelated.yaml"), []byte("not: [a baseline"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := gdrcheck(t, "baseline", "diff", a, a)
	if r.code != 0 || !strings.Contains(r.stdout, "no differences") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// issue 22: Ginkgo's report, with its source locations relative to the
// module, only under -v; one skip count otherwise.
func TestSourceLocationsOnlyUnderVerboseAndRelative(t *testing.T) {
	t.Parallel()
	recs, _ := shapeRuns("h100x8-proprietary-no-peermem")
	ncclDir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "sendrecv_perf"}, recs)
	for _, verbose := range []bool{false, true} {
		args := []string{"run", "--host-root", nodes + "h100x8-proprietary-no-peermem.ttar", "--out", t.TempDir(), "--nccl-tests-dir", ncclDir}
		if verbose {
			args = append(args, "-v")
		}
		cmd := commandWithEnv(args, env)
		r := runCmd(t, cmd)
		if r.code != 1 {
			t.Fatalf("-v %v: exit %d\n%s", verbose, r.code, r.stderr)
		}
		all := r.stdout + r.stderr
		has := strings.Contains(r.stderr, "suites/kernel/kernel.go:")
		if has != verbose || strings.Contains(all, "github.com/gdrcheck/gdrcheck/suites") {
			t.Errorf("-v %v: locations shown %v, or not relative:\n%s", verbose, has, r.stderr)
		}
		if !verbose && strings.Contains(r.stderr, "Skipped") {
			t.Errorf("a second skip count without -v:\n%s", r.stderr)
		}
		if strings.Contains(all, "kernel modules is proprietary") {
			t.Errorf("grammar:\n%s", all)
		}
	}
}
