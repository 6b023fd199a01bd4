package topology

import (
	"strings"
	"testing"
)

// The L40S box reaches peers over PCIe P2P under its own root complex
// and reports NOT_SUPPORTED across them, where NCCL uses SHM anyway.
func TestPCIePeerAccessIsJudgedUnderOneSwitchOnly(t *testing.T) {
	ev := collectNamed(t, "l40s8-pcie-cx7-pxb", nil, nil)
	bad, notes, checked := pcieP2P(ev)
	if len(bad) != 0 || checked != 12 || len(notes) != 16 {
		t.Fatalf("healthy: findings %q, %d pairs checked (want 12 under one switch), %d notes (want the 16 across root complexes)", bad, checked, len(notes))
	}
	if !strings.Contains(notes[0], "(NODE): P2P read NOT_SUPPORTED, write NOT_SUPPORTED; by default NCCL uses P2P only up to one PCIe switch") {
		t.Errorf("note %q", notes[0])
	}
	for i, p := range ev.GPUPairs {
		if p.Ancestor == "SINGLE" {
			ev.GPUPairs[i].P2PRead, ev.GPUPairs[i].P2PWrite = "DISABLED_BY_REGKEY", "DISABLED_BY_REGKEY"
			break
		}
	}
	bad, _, _ = pcieP2P(ev)
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "GPU 0 0000:1a:00.0 <-> GPU 1 0000:1b:00.0 under one PCIe switch (SINGLE): P2P read DISABLED_BY_REGKEY, write DISABLED_BY_REGKEY, so NCCL stages their traffic through host memory (SHM); peer access is switched off by an NVIDIA driver registry key") {
		t.Errorf("findings %q", bad)
	}
}

// NVLink peers are the NVLink spec's, whatever NVML says of PCIe.
func TestNVLinkPeersAreLeftToTheNVLinkSpec(t *testing.T) {
	ev := collectNamed(t, "h100x8-nvswitch-cx7-pix", nil, nil)
	for i := range ev.GPUPairs {
		ev.GPUPairs[i].P2PRead = "CHIPSET_NOT_SUPPORTED"
	}
	if bad, notes, checked := pcieP2P(ev); len(bad)+len(notes)+checked != 0 {
		t.Errorf("findings %q, notes %q, %d checked", bad, notes, checked)
	}
}

// A status NVML could not give is not a verdict.
func TestAnUnknownPeerStatusIsANote(t *testing.T) {
	ev := collectNamed(t, "l40s8-pcie-cx7-pxb", nil, nil)
	ev.GPUPairs[0].P2PRead = "ERROR_UNKNOWN"
	bad, notes, _ := pcieP2P(ev)
	if len(bad) != 0 || !strings.Contains(strings.Join(notes, "\n"), "NVML gave P2P read ERROR_UNKNOWN, write OK, no status to judge") {
		t.Errorf("findings %q, notes %q", bad, notes)
	}
}
