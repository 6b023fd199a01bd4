package runner

import (
	"os"
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

func TestNodeNameTakesTheFlagThenSlurmThenTheHostName(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, flag, slurm, hostname, want string
	}{
		{"the flag wins", "n-flag", "n-slurm", "n-host", "n-flag"},
		{"then SLURMD_NODENAME", "", "n-slurm", "n-host", "n-slurm"},
		{"then the evidence's host name", "", "", "n-host", "n-host"},
		{"then this machine's", "", "", "", host},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SLURMD_NODENAME", tc.slurm)
			if got := NodeName(tc.flag, tc.hostname); got != tc.want {
				t.Errorf("NodeName(%q, %q) with SLURMD_NODENAME=%q = %q, want %q", tc.flag, tc.hostname, tc.slurm, got, tc.want)
			}
		})
	}
}

// The facts Jenkins and the allocation suite read, from the fixture
// nodes: each named fact has its value, each absent one is left out.
func TestFactsOfTheFixtureNodes(t *testing.T) {
	h100 := map[string]string{
		"gpu_model": "8 x NVIDIA H100 80GB HBM3", "gpus": "8", "rdma_nics": "8",
		"driver": "580.95.05", "cuda_driver": "13.0", "kernel": "6.8.0-60-generic",
		"iommu": "off", "driver_flavour": "open", "link_layer": "InfiniBand",
		"hca_fw": "28.39.1002", "peermem": "absent", "mechanism": "dmabuf", "rdma_core": "50",
	}
	for _, tc := range []struct {
		node   string
		probed bool
		want   map[string]string
		absent []string
	}{
		{"h100x8-nvswitch-cx7-pix", true, h100, []string{"nccl", "nccl_library", "nccl_net_plugin", "mofed", "roce_gid_index", "roce_active_mtu"}},
		// Unprobed (the quick gate): nothing the probe would say.
		{"h100x8-nvswitch-cx7-pix", false, map[string]string{"gpus": "8", "peermem": "absent"}, []string{"mechanism", "rdma_core"}},
		{"h100x8-nccl221-peermem-only", true, map[string]string{
			"driver_flavour": "proprietary", "mofed": "24.10-1.1.4", "nccl": "2.21.5",
			"nccl_library": "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "nccl_net_plugin": "none",
			"peermem": "loaded", "mechanism": "peermem",
		}, nil},
		{"h100x8-proprietary-peermem", true, map[string]string{"peermem": "registered", "mechanism": "peermem"}, nil},
		// Without NVML the model is the PCI device ID and CUDA unknown.
		{"h100x8-nvml-version-mismatch", true, map[string]string{
			"gpu_model": "8 x NVIDIA 0x2330", "driver": "570.133.20", "mechanism": "none",
		}, []string{"cuda_driver"}},
		{"cpu-no-gpu", true, map[string]string{"gpus": "0", "rdma_nics": "1", "link_layer": "InfiniBand"},
			[]string{"gpu_model", "cuda_driver", "mechanism", "rdma_core"}},
		// The real H200 recording: a VM given two GPUs and no NIC.
		{"h200x2-nv18-vm", true, map[string]string{
			"gpu_model": "2 x NVIDIA H200", "rdma_nics": "0", "driver": "580.159.04",
			"kernel": "6.18.44-fc-v657-gpu", "mechanism": "dmabuf",
		}, []string{"link_layer", "hca_fw", "roce_gid_index"}},
	} {
		t.Run(tc.node, func(t *testing.T) {
			ev := fixture(t, tc.node, tc.probed)
			got := facts(ev)
			if len(got) == 0 || got[0] != (results.Fact{Name: "host_root", Value: ev.Host.Root}) {
				t.Fatalf("facts %v: want host_root %q first", got, ev.Host.Root)
			}
			seen := map[string]string{}
			for _, f := range got {
				if _, dup := seen[f.Name]; dup || f.Value == "" {
					t.Errorf("fact %q = %q: a fact is named once, with a value", f.Name, f.Value)
				}
				seen[f.Name] = f.Value
			}
			for k, v := range tc.want {
				if seen[k] != v {
					t.Errorf("%s = %q, want %q", k, seen[k], v)
				}
			}
			for _, k := range tc.absent {
				if v, ok := seen[k]; ok {
					t.Errorf("%s = %q, want it left out", k, v)
				}
			}
		})
	}
}

// gpus keeps each GPU's rail, link and BAR1; sysfs fills the link width
// NVML could not give.
func TestGPUsOfTheFixtureNodes(t *testing.T) {
	type want struct {
		gpus             int
		index            int // of GPU 3 (or the last)
		nic, path        string
		numa             int
		gen, width, maxW int
		bar1             int64 // total MiB; -1 for none
	}
	for _, tc := range []struct {
		node string
		want want
	}{
		{"h100x8-nvswitch-cx7-pix", want{8, 3, "mlx5_3", "PIX", 0, 5, 16, 16, 131072}},
		{"h100x8-gpu-downtrained", want{8, 3, "mlx5_3", "PIX", 0, 5, 8, 16, 131072}},
		{"h100x8-nvml-version-mismatch", want{8, -1, "mlx5_3", "PIX", 0, 0, 16, 16, -1}},
		{"h200x2-nv18-vm", want{2, 1, "", "", -1, 5, 16, 16, 262144}},
	} {
		t.Run(tc.node, func(t *testing.T) {
			gs := gpus(fixture(t, tc.node, false))
			if len(gs) != tc.want.gpus {
				t.Fatalf("%d GPUs, want %d", len(gs), tc.want.gpus)
			}
			g := gs[min(3, len(gs)-1)]
			bar1 := int64(-1)
			if g.BAR1TotalMiB != nil {
				bar1 = int64(*g.BAR1TotalMiB)
				if g.BAR1FreeMiB == nil || *g.BAR1FreeMiB > *g.BAR1TotalMiB {
					t.Errorf("BAR1 free %v of %d MiB", g.BAR1FreeMiB, bar1)
				}
			}
			got := want{len(gs), g.Index, g.NIC, g.Path, g.NUMA, g.PCIeGen, g.PCIeWidth, g.PCIeMaxWidth, bar1}
			if got != tc.want {
				t.Errorf("GPU %s: got %+v, want %+v", g.BusID, got, tc.want)
			}
		})
	}
}

func TestSetFactReplacesTheValueOrAddsTheFact(t *testing.T) {
	base := func() []results.Fact {
		return []results.Fact{{Name: "gpus", Value: "8"}, {Name: "nccl", Value: "2.21.5"}}
	}
	for _, tc := range []struct {
		name, fact, value string
		want              []results.Fact
	}{
		{"replaced in place", "nccl", "2.23.4", []results.Fact{{Name: "gpus", Value: "8"}, {Name: "nccl", Value: "2.23.4"}}},
		{"added at the end", "profile", "h100x8-ndr", []results.Fact{{Name: "gpus", Value: "8"}, {Name: "nccl", Value: "2.21.5"}, {Name: "profile", Value: "h100x8-ndr"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := setFact(base(), tc.fact, tc.value); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
