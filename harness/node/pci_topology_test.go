package node

import "testing"

func dev(numa int, chain ...string) PCIDevice { return PCIDevice{NUMA: numa, Chain: chain} }

func TestClassifyNamesPathsAsNvidiaSmiTopoDoes(t *testing.T) {
	rp, usp := "0000:15:01.0", "0000:16:00.0"
	cases := []struct {
		name string
		a, b PCIDevice
		want PathClass
	}{
		{"two downstream ports of one switch", dev(0, "pci0000:15", rp, usp, "0000:17:00.0"), dev(0, "pci0000:15", rp, usp, "0000:17:02.0"), PathPIX},
		{"the same downstream port", dev(0, "pci0000:15", rp, usp, "0000:17:00.0"), dev(0, "pci0000:15", rp, usp, "0000:17:00.0"), PathPIX},
		{"two switches under one switch", dev(0, "pci0000:15", rp, usp, "0000:17:00.0", "0000:18:00.0", "0000:19:00.0"), dev(0, "pci0000:15", rp, usp, "0000:17:01.0", "0000:1a:00.0", "0000:1b:00.0"), PathPXB},
		{"two root ports of one root complex", dev(0, "pci0000:15", "0000:15:01.0"), dev(0, "pci0000:15", "0000:15:02.0"), PathPHB},
		{"two root complexes on one socket", dev(0, "pci0000:15", rp), dev(0, "pci0000:35", "0000:35:01.0"), PathNODE},
		{"two sockets", dev(0, "pci0000:15", rp), dev(1, "pci0000:95", "0000:95:01.0"), PathSYS},
		{"two root complexes, NUMA unknown (a VM)", dev(-1, "pci0000:00"), dev(-1, "pci0000:01"), PathNODE},
	}
	for _, c := range cases {
		if got := Classify(c.a, c.b); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if got := Classify(c.b, c.a); got != c.want {
			t.Errorf("%s, reversed: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPathBridgesAreTheBridgesBelowTheCommonOne(t *testing.T) {
	a := dev(0, "pci0000:15", "rp", "usp", "dsp-a")
	b := dev(0, "pci0000:15", "rp", "usp", "dsp-b")
	got := PathBridges(a, b)
	want := []string{"usp", "dsp-a", "dsp-b"}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
}

func TestParseChainKeepsHostBridgeAndBridges(t *testing.T) {
	got := parseChain("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0")
	want := []string{"pci0000:00", "0000:00:01.0", "0000:01:00.0"}
	if len(got) != 3 || got[0] != want[0] || got[2] != want[2] {
		t.Errorf("%v, want %v", got, want)
	}
}

func TestNormalizeBusIDTurnsNVMLFormIntoSysfsForm(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:18:00.0": "0000:18:00.0",
		"00000000:9A:00.0": "0000:9a:00.0",
		"00000001:0B:00.0": "0001:0b:00.0",
		"0000:18:00.0":     "0000:18:00.0",
	} {
		if got := NormalizeBusID(in); got != want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", in, got, want)
		}
		if got := NormalizeBusID(nvmlBusID(want)); got != want {
			t.Errorf("round trip of %q gave %q", want, got)
		}
	}
}
