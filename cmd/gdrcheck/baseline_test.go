package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
)

const realResults = "../../fixtures/results/"

func TestBaselineRecordProposesALoadableBaselineFromRealRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "proposed.yaml")
	r := gdrcheck(t, "baseline", "record", "--out", out,
		realResults+"h200x2-nv18-collectives-negative.results.json",
		realResults+"h200x2-nv18-mpi-collectives-negative.results.json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s, err := baseline.Load(dir)
	if err != nil {
		t.Fatalf("the proposed baseline does not load: %v", err)
	}
	b, ok := s.Get("h200x2-nv18")
	if !ok {
		t.Fatalf("profiles %v", s.Profiles())
	}
	m, ok := b.Metric("nccl.all_reduce.busbw")
	// The two runs measured 341.03 and 338.83 GB/s at 2 GiB: the median,
	// to four digits.
	if !ok || m.Expected != 339.9 || m.BySize[2147483648] != 339.9 {
		t.Errorf("all_reduce expected %v by_size %v", m.Expected, m.BySize)
	}
	if b.BAR1 == nil || b.BAR1.MinTotalMiB != 262144 {
		t.Errorf("BAR1 %+v", b.BAR1)
	}

	// Compared with what ships, the diff speaks in sentences and exits 1.
	d := gdrcheck(t, "baseline", "diff", "h200x2-nv18", out)
	if d.code != 1 || !strings.Contains(d.stdout, "metric nccl.all_reduce.busbw") {
		t.Errorf("diff: exit %d\n%s", d.code, d.stdout)
	}
	if same := gdrcheck(t, "baseline", "diff", out, out); same.code != 0 || !strings.Contains(same.stdout, "no differences") {
		t.Errorf("diff with itself: exit %d %s", same.code, same.stdout)
	}
}

func TestBaselineRecordRefusesAFailedRun(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	gdrcheck(t, "run", "-q", "--host-root", nodes+"h100x8-nic-sys.ttar", "--out", out)
	r := gdrcheck(t, "baseline", "record", out)
	if r.code != 2 || !strings.Contains(r.stderr, "did not pass") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

func TestBaselineShowListsTheShippedProfiles(t *testing.T) {
	t.Parallel()
	r := gdrcheck(t, "baseline", "show")
	for _, p := range []string{"h100x8-ndr", "h200x2-nv18", "h200x8-ndr"} {
		if !strings.Contains(r.stdout, "| "+p) {
			t.Errorf("show lacks %s:\n%s", p, r.stdout)
		}
	}
	one := gdrcheck(t, "baseline", "show", "h200x8-ndr")
	if one.code != 0 || !strings.Contains(one.stdout, "name: h200x8-ndr") {
		t.Errorf("show h200x8-ndr: %d %s", one.code, one.stdout)
	}
}

func TestMalformedBaselinesExitTwoNamingFileLineAndField(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile("../../fixtures/baselines/h200x2-nv18.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		yaml string
		want string
	}{
		"bad YAML":                    {"profile: [unclosed\n", "broken.yaml:"},
		"unknown field":               {strings.Replace(string(good), "gpus_per_node: 2", "gpus_per_node: 2\n  gpu_count: 2", 1), "gpu_count"},
		"tolerance of the wrong sign": {strings.Replace(string(good), "relative: 0.1", "relative: -0.1", 1), "tolerance"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(c.yaml), 0o644)
			for _, args := range [][]string{
				{"run", "-q", "--host-root", nodes + "h200x2-nv18-vm.ttar", "--out", t.TempDir(), "--baseline-dir", dir},
				{"baseline", "show", "--baseline-dir", dir},
			} {
				r := gdrcheck(t, args...)
				if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "broken.yaml:") {
					t.Errorf("%s: exit %d, stderr %q; want 2 naming %q", args[0], r.code, r.stderr, c.want)
				}
			}
		})
	}
	// A profile name used by two files.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), good, 0o644)
	os.WriteFile(filepath.Join(dir, "b.yaml"), good, 0o644)
	if r := gdrcheck(t, "baseline", "show", "--baseline-dir", dir); r.code != 2 || !strings.Contains(r.stderr, "h200x2-nv18") {
		t.Errorf("duplicate profile: exit %d %q", r.code, r.stderr)
	}
}

// Each baseline with which the slow run (a 2 GiB all_reduce at
// 34 GB/s) exited 0 is refused where it is loaded: exit 2, naming the
// file, the line and the field.
func TestBaselinesThatCanNeverFailExitTwo(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../fixtures/baselines/h200x2-nv18.yaml")
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("the shipped baseline has no %q: update the test", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	var bomb strings.Builder
	bomb.WriteString("profile: {name: bomb, gpu: {model: \"NVIDIA H200\"}}\nmetrics:\n  - name: nccl.all_reduce.busbw\n    direction: higher\n    expected: 100\n    by_size: &m\n")
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&bomb, "      %d: 100\n", i)
	}
	bomb.WriteString(strings.Repeat("  - *m\n", 10000))
	for name, c := range map[string]struct{ yaml, want string }{
		"absolute 1e9":            {edit("absolute: 5}", "absolute: 1e9}"), "h200x2-nv18.yaml:37: metrics[0].tolerance.absolute: "},
		"lower on a busbw":        {edit("direction: higher", "direction: lower"), "h200x2-nv18.yaml:35: metrics[0].direction: "},
		"a typo":                  {edit("name: nccl.all_reduce.busbw", "name: nccl.allreduce.busbw"), `h200x2-nv18.yaml:33: metrics[0].name: unknown metric "nccl.allreduce.busbw": no spec compares it, so the baseline would judge nothing (did you mean "nccl.all_reduce.busbw"?`},
		"a catch-all of bar1":     {"profile:\n  name: any\nbar1: {min_total_mib: 1}\n", "h200x2-nv18.yaml:2: profile.gpu: "},
		"relative 0.999999":       {edit("relative: 0.10,", "relative: 0.999999,"), "h200x2-nv18.yaml:37: metrics[0].tolerance.relative: "},
		"by_size 0.001":           {edit("2147483648: 341.61", "2147483648: 0.001"), "h200x2-nv18.yaml:42: metrics[0].by_size.2147483648: 0.001 GB/s is below"},
		"an alias bomb of 209 KB": {bomb.String(), "h200x2-nv18.yaml:6: an anchor &m: YAML anchors and aliases are refused"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "h200x2-nv18.yaml"), []byte(c.yaml), 0o644)
			for _, args := range [][]string{
				{"run", "-q", "--host-root", nodes + "h200x2-nv18-vm.ttar", "--out", t.TempDir(), "--baseline-dir", dir},
				{"baseline", "show", "--baseline-dir", dir},
				{"baseline", "diff", "h200x2-nv18", filepath.Join(dir, "h200x2-nv18.yaml")},
			} {
				r := gdrcheck(t, args...)
				if r.code != 2 || !strings.Contains(r.stderr, c.want) {
					t.Errorf("%s: exit %d, stderr %q; want 2 naming %q", args[0], r.code, r.stderr, c.want)
				}
			}
		})
	}
}
