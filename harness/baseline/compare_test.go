package baseline_test

import (
	"math"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
)

func TestCompare(t *testing.T) {
	busbw := baseline.Metric{
		Name: "nccl.all_reduce.busbw", Unit: "GB/s", Direction: baseline.Higher, Expected: 340,
		Tolerance: &baseline.Tolerance{Relative: 0.10, Absolute: 5},
		BySize:    map[int64]float64{256 << 20: 300, 1 << 20: 20},
	}
	ratio := baseline.Metric{Name: "nccl.fallback.p2p-disabled.ratio", Direction: baseline.Lower, Expected: 0.5}
	latency := baseline.Metric{Name: "lat", Unit: "us", Direction: baseline.Lower, Expected: 10, Tolerance: &baseline.Tolerance{Relative: 0.2}}
	gdr := baseline.Metric{Name: "rdma.write_bw.gdr", Unit: "Gb/s", Direction: baseline.Higher, Expected: 380}
	for _, tc := range []struct {
		name           string
		m              baseline.Metric
		value          float64
		size           int64
		expected       float64
		low, high      float64
		pass, beyond   bool
		deltaPct       float64
		atSize, isHard bool
	}{
		{"a value at expected passes", busbw, 340, 0, 340, 306, 374, true, false, 0, false, false},
		{"a shortfall within the relative tolerance passes", busbw, 310, 0, 340, 306, 374, true, false, -8.82, false, false},
		{"a value exactly at the low edge passes", busbw, 306, 0, 340, 306, 374, true, false, -10, false, false},
		{"a value below the band fails", busbw, 305.9, 0, 340, 306, 374, false, false, -10.03, false, false},
		{"a value far above the band passes and is flagged", busbw, 400, 0, 340, 306, 374, true, true, 17.65, false, false},
		{"by_size takes precedence for its size", busbw, 280, 256 << 20, 300, 270, 330, true, false, -6.67, true, false},
		{"by_size's expectation fails on its own band", busbw, 269, 256 << 20, 300, 270, 330, false, false, -10.33, true, false},
		{"the absolute tolerance wins where it is larger", busbw, 15.5, 1 << 20, 20, 15, 25, true, false, -22.5, true, false},
		{"a size without an entry uses expected", busbw, 310, 512 << 20, 340, 306, 374, true, false, -8.82, false, false},
		{"lower is better: a value above the band fails", latency, 12.1, 0, 10, 8, 12, false, false, 21, false, false},
		{"lower is better: a value under expected passes", latency, 9, 0, 10, 8, 12, true, false, -10, false, false},
		{"lower is better: far below the band is flagged", latency, 7, 0, 10, 8, 12, true, true, -30, false, false},
		{"a hard upper limit passes below it", ratio, 0.084, 0, 0.5, 0.5, 0.5, true, false, -83.2, false, true},
		{"a hard upper limit passes at it", ratio, 0.5, 0, 0.5, 0.5, 0.5, true, false, 0, false, true},
		{"a hard upper limit fails above it", ratio, 0.51, 0, 0.5, 0.5, 0.5, false, false, 2, false, true},
		{"a hard lower limit fails just below it", gdr, 379.9, 0, 380, 380, 380, false, false, -0.03, false, true},
		{"a hard lower limit is never beyond a band", gdr, 400, 0, 380, 380, 380, true, false, 5.26, false, true},
		{"NaN fails", busbw, math.NaN(), 0, 340, 306, 374, false, false, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.m.Compare(tc.value, tc.size)
			near := func(a, b float64) bool { return math.Abs(a-b) < 0.005 }
			if !near(c.Expected, tc.expected) || !near(c.Low, tc.low) || !near(c.High, tc.high) ||
				c.Pass != tc.pass || c.Beyond != tc.beyond || !near(c.DeltaPct, tc.deltaPct) ||
				c.AtSize != tc.atSize || c.Hard != tc.isHard || c.Metric != tc.m.Name || c.Size != tc.size {
				t.Errorf("Compare(%v, %d) = %+v", tc.value, tc.size, c)
			}
		})
	}
}

func TestComparisonString(t *testing.T) {
	busbw := baseline.Metric{Name: "nccl.all_reduce.busbw", Unit: "GB/s", Direction: baseline.Higher, Expected: 341.61,
		Tolerance: &baseline.Tolerance{Relative: 0.10, Absolute: 5}, BySize: map[int64]float64{2 << 30: 341.61}}
	ratio := baseline.Metric{Name: "nccl.fallback.p2p-disabled.ratio", Direction: baseline.Lower, Expected: 0.5}
	lat := baseline.Metric{Name: "lat", Unit: "us", Direction: baseline.Lower, Expected: 2.5, Tolerance: &baseline.Tolerance{Absolute: 0.5}}
	for _, tc := range []struct {
		name string
		c    baseline.Comparison
		want string
	}{
		{"a pass at a size", busbw.Compare(341.41, 2<<30), "nccl.all_reduce.busbw at 2 GiB: 341.4 GB/s, expected 341.6 GB/s (fails below 307.4), -0.1%: pass"},
		{"a failure", busbw.Compare(273.3, 0), "nccl.all_reduce.busbw: 273.3 GB/s, expected 341.6 GB/s (fails below 307.4), -20.0%: fail"},
		{"a pass far above the band", busbw.Compare(420, 0), "nccl.all_reduce.busbw: 420 GB/s, expected 341.6 GB/s (fails below 307.4), +22.9%: pass (better than the band: is the baseline stale?)"},
		{"a hard limit without a unit", ratio.Compare(0.0838, 0), "nccl.fallback.p2p-disabled.ratio: 0.0838, limit <= 0.5, -83.2%: pass"},
		{"a lower-is-better band", lat.Compare(3.1, 0), "lat: 3.1 us, expected 2.5 us (fails above 3), +24.0%: fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.String(); got != tc.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestComparisonBand(t *testing.T) {
	busbw := baseline.Metric{Name: "b", Unit: "GB/s", Direction: baseline.Higher, Expected: 341.61,
		Tolerance: &baseline.Tolerance{Relative: 0.10}, BySize: map[int64]float64{256 << 20: 300.67}}
	lat := baseline.Metric{Name: "l", Unit: "us", Direction: baseline.Lower, Expected: 2.5, Tolerance: &baseline.Tolerance{Absolute: 0.5}}
	ratio := baseline.Metric{Name: "r", Direction: baseline.Lower, Expected: 0.5}
	for _, tc := range []struct {
		name string
		c    baseline.Comparison
		want string
	}{
		{"a band at a size", busbw.Compare(322.3, 256<<20), ">= 270.6 GB/s (expected 300.7 GB/s at 256 MiB)"},
		{"a band without a size entry", busbw.Compare(322.3, 512<<20), ">= 307.4 GB/s (expected 341.6 GB/s)"},
		{"a lower-is-better band", lat.Compare(1, 0), "<= 3 us (expected 2.5 us)"},
		{"a hard limit", ratio.Compare(1, 0), "<= 0.5 (a hard limit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Band(); got != tc.want {
				t.Errorf("Band() = %q, want %q", got, tc.want)
			}
		})
	}
}
