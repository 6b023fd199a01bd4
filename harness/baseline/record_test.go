package baseline_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"go.yaml.in/yaml/v3"
)

func TestParseSampleKey(t *testing.T) {
	for _, tc := range []struct {
		name, key, metric string
		size              int64
	}{
		{"a plain metric", "nccl.all_reduce.busbw", "nccl.all_reduce.busbw", 0},
		{"a metric at a size", "nccl.all_reduce.busbw@2147483648", "nccl.all_reduce.busbw", 2 << 30},
		{"a size that is not a number stays in the name", "x@2G", "x@2G", 0},
		{"a zero size stays in the name", "x@0", "x@0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, s := baseline.ParseSampleKey(tc.key)
			if m != tc.metric || s != tc.size {
				t.Errorf("ParseSampleKey(%q) = %q, %d", tc.key, m, s)
			}
			if tc.size > 0 && baseline.SampleKey(m, s) != tc.key {
				t.Errorf("SampleKey(%q, %d) = %q", m, s, baseline.SampleKey(m, s))
			}
		})
	}
}

var recordedProfile = baseline.Profile{
	Name: "h200x2-nv18-recorded", GPU: baseline.GPU{Model: "NVIDIA H200", PCIDeviceID: "0x2335"}, GPUsPerNode: 2,
	Interconnect: "NV18", NIC: baseline.NIC{Model: "none"}, PCIeGen: 5,
	Software: baseline.Software{NCCL: baseline.MustParseRange(">=2.28, <2.29")},
}

var recordedSamples = map[string][]float64{
	// an even count: the mean of the two middle values
	"nccl.all_reduce.busbw@2147483648": {341.61, 338.2, 342.0, 340.1},
	"nccl.all_reduce.busbw@268435456":  {300.67, 299.85, 301.2},
	// an odd count with an outlier: the median ignores it
	"nccl.sendrecv.busbw":              {361.05, 12.0, 360.25},
	"nccl.fallback.p2p-disabled.ratio": {0.0838, 0.0911, 0.0850},
	"rdma.write_bw.gdr":                {391.2, 392.8, 390.4, math.NaN()},
	"nccl.all_gather.busbw":            {},
}

func TestRecordTakesMediansWithDefaultTolerances(t *testing.T) {
	b := baseline.Record(recordedProfile, recordedSamples, baseline.RecordOptions{
		Source: "results.json of job 4711", Time: time.Date(2026, 5, 3, 10, 0, 0, 0, time.UTC),
		BAR1: &baseline.BAR1Limits{MinTotalMiB: 262144},
	})
	tol := func(r, a float64) *baseline.Tolerance { return &baseline.Tolerance{Relative: r, Absolute: a} }
	want := []baseline.Metric{
		{Name: "nccl.all_reduce.busbw", Unit: "GB/s", Direction: baseline.Higher, Expected: 340.9, Tolerance: tol(0.10, 0),
			BySize:  map[int64]float64{256 << 20: 300.7, 2 << 30: 340.9},
			Comment: "expected is the median at 2 GiB, the largest size\n256 MiB: median of 3 samples, 299.9..301.2\n2 GiB: median of 4 samples, 338.2..342"},
		{Name: "nccl.fallback.p2p-disabled.ratio", Direction: baseline.Lower, Expected: 0.085, Tolerance: tol(0.25, 0.05),
			Comment: "median of 3 samples, 0.0838..0.0911"},
		{Name: "nccl.sendrecv.busbw", Unit: "GB/s", Direction: baseline.Higher, Expected: 360.2, Tolerance: tol(0.10, 0),
			Comment: "median of 3 samples, 12..361.1"},
		{Name: "rdma.write_bw.gdr", Unit: "Gb/s", Direction: baseline.Higher, Expected: 391.2, Tolerance: tol(0.10, 0),
			Comment: "median of 3 samples, 390.4..392.8"},
	}
	if !reflect.DeepEqual(b.Metrics, want) {
		t.Errorf("metrics\n%+v\nwant\n%+v", b.Metrics, want)
	}
	if !strings.HasPrefix(b.Comment, "Proposed by gdrcheck baseline record on 2026-05-03 10:00 UTC from results.json of job 4711.") {
		t.Errorf("comment %q", b.Comment)
	}
}

func TestRecordKindsCanBeOverridden(t *testing.T) {
	b := baseline.Record(recordedProfile, map[string][]float64{"custom.metric": {1, 2, 3}}, baseline.RecordOptions{
		Kinds: map[string]baseline.Kind{"custom.metric": {Unit: "s", Direction: baseline.Lower}},
	})
	m, _ := b.Metric("custom.metric")
	if m.Unit != "s" || m.Direction != baseline.Lower || m.Tolerance != nil || m.Expected != 2 {
		t.Errorf("metric %+v", m)
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		name, metric, unit string
		dir                baseline.Direction
		rel                float64
	}{
		{"a collective bus bandwidth", "nccl.all_reduce.busbw", "GB/s", baseline.Higher, 0.10},
		{"a forced-mode bus bandwidth", "nccl.all_reduce.p2p-disabled.busbw", "GB/s", baseline.Higher, 0.10},
		{"a fallback ratio", "nccl.fallback.p2p-disabled.ratio", "", baseline.Lower, 0.25},
		{"an RDMA bandwidth", "rdma.write_bw.gdr", "Gb/s", baseline.Higher, 0.10},
		{"a latency", "rdma.write_lat", "us", baseline.Lower, 0.20},
		{"anything else", "x.y", "", baseline.Higher, 0.10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := baseline.KindOf(tc.metric)
			if k.Unit != tc.unit || k.Direction != tc.dir || k.Tolerance == nil || k.Tolerance.Relative != tc.rel {
				t.Errorf("KindOf(%q) = %+v", tc.metric, k)
			}
		})
	}
}

func TestARecordedBaselineRoundTripsThroughWriteAndLoad(t *testing.T) {
	b := baseline.Record(recordedProfile, recordedSamples, baseline.RecordOptions{
		Source: "a test", Time: time.Date(2026, 5, 3, 10, 0, 0, 0, time.UTC), BAR1: &baseline.BAR1Limits{MinTotalMiB: 262144, MinFreeMiB: 1024},
	})
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := b.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "recorded.yaml"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := baseline.Load(dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	got, _ := s.Get(recordedProfile.Name)
	if !reflect.DeepEqual(got.Metrics, b.Metrics) || got.Comment != b.Comment || !reflect.DeepEqual(got.BAR1, b.BAR1) ||
		got.Profile.String() != b.Profile.String() || len(baseline.Diff(b, got)) != 0 {
		t.Errorf("loaded\n%+v\nwrote\n%+v\n%s", got, b, buf.String())
	}
	// yaml.Marshal goes through MarshalYAML and writes the same.
	y, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := baseline.Parse("marshalled.yaml", y); err != nil {
		t.Errorf("yaml.Marshal output does not parse: %v\n%s", err, y)
	}
}

func TestWriteIsReviewable(t *testing.T) {
	b := baseline.Record(recordedProfile, map[string][]float64{
		"nccl.all_reduce.busbw@268435456":  {300.67},
		"nccl.all_reduce.busbw@2147483648": {341.61, 341.41},
		"nccl.fallback.p2p-disabled.ratio": {0.0838},
	}, baseline.RecordOptions{Source: "gpu01", Time: time.Date(2026, 5, 3, 10, 0, 0, 0, time.UTC)})
	var buf bytes.Buffer
	if err := b.Write(&buf); err != nil {
		t.Fatal(err)
	}
	want := `# Proposed by gdrcheck baseline record on 2026-05-03 10:00 UTC from gpu01.
# Expected values are medians of the samples; tolerances are gdrcheck's defaults
# (bandwidths 10%, ratios 25% or at least 0.05). Review before committing: is the
# profile as specific as it should be, and was the run healthy?

profile:
  name: h200x2-nv18-recorded
  gpu: {model: "NVIDIA H200", pci_device_id: "0x2335"}
  gpus_per_node: 2
  interconnect: NV18
  nic: {model: none}
  pcie_gen: 5
  software: {nccl: ">=2.28, <2.29"}
metrics:
  # expected is the median at 2 GiB, the largest size
  # 256 MiB: median of 1 sample
  # 2 GiB: median of 2 samples, 341.4..341.6
  - name: nccl.all_reduce.busbw
    unit: GB/s
    direction: higher
    expected: 341.5
    tolerance: {relative: 0.1}
    by_size:
      268435456: 300.7 # 256 MiB
      2147483648: 341.5 # 2 GiB
  # median of 1 sample
  - name: nccl.fallback.p2p-disabled.ratio
    direction: lower
    expected: 0.0838
    tolerance: {relative: 0.25, absolute: 0.05}
`
	if buf.String() != want {
		t.Errorf("Write wrote\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestWriteRefusesWhatLoadWouldReject(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    *baseline.Baseline
		want string
	}{
		{"a sample key with a bad size", baseline.Record(recordedProfile, map[string][]float64{"x@2G": {1}}, baseline.RecordOptions{}),
			`profile h200x2-nv18-recorded:11: metrics[0].name: "x@2G" is not a dotted metric id`},
		{"a profile without a name", &baseline.Baseline{BAR1: &baseline.BAR1Limits{MinTotalMiB: 1}},
			"unnamed baseline:2: profile.name: want a non-empty string"},
		{"a metric without a direction", &baseline.Baseline{Profile: baseline.Profile{Name: "x"},
			Metrics: []baseline.Metric{{Name: "m", Expected: 1}}}, `metrics[0].direction: "" is not higher or lower`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.b.Write(&bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, baseline.ErrSchema) {
				t.Errorf("Write error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestShippedBaselinesRoundTrip(t *testing.T) {
	s, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range s.Baselines() {
		var buf bytes.Buffer
		if err := b.Write(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := baseline.Parse(b.File, buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if d := baseline.Diff(b, again); len(d) != 0 || again.Comment != b.Comment {
			t.Errorf("%s changed in a Write/Parse round trip: %v", b.Profile.Name, d)
		}
	}
}
