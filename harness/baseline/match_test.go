package baseline_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
)

// h200pair is the node the h200x2-nv18 baseline was measured on.
var h200pair = baseline.Facts{
	GPUModel: "NVIDIA H200", PCIDeviceID: "0x2335", GPUsPerNode: 2, Interconnect: "NV18",
	NICModel: baseline.NoNIC, PCIeGen: 5, Driver: "580.159.04", NCCL: "2.28.3+cuda13.0", CUDA: "13.0",
}

func store(t *testing.T, bs ...*baseline.Baseline) *baseline.Store {
	t.Helper()
	for _, b := range bs {
		if b.BAR1 == nil && len(b.Metrics) == 0 {
			b.BAR1 = &baseline.BAR1Limits{MinTotalMiB: 1}
		}
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := baseline.NewStore(bs...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMatch(t *testing.T) {
	anyH200 := &baseline.Baseline{File: "any-h200.yaml", Profile: baseline.Profile{Name: "any-h200", GPU: baseline.GPU{Model: "NVIDIA H200"}}}
	pair := &baseline.Baseline{File: "pair.yaml", Profile: baseline.Profile{
		Name: "h200x2", GPU: baseline.GPU{Model: "NVIDIA H200", PCIDeviceID: "0x2335"}, GPUsPerNode: 2,
		Interconnect: "NV18", NIC: baseline.NIC{Model: "none"}, PCIeGen: 5,
		Software: baseline.Software{NCCL: baseline.MustParseRange(">=2.26, <2.30")},
	}}
	ndr := &baseline.Baseline{File: "ndr.yaml", Profile: baseline.Profile{
		Name: "h200x8-ndr", GPU: baseline.GPU{Model: "NVIDIA H200"}, GPUsPerNode: 8,
		NIC: baseline.NIC{Model: "ConnectX-7", RateGbps: 400},
	}}
	ib := &baseline.Baseline{File: "ib.yaml", Profile: baseline.Profile{
		Name: "h200x4-ib", GPU: baseline.GPU{Model: "NVIDIA H200"}, GPUsPerNode: 4,
		NIC: baseline.NIC{Model: "ConnectX-7", LinkLayer: baseline.LinkInfiniBand},
	}}
	eth := &baseline.Baseline{File: "eth.yaml", Profile: baseline.Profile{
		Name: "h200x4-roce", GPU: baseline.GPU{Model: "NVIDIA H200"}, GPUsPerNode: 4,
		NIC: baseline.NIC{Model: "ConnectX-7", LinkLayer: baseline.LinkEthernet},
	}}
	s := store(t, anyH200, pair, ndr, ib, eth)
	with := func(change func(f *baseline.Facts)) baseline.Facts {
		f := h200pair
		change(&f)
		return f
	}
	for _, tc := range []struct {
		name  string
		facts baseline.Facts
		want  string
	}{
		{"the most specific matching profile wins", h200pair, "h200x2"},
		{"a generic profile takes the nodes the specific one does not", with(func(f *baseline.Facts) { f.GPUsPerNode = 4 }), "any-h200"},
		{"the GPU model matches as a case-insensitive prefix of the NVML name", with(func(f *baseline.Facts) { f.GPUModel = "nvidia h200 141GB HBM3e" }), "h200x2"},
		{"the PCI device id matches however it is spelt", with(func(f *baseline.Facts) { f.PCIDeviceID = "2335" }), "h200x2"},
		{"another PCI device id does not match", with(func(f *baseline.Facts) { f.PCIDeviceID = "0x233b" }), "any-h200"},
		{"the interconnect matches case-insensitively", with(func(f *baseline.Facts) { f.Interconnect = "nv18" }), "h200x2"},
		{"an unknown hardware fact does not match a profile that specifies it", with(func(f *baseline.Facts) { f.PCIeGen = 0 }), "any-h200"},
		{"an unknown NCCL version is not checked", with(func(f *baseline.Facts) { f.NCCL = "" }), "h200x2"},
		{"an NCCL version outside the range does not match", with(func(f *baseline.Facts) { f.NCCL = "2.30.1" }), "any-h200"},
		{"an NCCL version that does not parse does not match", with(func(f *baseline.Facts) { f.NCCL = "dev" }), "any-h200"},
		{"nic none does not match a node whose NICs are unknown", with(func(f *baseline.Facts) { f.NICModel = "" }), "any-h200"},
		{"nic none does not match a node with RDMA NICs", with(func(f *baseline.Facts) { f.NICModel = "ConnectX-7" }), "any-h200"},
		{"a NIC model matches as a prefix and the rate exactly", baseline.Facts{GPUModel: "NVIDIA H200", GPUsPerNode: 8, NICModel: "ConnectX-7 VPI", NICRateGbps: 400}, "h200x8-ndr"},
		{"another NIC rate does not match", baseline.Facts{GPUModel: "NVIDIA H200", GPUsPerNode: 8, NICModel: "ConnectX-7", NICRateGbps: 200}, "any-h200"},
		{"a profile without a link layer matches either", baseline.Facts{GPUModel: "NVIDIA H200", GPUsPerNode: 8, NICModel: "ConnectX-7", NICRateGbps: 400, LinkLayer: baseline.LinkEthernet}, "h200x8-ndr"},
		{"an InfiniBand node matches the InfiniBand profile", quad(baseline.LinkInfiniBand), "h200x4-ib"},
		{"an Ethernet node matches the Ethernet profile", quad(baseline.LinkEthernet), "h200x4-roce"},
		{"a node whose rail ports are evenly mixed matches neither", quad(baseline.LinkMixed), "any-h200"},
		{"a node whose link layer is unknown matches neither", quad(""), "any-h200"},
		{"a profile of none does not match a node without a NIC", baseline.Facts{GPUModel: "NVIDIA H200", GPUsPerNode: 8, NICModel: "none"}, "any-h200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := s.Match(tc.facts)
			if err != nil {
				t.Fatal(err)
			}
			if b.Profile.Name != tc.want {
				t.Errorf("matched %s, want %s", b.Profile.Name, tc.want)
			}
		})
	}
}

// quad is a 4 x H200 node with ConnectX-7 rails on a link layer.
func quad(layer string) baseline.Facts {
	return baseline.Facts{GPUModel: "NVIDIA H200", GPUsPerNode: 4, NICModel: "ConnectX-7", LinkLayer: layer}
}

// A profile that sets nic.link_layer is the more specific one, and its
// no-match names the field like any other.
func TestTheLinkLayerIsMatchedLikeTheNICModel(t *testing.T) {
	open := &baseline.Baseline{File: "open.yaml", Profile: baseline.Profile{Name: "open", GPU: baseline.GPU{Model: "NVIDIA H200"}, GPUsPerNode: 4}}
	ib := &baseline.Baseline{File: "ib.yaml", Profile: baseline.Profile{Name: "ib", GPU: baseline.GPU{Model: "NVIDIA H200"}, GPUsPerNode: 4,
		NIC: baseline.NIC{Model: "ConnectX-7", LinkLayer: baseline.LinkInfiniBand}}}
	if b, err := store(t, open, ib).Match(quad(baseline.LinkInfiniBand)); err != nil || b.Profile.Name != "ib" {
		t.Errorf("Match = %v, %v; want ib, more specific by its link layer", b, err)
	}
	for layer, have := range map[string]string{
		baseline.LinkEthernet: `node has "Ethernet"`,
		baseline.LinkMixed:    `node has "mixed: as many rail ports on InfiniBand as on Ethernet"`,
		"":                    "node has unknown",
	} {
		_, err := store(t, ib).Match(quad(layer))
		var nm *baseline.NoMatchError
		if !errors.As(err, &nm) || len(nm.Mismatches) != 1 || nm.Mismatches[0] != "nic.link_layer: want InfiniBand, "+have {
			t.Errorf("%q: error %v, want only nic.link_layer naming %s", layer, err, have)
		}
	}
	_, err := store(t, ib).Match(quad(baseline.LinkEthernet))
	if want := "nic: {model: ConnectX-7, link_layer: Ethernet}"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v: the profile looked for lacks %q", err, want)
	}
	_, err = store(t, ib).Match(quad(baseline.LinkMixed))
	if err == nil || strings.Contains(err.Error(), "link_layer: mixed") {
		t.Errorf("error %v: mixed is no profile's link layer", err)
	}
}

func TestMatchRejectsEquallySpecificProfiles(t *testing.T) {
	byModel := &baseline.Baseline{File: "a/by-model.yaml", Profile: baseline.Profile{Name: "by-model", GPU: baseline.GPU{Model: "NVIDIA H200"}, GPUsPerNode: 2}}
	byID := &baseline.Baseline{File: "b/by-id.yaml", Profile: baseline.Profile{Name: "by-id", GPU: baseline.GPU{PCIDeviceID: "0x2335"}, GPUsPerNode: 2}}
	_, err := store(t, byModel, byID).Match(h200pair)
	if !errors.Is(err, baseline.ErrAmbiguous) {
		t.Fatalf("error %v, want ErrAmbiguous", err)
	}
	for _, want := range []string{"by-id (b/by-id.yaml) and by-model (a/by-model.yaml)", "2 fields each", "make one more specific"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestNoMatchNamesTheProfileItLookedFor(t *testing.T) {
	s, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	a100 := baseline.Facts{
		GPUModel: "NVIDIA A100-SXM4-80GB", PCIDeviceID: "0x20B2", GPUsPerNode: 8, Interconnect: "NV12",
		NICModel: "ConnectX-6", NICRateGbps: 200, LinkLayer: baseline.LinkInfiniBand, PCIeGen: 4, Driver: "535.104.05", NCCL: "2.18.3", CUDA: "12.2",
	}
	_, err = s.Match(a100)
	var nm *baseline.NoMatchError
	if !errors.Is(err, baseline.ErrNoMatch) || !errors.As(err, &nm) {
		t.Fatalf("error %v, want a *NoMatchError wrapping ErrNoMatch", err)
	}
	want := `no baseline matches profile {name: this node, gpu: {model: "NVIDIA A100-SXM4-80GB", pci_device_id: "0x20b2"}, ` +
		`gpus_per_node: 8, interconnect: NV12, nic: {model: ConnectX-6, rate_gbps: 200, link_layer: InfiniBand}, pcie_gen: 4, ` +
		`software: {driver: "535.104.05", nccl: "2.18.3", cuda: "12.2"}}; closest is h100x8-ndr (fixtures/baselines/h100x8-ndr.yaml), which differs in ` +
		`gpu.model: want "NVIDIA H100"..., node has "NVIDIA A100-SXM4-80GB"; gpu.pci_device_id: want 0x2330, node has "0x20B2"; ` +
		`interconnect: want NV18, node has "NV12"; nic.model: want ConnectX-7, node has "ConnectX-6"; nic.rate_gbps: want 400, node has "200"; ` +
		`pcie_gen: want 5, node has "4"`
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	if nm.Closest == nil || nm.Closest.Profile.Name != "h100x8-ndr" || nm.Facts != a100 {
		t.Errorf("NoMatchError %+v", nm)
	}
}

func TestMatchOfAnEmptyStoreSaysSo(t *testing.T) {
	s, err := baseline.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Match(baseline.Facts{GPUModel: "NVIDIA H200"})
	if want := `no baseline matches profile {name: this node, gpu: {model: "NVIDIA H200"}}`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestShippedProfilesMatchTheirNodes(t *testing.T) {
	s, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	hgx := func(model, id string) baseline.Facts {
		return baseline.Facts{GPUModel: model, PCIDeviceID: id, GPUsPerNode: 8, Interconnect: "NV18",
			NICModel: baseline.NICModel("MT4129"), NICRateGbps: 400, LinkLayer: baseline.LinkInfiniBand, PCIeGen: 5, Driver: "570.133.20", CUDA: baseline.CUDAVersion(12080)}
	}
	roce := func(f baseline.Facts) baseline.Facts { f.LinkLayer = baseline.LinkEthernet; return f }
	flip := func(f baseline.Facts, layer string) baseline.Facts { f.LinkLayer = layer; return f }
	for _, tc := range []struct {
		name  string
		facts baseline.Facts
		want  string // "" for no match
	}{
		{"the measured 2 x H200 node", h200pair, "h200x2-nv18"},
		{"the 2 x H200 node before NCCL ran", func() baseline.Facts { f := h200pair; f.NCCL = ""; return f }(), "h200x2-nv18"},
		{"the 2 x H200 node with a driver older than the range", func() baseline.Facts { f := h200pair; f.Driver = "550.54.15"; return f }(), ""},
		{"an 8 x H100 SXM node with NDR", hgx("NVIDIA H100 80GB HBM3", "0x2330"), "h100x8-ndr"},
		{"an 8 x H200 SXM node with NDR", hgx("NVIDIA H200", "0x2335"), "h200x8-ndr"},
		{"an 8 x H100 NVL node", hgx("NVIDIA H100 NVL", "0x2321"), ""},
		// Google's A3 Ultra: the NDR node's GPUs and NICs, 400 GbE RoCE.
		{"an 8 x H200 node on 400 GbE RoCE", roce(hgx("NVIDIA H200", "0x2335")), ""},
		{"an 8 x H100 node on 400 GbE RoCE", roce(hgx("NVIDIA H100 80GB HBM3", "0x2330")), ""},
		{"an 8 x H100 node whose rail ports are evenly mixed", flip(hgx("NVIDIA H100 80GB HBM3", "0x2330"), baseline.LinkMixed), ""},
		{"an 8 x H100 node whose link layer is unknown", flip(hgx("NVIDIA H100 80GB HBM3", "0x2330"), ""), ""},
		{"an 8 x H100 node with HDR NICs", func() baseline.Facts { f := hgx("NVIDIA H100 80GB HBM3", "0x2330"); f.NICRateGbps = 200; return f }(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := s.Match(tc.facts)
			switch {
			case tc.want == "" && !errors.Is(err, baseline.ErrNoMatch):
				t.Errorf("Match = %v, %v; want ErrNoMatch", b, err)
			case tc.want != "" && (err != nil || b.Profile.Name != tc.want):
				t.Errorf("Match = %v, %v; want %s", b, err, tc.want)
			}
		})
	}
}

func TestFactHelpers(t *testing.T) {
	for in, want := range map[int]string{13000: "13.0", 12080: "12.8", 12040: "12.4", 0: ""} {
		if got := baseline.CUDAVersion(in); got != want {
			t.Errorf("CUDAVersion(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"MT4129": "ConnectX-7", "mt4123": "ConnectX-6", "MT41692": "BlueField-3", "MT9999": "MT9999"} {
		if got := baseline.NICModel(in); got != want {
			t.Errorf("NICModel(%q) = %q, want %q", in, got, want)
		}
	}
}
