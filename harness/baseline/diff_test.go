package baseline_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
)

func TestDiff(t *testing.T) {
	old := &baseline.Baseline{
		Profile: baseline.Profile{Name: "h200x2-nv18", GPU: baseline.GPU{Model: "NVIDIA H200"}, GPUsPerNode: 2, NIC: baseline.NIC{Model: "ConnectX-7", LinkLayer: "InfiniBand"},
			Software: baseline.Software{NCCL: baseline.MustParseRange(">=2.26, <2.30")}},
		Metrics: []baseline.Metric{
			{Name: "nccl.all_reduce.busbw", Unit: "GB/s", Direction: baseline.Higher, Expected: 338,
				Tolerance: &baseline.Tolerance{Relative: 0.10, Absolute: 5},
				BySize:    map[int64]float64{256 << 20: 300, 1 << 30: 325, 2 << 30: 338}},
			{Name: "nccl.fallback.p2p-disabled.ratio", Direction: baseline.Lower, Expected: 0.5},
			{Name: "nccl.all_gather.busbw", Unit: "GB/s", Direction: baseline.Higher, Expected: 290, Tolerance: &baseline.Tolerance{Relative: 0.1}},
		},
		BAR1: &baseline.BAR1Limits{MinTotalMiB: 262144},
	}
	newer := &baseline.Baseline{
		Comment: "comments are not compared",
		Profile: baseline.Profile{Name: "h200x2-nv18", GPU: baseline.GPU{Model: "NVIDIA H200", PCIDeviceID: "0x2335"}, GPUsPerNode: 8, NIC: baseline.NIC{Model: "ConnectX-7"}},
		Metrics: []baseline.Metric{
			{Name: "nccl.all_reduce.busbw", Unit: "GB/s", Direction: baseline.Higher, Expected: 341.61,
				BySize: map[int64]float64{1 << 30: 331.46, 2 << 30: 341.61, 4 << 30: 350}},
			{Name: "nccl.fallback.p2p-disabled.ratio", Unit: "x", Direction: baseline.Higher, Expected: 0.5, Comment: "ignored"},
			{Name: "nccl.sendrecv.busbw", Unit: "GB/s", Direction: baseline.Higher, Expected: 361.05, Tolerance: &baseline.Tolerance{Relative: 0.1, Absolute: 5},
				BySize: map[int64]float64{1 << 30: 361.05}},
		},
		BAR1: &baseline.BAR1Limits{MinTotalMiB: 262144, MinFreeMiB: 1024},
	}
	var got []string
	for _, c := range baseline.Diff(old, newer) {
		got = append(got, c.String())
	}
	want := []string{
		`profile.gpu.pci_device_id set to 0x2335`,
		`profile.gpus_per_node changed from 2 to 8`,
		`profile.nic.link_layer (InfiniBand) removed: any node matches it now`,
		`profile.software.nccl (>=2.26, <2.30) removed: any node matches it now`,
		`bar1.min_free_mib set to 1024`,
		`metric nccl.all_gather.busbw removed (was expected 290 GB/s, higher is better, tolerance 10%)`,
		`metric nccl.all_reduce.busbw: expected changed from 338 to 341.6 GB/s (+1.1%)`,
		`metric nccl.all_reduce.busbw: tolerance 10% or at least 5 GB/s became hard limit`,
		`metric nccl.all_reduce.busbw: expectation at 256 MiB (300 GB/s) removed`,
		`metric nccl.all_reduce.busbw at 1 GiB: expected changed from 325 to 331.5 GB/s (+2.0%)`,
		`metric nccl.all_reduce.busbw at 2 GiB: expected changed from 338 to 341.6 GB/s (+1.1%)`,
		`metric nccl.all_reduce.busbw: expectation at 4 GiB added: 350 GB/s`,
		`metric nccl.fallback.p2p-disabled.ratio: unit changed from "" to "x"`,
		`metric nccl.fallback.p2p-disabled.ratio: direction changed from lower is better to higher is better`,
		`metric nccl.sendrecv.busbw added: expected 361.1 GB/s, higher is better, tolerance 10% or at least 5 GB/s, 1 per-size expectations`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := baseline.Diff(old, old); len(d) != 0 {
		t.Errorf("Diff of a baseline with itself: %v", d)
	}
	c := baseline.Diff(old, newer)[1]
	if c.Kind != baseline.Changed || c.Field != "profile.gpus_per_node" || c.From != "2" || c.To != "8" {
		t.Errorf("change %+v", c)
	}
}

func TestDiffOfTheShippedNDRProfiles(t *testing.T) {
	s, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	h100, _ := s.Get("h100x8-ndr")
	h200, _ := s.Get("h200x8-ndr")
	var got []string
	for _, c := range baseline.Diff(h100, h200) {
		got = append(got, c.String())
	}
	want := []string{
		"profile.name changed from h100x8-ndr to h200x8-ndr",
		"profile.gpu.model changed from NVIDIA H100 to NVIDIA H200",
		"profile.gpu.pci_device_id changed from 0x2330 to 0x2335",
		"bar1.min_total_mib changed from 131072 to 262144",
		"metric nccl.all_reduce.busbw: expected changed from 460 to 431 GB/s (-6.3%)",
		"metric nccl.all_reduce.busbw at 16 GiB: expected changed from 460 to 431 GB/s (-6.3%)",
		"metric rdma.write_bw.gdr: expected changed from 380 to 360 Gb/s (-5.3%)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
