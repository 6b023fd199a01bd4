package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// h200AllSuites is the real 2 x H200 node with every default suite: the
// kernel suite's mechanism fact, the collectives and the negative runs.
const h200AllSuites = "../../fixtures/results/h200x2-nv18-all-suites.results.json"

func h200All(t *testing.T) *results.Results {
	t.Helper()
	res, err := results.Read(h200AllSuites)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// plantUpgrade is the recorded 2 x H200 run after a bad upgrade: NCCL's
// direct all_reduce took the path the p2p-disabled run took (SHM), the
// peer-memory mechanism fell to nvidia_peermem, and all_gather lost 20 %.
func plantUpgrade(t *testing.T) *results.Results {
	t.Helper()
	res := h200All(t)
	n := &res.Nodes[0]
	var direct, gather, p2pOff *results.Run
	for i := range n.Runs {
		r := &n.Runs[i]
		switch {
		case r.Suite == "collectives" && r.Op == "all_reduce":
			direct = r
		case r.Suite == "collectives" && r.Op == "all_gather":
			gather = r
		case r.Mode == "p2p-disabled":
			p2pOff = r
		}
	}
	if direct == nil || gather == nil || p2pOff == nil {
		t.Fatalf("%s lacks the direct all_reduce, all_gather or p2p-disabled run", h200AllSuites)
	}
	direct.Transport, direct.Transports, direct.PathVerdict, direct.Reasons = p2pOff.Transport, p2pOff.Transports, p2pOff.PathVerdict, p2pOff.Reasons
	direct.Points, direct.BusBW = p2pOff.Points, p2pOff.BusBW
	gather.BusBW *= 0.8
	for i := range n.Facts {
		if n.Facts[i].Name == "mechanism" {
			n.Facts[i].Value = "peermem"
		}
	}
	return res
}

func TestCompareNamesThePlantedFallbackMechanismAndBandwidthDrop(t *testing.T) {
	t.Parallel()
	before := resultsDir(t, h200All(t))
	after := resultsDir(t, plantUpgrade(t))

	r := gdrcheck(t, "compare", before, after)
	if r.code != results.ExitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"keeps its NCCL transports | REGRESSED | collectives all_reduce direct: P2P/CUMEM -> SHM (path direct -> fallback)",
		"keeps its peer-memory mechanism | REGRESSED | peer-memory mechanism dmabuf -> peermem",
		"collectives all_gather direct: busbw 295.90 -> 236.72 GB/s (-20.0%); baseline h200x2-nv18 allows 10.0%",
		"REGRESSED: 1 of 1 node(s): [vm]",
	} {
		if !strings.Contains(squeeze(r.stdout), want) {
			t.Errorf("the comparison does not say %q:\n%s", want, r.stdout)
		}
	}

	// JUnit: one case per node and aspect, valid for Jenkins' xUnit.
	xml := filepath.Join(t.TempDir(), "compare.xml")
	if r := gdrcheck(t, "compare", before, after, "--format", "junit", "--out", xml); r.code != results.ExitFailed {
		t.Fatalf("--format junit: exit %d, want 1\n%s", r.code, r.stderr)
	}
	validateJUnit(t, xml)
	b, err := os.ReadFile(xml)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name="keeps its peer-memory mechanism" classname="gdrcheck.vm.compare"`, `name="keeps its verdicts" classname="gdrcheck.vm.compare"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("compare.xml has no testcase %s:\n%s", want, b)
		}
	}
	html := filepath.Join(t.TempDir(), "compare.html")
	if r := gdrcheck(t, "compare", before, after, "--format", "html", "--out", html); r.code != results.ExitFailed {
		t.Fatalf("--format html: exit %d, want 1\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(html); !strings.Contains(string(b), "Compared with the run before") {
		t.Errorf("compare.html has no comparison section")
	}
}

func TestCompareOfTwoIdenticalRunsExitsZero(t *testing.T) {
	t.Parallel()
	dir := resultsDir(t, h200(t))
	r := gdrcheck(t, "compare", dir, filepath.Join(dir, "results.json"))
	if r.code != results.ExitPassed {
		t.Fatalf("exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(squeeze(r.stdout), "| vm | - | unchanged | - |") || !strings.Contains(r.stdout, "no regression on 1 node(s)") {
		t.Errorf("identical runs are not reported unchanged:\n%s", r.stdout)
	}
}

func TestCompareWithinTheBaselineBandIsNoRegressionButToleranceOverrides(t *testing.T) {
	t.Parallel()
	res := h200(t)
	for i, r := range res.Nodes[0].Runs {
		if r.Suite == "collectives" && r.Op == "all_gather" {
			res.Nodes[0].Runs[i].BusBW *= 0.94 // the band allows 10 %
		}
	}
	before, after := resultsDir(t, h200(t)), resultsDir(t, res)
	if r := gdrcheck(t, "compare", before, after); r.code != results.ExitPassed || !strings.Contains(r.stdout, "changed") {
		t.Errorf("a 6 %% drop inside a 10 %% band: exit %d, want 0 with the change noted\n%s", r.code, r.stdout)
	}
	if r := gdrcheck(t, "compare", before, after, "--tolerance", "0.05"); r.code != results.ExitFailed || !strings.Contains(r.stdout, "--tolerance allows 5.0%") {
		t.Errorf("--tolerance 0.05 on a 6 %% drop: exit %d, want 1 naming --tolerance\n%s", r.code, r.stdout)
	}
}

func TestCompareExitsTwoOnBadInput(t *testing.T) {
	t.Parallel()
	good := resultsDir(t, h200(t))
	bad := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(bad, []byte("{\"schema\": \""+results.Schema+"\",\n\"nodes\": [\n{\"name\": \"vm\", \"status\": 7}\n]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(jobs, "job-41"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{good, filepath.Join(t.TempDir(), "none")}, "AFTER: reading"},
		{[]string{bad, good}, "BEFORE: reading " + bad + ":3:"},
		{[]string{jobs, good}, "holds gdrcheck submit jobs: name one, e.g. " + filepath.Join(jobs, "job-41")},
		{[]string{good, good, "--tolerance", "1.5"}, "--tolerance: 1.5: want a fraction"},
		{[]string{good, good, "--format", "yaml"}, `--format "yaml"`},
	} {
		r := gdrcheck(t, append([]string{"compare"}, c.args...)...)
		if r.code != results.ExitUnevaluable || !strings.Contains(r.stderr, c.want) {
			t.Errorf("compare %v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// The upgrade gate in one step: the quick gate, then the same gate on the
// node after a change, compared with the run before.
func TestRunCompareToJoinsTheComparisonToTheReport(t *testing.T) {
	t.Parallel()
	before := t.TempDir()
	quick := []string{"run", "-q", "--suites", "topology,kernel,bar1"}
	if r := gdrcheck(t, append(quick, "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--out", before)...); r.code != results.ExitPassed {
		t.Fatalf("the healthy node: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	same := t.TempDir()
	r := gdrcheck(t, append(quick, "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--out", same, "--compare-to", before)...)
	if r.code != results.ExitPassed || !strings.Contains(squeeze(r.stdout), "| unchanged | - |") {
		t.Fatalf("the same node again: exit %d, want 0 and unchanged\n%s%s", r.code, r.stdout, r.stderr)
	}
	junit, _ := os.ReadFile(filepath.Join(same, "junit.xml"))
	if !strings.Contains(string(junit), `name="keeps its peer-memory mechanism" classname="gdrcheck.`) {
		t.Errorf("junit.xml of run --compare-to holds no compare testcase")
	}

	after := t.TempDir()
	r = gdrcheck(t, append(quick, "--host-root", nodes+"h100x8-proprietary-peermem.ttar", "--out", after, "--compare-to", before)...)
	if r.code != results.ExitFailed {
		t.Fatalf("after the closed modules replaced the open ones: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"kernel modules open -> proprietary", "peer-memory mechanism dmabuf -> peermem"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run --compare-to does not say %q:\n%s", want, r.stdout)
		}
	}
	res, err := results.Read(filepath.Join(after, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Tool.Suites; s[len(s)-1] != "compare" {
		t.Errorf("results.json suites %v: compare missing", s)
	}
	if r := gdrcheck(t, append(quick, "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--out", t.TempDir(), "--compare-to", filepath.Join(t.TempDir(), "nothing"))...); r.code != results.ExitUnevaluable || !strings.Contains(r.stderr, "--compare-to: reading") {
		t.Errorf("--compare-to a missing run: exit %d, stderr %q; want 2 before anything runs", r.code, r.stderr)
	}
}

// squeeze collapses the padding of table cells, so a test can name a row.
func squeeze(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		b.WriteString(strings.Join(strings.Fields(line), " "))
		b.WriteString("\n")
	}
	return b.String()
}

// A job whose nodes were renamed gpu1 -> GPU1 shares no node with the run
// before (Slurm's names are case-sensitive): compare refuses it, exit 2,
// rather than compare nothing and pass.
func TestCompareRefusesRunsWithNoNodeInCommon(t *testing.T) {
	t.Parallel()
	named := func(names ...string) string {
		res := h200(t)
		one := res.Nodes[0]
		res.Nodes = nil
		for _, n := range names {
			c := one
			c.Name = n
			res.Nodes = append(res.Nodes, c)
		}
		return filepath.Join(resultsDir(t, res), "results.json")
	}
	before := named("gpu1", "gpu2")
	r := gdrcheck(t, "compare", before, named("GPU1", "GPU2"))
	if r.code != results.ExitUnevaluable || !strings.Contains(r.stderr, "no node in common") || !strings.Contains(r.stderr, `"gpu1" and "GPU1" differ in case only`) {
		t.Errorf("exit %d, stderr %q; want 2, no node in common", r.code, r.stderr)
	}
	if r := gdrcheck(t, "compare", before, named("gpu2", "gpu1")); r.code != results.ExitPassed {
		t.Errorf("the same nodes: exit %d, want 0\n%s", r.code, r.stderr)
	}
}
