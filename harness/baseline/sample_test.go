package baseline

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

const realResults = "../../fixtures/results/"

// The real H200 run's direct all_reduce gives one sample per size from
// 256 MiB up, and each forced fallback its ratio; a failed run none.
func TestAddSamplesTakesTheLargeSizesOfDirectRunsAndTheFallbackRatios(t *testing.T) {
	res, err := results.Read(realResults + "h200x2-nv18-collectives-negative.results.json")
	if err != nil {
		t.Fatal(err)
	}
	n := res.Nodes[0]
	s := map[string][]float64{}
	AddSamples(s, n)
	if got := s[SampleKey("nccl.all_reduce.busbw", 2<<30)]; len(got) != 1 || got[0] != 341.03 {
		t.Errorf("all_reduce at 2 GiB: %v, want [341.03]", got)
	}
	for k := range s {
		if m, size := ParseSampleKey(k); size != 0 && size < minSampleSize {
			t.Errorf("%s: a sample of %s below 256 MiB", k, m)
		}
	}
	ratios := 0
	for _, r := range n.Runs {
		if r.RatioToDirect != nil && r.Error == "" {
			ratios++
			if got := s[SampleKey(results.FallbackRatioMetric(r.Mode), 0)]; len(got) != 1 || got[0] != *r.RatioToDirect {
				t.Errorf("%s: %v, want [%v]", r.Mode, got, *r.RatioToDirect)
			}
		}
	}
	if ratios == 0 {
		t.Fatal("the recorded run has no fallback ratio")
	}
	for i := range n.Runs {
		n.Runs[i].Error = "killed"
	}
	none := map[string][]float64{}
	AddSamples(none, n)
	if len(none) != 0 {
		t.Errorf("failed runs gave %v", none)
	}
}

func TestProfileNameSaysTheHardware(t *testing.T) {
	for want, f := range map[string]Facts{
		"h200x2-nv18":     {GPUModel: "NVIDIA H200", GPUsPerNode: 2, Interconnect: "NV18", NICModel: NoNIC},
		"h100x8-nv18-cx7": {GPUModel: "NVIDIA H100 80GB HBM3", GPUsPerNode: 8, Interconnect: "NV18", NICModel: "ConnectX-7"},
		"l40sx8-pcie":     {GPUModel: "NVIDIA L40S", GPUsPerNode: 8, Interconnect: "PCIe"},
	} {
		if got := ProfileName(f); got != want {
			t.Errorf("ProfileName(%+v) = %q, want %q", f, got, want)
		}
	}
}

func TestRecordedFromNamesEachNodeOnceInOrder(t *testing.T) {
	if got, want := RecordedFrom(3, []string{"b", "a", "b", "c", "a"}), "3 run(s) on b, a, c"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
