package topology

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// built collects a fixture node after edits to its tree.
func built(t *testing.T, build func(string) (*nodetest.Tree, error), edits ...func(*nodetest.Tree)) *node.Evidence {
	t.Helper()
	dir := t.TempDir()
	tree, err := build(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(tree)
	}
	if err := tree.Finish(); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return node.Collect(h, node.DefaultSources(h))
}

func h100(vs ...nodetest.Variant) func(string) (*nodetest.Tree, error) {
	return func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d, vs...) }
}

// NVIDIA/nccl#2079: ACS redirect on the GPP bridges between two PCIe
// peers is caught on a node with no NIC, where the GPU -> NIC check has
// nothing to look at; a clean ACS, NVLinked GPUs and pairs without P2P
// give nothing.
func TestPeerACSFailsTheBridgesBetweenPCIePeers(t *testing.T) {
	bad, pairs := peerACSFindings(built(t, nodetest.PCIeWorkstation(0x1d)))
	if pairs != 1 || len(bad) != 2 {
		t.Fatalf("pairs %d, findings %q", pairs, bad)
	}
	for _, want := range []string{"bridge 0000:40:01.1 between GPU 0 0000:41:00.0 <-> GPU 1 0000:42:00.0 has ACS ReqRedir+ CmpltRedir+ (ACSCtl 0x001d)", "NVIDIA/nccl#2079", "setpci -s 0000:40:01.1 ECAP_ACS+6.w=0000"} {
		if !strings.Contains(bad[0], want) {
			t.Errorf("%q lacks %q", bad[0], want)
		}
	}
	if bad, pairs := peerACSFindings(built(t, nodetest.PCIeWorkstation(nodetest.ACSSourceValidation))); pairs != 1 || len(bad) != 0 {
		t.Errorf("SrcValid only: pairs %d, findings %q", pairs, bad)
	}
	if bad, pairs := peerACSFindings(built(t, h100(nodetest.ACSRedirect()))); pairs != 0 || len(bad) != 0 {
		t.Errorf("NVLinked GPUs: pairs %d, findings %q", pairs, bad)
	}
	// L40S: P2P under each root complex only, 6 pairs each.
	if bad, pairs := peerACSFindings(built(t, nodetest.L40S8)); pairs != 12 || len(bad) != 0 {
		t.Errorf("L40S: pairs %d, findings %q", pairs, bad)
	}
	if bad, pairs := peerACSFindings(built(t, nodetest.RTX6000Ada2)); pairs != 0 || len(bad) != 0 {
		t.Errorf("RTX pair without P2P: pairs %d, findings %q", pairs, bad)
	}
}

func TestAERFailsUncorrectableAndWarnsOnACorrectableFlood(t *testing.T) {
	bad, warns, notes, unreadable, judged := aerFindings(built(t, h100(nodetest.AERFatal(1))))
	if judged != 40 || len(bad) != 1 || len(warns)+len(notes)+len(unreadable) != 0 {
		t.Fatalf("judged %d, bad %q, warns %q, notes %q, unreadable %q", judged, bad, warns, notes, unreadable)
	}
	if !strings.HasPrefix(bad[0], "GPU 1 0000:19:00.0 has had 1 fatal and 0 non-fatal uncorrectable PCIe errors since boot (fatal: SDES 1)") || !strings.Contains(bad[0], "lspci -vvv -s 0000:19:00.0") {
		t.Errorf("%q", bad[0])
	}
	flood := func(n uint64) func(*nodetest.Tree) {
		return func(tr *nodetest.Tree) {
			tr.SetAER("0000:17:00.0", "correctable", map[string]uint64{"RxErr": n})
		}
	}
	bad, warns, _, _, _ = aerFindings(built(t, h100(), flood(5000)))
	if len(bad) != 0 || len(warns) != 1 || !strings.HasPrefix(warns[0], "PCIe bridge 0000:17:00.0 has logged 5000 correctable PCIe errors since boot (correctable: RxErr 5000)") {
		t.Errorf("a flood: bad %q, warns %q", bad, warns)
	}
	if bad, warns, _, _, _ = aerFindings(built(t, h100(), flood(correctableAERWarn))); len(bad)+len(warns) != 0 {
		t.Errorf("%d correctable: bad %q, warns %q", correctableAERWarn, bad, warns)
	}
}

func TestDeviceControlWarnsWhereItSlowsAndNotesWhereItDoesNot(t *testing.T) {
	warns, notes := deviceControlFindings(built(t, h100(nodetest.NICReadRequest(3, 512))))
	if len(warns) != 1 || len(notes) != 0 || !strings.HasPrefix(warns[0], "NIC mlx5_3 0000:3b:00.0 reads with PCIe Max Read Request 512 bytes; expected 4096") {
		t.Errorf("MRRS 512: warns %q, notes %q", warns, notes)
	}
	noRO := func(addr string) func(*nodetest.Tree) {
		return func(tr *nodetest.Tree) {
			d := nodetest.CX7DevCtl
			d.RelaxedOrdering = false
			tr.SetConfig(addr, nodetest.PCIeConfig(d, -1))
		}
	}
	// Sapphire Rapids: relaxed ordering off is a note.
	warns, notes = deviceControlFindings(built(t, h100(), noRO("0000:1a:00.0")))
	if len(warns) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "not on this CPU (Intel(R) Xeon(R) Platinum 8480+)") {
		t.Errorf("RO off on SPR: warns %q, notes %q", warns, notes)
	}
	// EPYC: a warning naming the CPU and the source.
	warns, notes = deviceControlFindings(built(t, nodetest.L40S8, noRO("0000:30:00.0")))
	if len(warns) != 1 || len(notes) != 0 || !strings.Contains(warns[0], "NIC mlx5_0 0000:30:00.0 has relaxed ordering disabled") || !strings.Contains(warns[0], "AMD EPYC 9554 64-Core Processor (openucx/ucx#8062)") {
		t.Errorf("RO off on EPYC: warns %q, notes %q", warns, notes)
	}
	// A payload below what the root port's hierarchy supports.
	lowMPS := func(tr *nodetest.Tree) {
		d := nodetest.GPUDevCtl
		d.MaxPayload = 128
		tr.SetConfig("0000:18:00.0", nodetest.PCIeConfig(d, -1))
	}
	warns, _ = deviceControlFindings(built(t, h100(), lowMPS))
	if len(warns) != 1 || !strings.HasPrefix(warns[0], "GPU 0 0000:18:00.0 runs PCIe Max Payload 128 bytes where every device below its root port supports 256") {
		t.Errorf("MPS 128: %q", warns)
	}
	for _, name := range []string{"h100x8-nvswitch-cx7-pix", "l40s8-pcie-cx7-pxb", "gh200x4-c2c-cx7", "rtx6000ada2-bar1-256mib"} {
		if warns, notes := deviceControlFindings(built(t, nodetest.Named(t, name))); len(warns)+len(notes) != 0 {
			t.Errorf("%s: warns %q, notes %q", name, warns, notes)
		}
	}
}

func TestConfigCutAt64BytesCannotBeJudged(t *testing.T) {
	cut := func(tr *nodetest.Tree) {
		tr.SetConfig("0000:1a:00.0", nodetest.PCIeConfig(nodetest.CX7DevCtl, -1)[:64])
	}
	ev := built(t, h100(), cut)
	why := unreadableControl(ev, true)
	if !strings.Contains(why, "PCI config space of 0000:1a:00.0 stops at 64 bytes") || !strings.Contains(why, "needs root") {
		t.Errorf("%q", why)
	}
	if why := unreadableControl(built(t, h100()), false); why != "" {
		t.Errorf("healthy: %q", why)
	}
}

func TestATSInAVMWarnsWhenOffAndNotesWhenUnseen(t *testing.T) {
	warns, notes := atsFindings(built(t, h100(nodetest.InVM(nodetest.ATSOff))))
	if len(warns) != 8 || len(notes) != 0 {
		t.Fatalf("ATS off: warns %q, notes %q", warns, notes)
	}
	for _, want := range []string{"NIC mlx5_0 0000:1a:00.0 has ATS disabled (ATSCtl 0x0000) in this VM (the CPU's hypervisor flag in /proc/cpuinfo, DMI \"QEMU\"", "ATS_ENABLED=true", nvaieVMGuide} {
		if !strings.Contains(warns[0], want) {
			t.Errorf("%q lacks %q", warns[0], want)
		}
	}
	if warns, notes := atsFindings(built(t, h100(nodetest.InVM(nodetest.ATSOn)))); len(warns)+len(notes) != 0 {
		t.Errorf("ATS on: warns %q, notes %q", warns, notes)
	}
	if warns, notes := atsFindings(built(t, h100(nodetest.InVM(nodetest.ATSNone)))); len(warns) != 0 || len(notes) != 8 || !strings.Contains(notes[0], "shows no ATS capability") {
		t.Errorf("no ATS capability: warns %q, notes %q", warns, notes)
	}
	// Relaxed ordering matters in a VM whatever the CPU.
	if r := roMatters(built(t, h100(nodetest.InVM(nodetest.ATSOn))).PCIe.Platform); !strings.Contains(r, "NVIDIA/nccl#1205") {
		t.Errorf("VM: %q", r)
	}
}
