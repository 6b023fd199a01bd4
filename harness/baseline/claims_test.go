package baseline_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/results"
)

// shipped is the measured baseline, the one the slow run is judged
// by; each case below makes it a baseline that could never fail.
func shipped(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../../fixtures/baselines/h200x2-nv18.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// NeverFailing are baselines with which a 2 GiB all_reduce at 34 GB/s
// (90 % below the node's 341.6) would pass, each with the one error that
// refuses it: the field and a phrase of its reason. Shared with the
// binary's test through the same literal edits.
func neverFailing(t testing.TB) []struct{ name, yaml, field, why string } {
	good := shipped(t)
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("the shipped baseline has no %q: update the test", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	return []struct{ name, yaml, field, why string }{
		{"an absolute tolerance of 1e9", edit("absolute: 5}", "absolute: 1e9}"), "metrics[0].tolerance.absolute", "below half of 300.7 GB/s (by_size.268435456)"},
		{"a relative tolerance of 0.999999", edit("relative: 0.10,", "relative: 0.999999,"), "metrics[0].tolerance.relative", "at most 0.5"},
		{"lower is better on a bandwidth", edit("direction: higher", "direction: lower"), "metrics[0].direction", `"lower" does not fit nccl.all_reduce.busbw, a bus bandwidth: higher is better`},
		{"a typo in the metric name", edit("name: nccl.all_reduce.busbw", "name: nccl.allreduce.busbw"), "metrics[0].name", `unknown metric "nccl.allreduce.busbw": no spec compares it, so the baseline would judge nothing (did you mean "nccl.all_reduce.busbw"?`},
		{"a by_size expectation of 0.001", edit("2147483648: 341.61", "2147483648: 0.001"), "metrics[0].by_size.2147483648", "0.001 GB/s is below any plausible nccl.all_reduce.busbw"},
		{"a profile that matches every node and sets only bar1", "profile:\n  name: any\nbar1: {min_total_mib: 1}\n", "profile.gpu", "required field missing: a baseline is a claim about one GPU model"},
		{"an expected value of 1e308", edit("expected: 341.61", "expected: 1e308"), "metrics[0].expected", "1e+308 GB/s is above any plausible nccl.all_reduce.busbw"},
		{"a bandwidth in the NIC's unit", edit("unit: GB/s", "unit: Gb/s"), "metrics[0].unit", `"Gb/s" is not the unit of nccl.all_reduce.busbw: it is in GB/s`},
		{"a fallback limit whose band reaches past 1", edit("  - name: nccl.fallback.p2p-disabled.ratio\n    direction: lower\n    expected: 0.5\n",
			"  - name: nccl.fallback.p2p-disabled.ratio\n    direction: lower\n    expected: 0.5\n    tolerance: {absolute: 0.6}\n"),
			"metrics[3].tolerance.absolute", "puts the band's high edge at 1.1, above any plausible nccl.fallback.p2p-disabled.ratio"},
	}
}

// lineOf is the 1-based line where a baseline differs from the shipped
// one: where its error must point.
func lineOf(t testing.TB, y string) int {
	good := shipped(t)
	i := 0
	for i < len(y) && i < len(good) && y[i] == good[i] {
		i++
	}
	if i == len(y) || strings.Count(y, "\n") < 5 {
		return 0 // not an edit of the shipped file
	}
	return strings.Count(y[:i], "\n") + 1
}

func TestBaselinesThatCanNeverFailAreRefusedNamingTheField(t *testing.T) {
	for _, tc := range neverFailing(t) {
		t.Run(tc.name, func(t *testing.T) {
			_, err := baseline.Parse("x.yaml", []byte(tc.yaml))
			got := flatten(err)
			prefix := "x.yaml:"
			if line := lineOf(t, tc.yaml); line > 0 {
				prefix += fmt.Sprint(line)
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], prefix) || !strings.Contains(got[0], ": "+tc.field+": ") || !strings.Contains(got[0], tc.why) {
				t.Errorf("errors %q\nwant one at %s naming %s: ... %s", got, prefix, tc.field, tc.why)
			}
		})
	}
}

// The shipped baseline's edit that stays a claim still loads: the bounds
// are not so tight that a real band is refused.
func TestBoundsLeaveRealBandsAlone(t *testing.T) {
	for _, y := range []string{
		strings.Replace(shipped(t), "relative: 0.10,", "relative: 0.5,", 1),
		strings.Replace(shipped(t), "absolute: 5}", "absolute: 150}", 1), // half of 300.67 at 256 MiB
		strings.Replace(shipped(t), "    unit: GB/s\n", "", 1),           // the registry's unit
	} {
		b, err := baseline.Parse("x.yaml", []byte(y))
		if err != nil {
			t.Fatalf("%v", err)
		}
		if m, _ := b.Metric("nccl.all_reduce.busbw"); m.Unit != "GB/s" {
			t.Errorf("unit %q", m.Unit)
		}
	}
}

// aliasBomb is the 209 KB baseline: one anchored by_size of
// 10,000 entries and 10,000 aliases of it, which decoding followed 10,000
// times (4.4 GB, then out of memory under 4 GB).
func aliasBomb() []byte {
	var b strings.Builder
	b.WriteString("profile: {name: bomb, gpu: {model: \"NVIDIA H200\"}}\nmetrics:\n  - name: nccl.all_reduce.busbw\n    direction: higher\n    expected: 100\n    by_size: &m\n")
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&b, "      %d: 100\n", i)
	}
	for range 10000 {
		b.WriteString("  - *m\n")
	}
	return []byte(b.String())
}

func TestAnAliasBombIsRefusedWithoutExpandingIt(t *testing.T) {
	data := aliasBomb()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := baseline.Parse("bomb.yaml", data)
	runtime.ReadMemStats(&after)
	want := []string{"bomb.yaml:6: an anchor &m: YAML anchors and aliases are refused (each alias is decoded again wherever it is used); write the values out"}
	if got := flatten(err); len(got) != 1 || got[0] != want[0] {
		t.Errorf("errors %q, want %q", got, want)
	}
	// yaml.v3 holds its node tree, tens of times the file; followed, the
	// aliases were 20,000 times it.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100*uint64(len(data)) {
		t.Errorf("parsing %d bytes allocated %d, over 100 times the file", len(data), alloc)
	}
	// An alias alone, without the anchor before it refused, names itself.
	_, err = baseline.Parse("a.yaml", []byte("profile: {name: a, gpu: {model: G}}\nbar1: {min_total_mib: 1}\nx: *y\n"))
	if got := flatten(err); len(got) != 1 || !strings.Contains(got[0], "a.yaml:") {
		t.Errorf("an unknown alias: %q", got)
	}
}

func BenchmarkAliasBomb(b *testing.B) {
	data := aliasBomb()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := baseline.Parse("bomb.yaml", data); err == nil {
			b.Fatal("the bomb loaded")
		}
	}
}

// Every metric a suite compares is one the registry knows, with the
// direction and unit the suites assume.
func TestTheRegistryKnowsWhatTheSuitesCompare(t *testing.T) {
	known := func(name string, dir baseline.Direction) {
		t.Helper()
		k, ok := baseline.LookupMetric(name)
		if !ok || k.Direction != dir {
			t.Errorf("%s: %+v %v; want known, %s", name, k, ok, dir)
		}
	}
	plan := nccl.DefaultPlan(8, true, "mlx5_3")
	for _, op := range plan.Ops {
		known(results.BusBWMetric(op), baseline.Higher)
	}
	for _, m := range plan.Fallbacks {
		known(results.FallbackRatioMetric(m.Name), baseline.Lower)
	}
	for _, n := range []int{2, 4, 16384} {
		known(results.MultiNodeBusBWMetric(n), baseline.Higher)
	}
	known(results.ScalingEfficiencyMetric, baseline.Higher)
	known(results.RDMAGDRMetric, baseline.Higher)
	known(results.RDMAGPUHostRatioMetric, baseline.Higher)
	for _, name := range []string{results.MultiNodeBusBWMetric(1), results.MultiNodeBusBWMetric(16385), "nccl.all_reduce.p2p-disabled.busbw", "rdma.write_bw"} {
		if _, ok := baseline.LookupMetric(name); ok {
			t.Errorf("%s is known; no spec compares it", name)
		}
	}
	for name, want := range map[string]string{
		"nccl.allreduce.busbw":               "nccl.all_reduce.busbw",
		"nccl.all_reduce.busbw.node4":        "nccl.all_reduce.busbw.nodes4",
		"nccl.fallback.p2p_disabled.ratio":   "nccl.fallback.p2p-disabled.ratio",
		"rdma.write_bw.gpudirect":            "rdma.write_bw.gdr",
		"nccl.reducescatter.busbw":           "nccl.reduce_scatter.busbw",
		"nccl.all_reduce.scaling-efficiency": "nccl.all_reduce.scaling_efficiency",
	} {
		if got := baseline.NearestMetric(name); got != want {
			t.Errorf("NearestMetric(%q) = %q, want %q", name, got, want)
		}
	}
}
