package topology

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// collectNamed builds a fixture node, removes and plants files under its
// root, and collects it with no NCCL setting in the environment.
func collectNamed(t *testing.T, name string, remove []string, files map[string]string) *node.Evidence {
	t.Helper()
	dir := t.TempDir()
	if _, err := nodetest.Named(t, name)(dir); err != nil {
		t.Fatal(err)
	}
	for _, r := range remove {
		if err := os.Remove(filepath.Join(dir, r)); err != nil {
			t.Fatal(err)
		}
	}
	for n, body := range files {
		p := filepath.Join(dir, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := node.DefaultSources(h)
	src.Env = []string{"HOME=/root"}
	return node.Collect(h, src)
}

// pathVerdicts runs the path spec's judgement over every GPU beyond the
// limit: what vmPath says, or "bare" where it leaves the path to sysfs.
func pathVerdicts(t *testing.T, ev *node.Evidence) (bad, notes []string, bare int) {
	t.Helper()
	for _, g := range ev.GPUs {
		p, ok := ev.PreferredPath(g.BusID)
		if !ok || withinGDRLimit(p.Class, node.PathPXB) {
			continue
		}
		b, n, vm := vmPath(ev, g, p, node.PathPXB)
		switch {
		case !vm:
			bare++
		case n != "":
			notes = append(notes, n)
		default:
			bad = append(bad, b)
		}
	}
	return bad, notes, bare
}

// The guest's GPUs are PHB to their NICs in its tree; the host topology
// the image's /etc/nccl.conf names puts each under one switch with its
// NIC, and NCCL plans from it.
func TestAVMWithTheHostsTopologyFileTakesTheFilesWord(t *testing.T) {
	bad, notes, bare := pathVerdicts(t, collectNamed(t, "h100x2-vm-nccl-topo-file", nil, nil))
	if len(bad) != 0 || bare != 0 || len(notes) != 2 {
		t.Fatalf("bad %q, notes %q, bare %d", bad, notes, bare)
	}
	if want := "GPU 0 0000:00:05.0 -> mlx5_0 is PHB in this virtual machine's PCI tree; NCCL_TOPO_FILE /etc/nccl/topo.xml puts them at PIX"; !strings.HasPrefix(notes[0], want) {
		t.Errorf("note %q, want %q", notes[0], want)
	}
}

// Without the file, the finding names the VM, why NCCL sees PHB and the
// fix, not a wiring fault.
func TestAVMWithoutATopologyFileIsToldToGiveNCCLOne(t *testing.T) {
	bad, _, _ := pathVerdicts(t, collectNamed(t, "h100x2-vm-nccl-topo-file", []string{"etc/nccl.conf"}, nil))
	if len(bad) != 2 {
		t.Fatalf("findings %q, want one per GPU", bad)
	}
	for _, w := range []string{"GPU 0 0000:00:05.0 -> mlx5_0 is PHB; GDR expected at PIX/PXB: this node is a virtual machine (the CPU's hypervisor flag in /proc/cpuinfo, DMI \"QEMU\" \"Standard PC (Q35 + ICH9, 2009)\")",
		"(GPU and NIC both sit on its root bus)", "set NCCL_TOPO_FILE"} {
		if !strings.Contains(bad[0], w) {
			t.Errorf("finding %q lacks %q", bad[0], w)
		}
	}
}

// A topology file that puts the pair far apart too, or does not place
// it, is no pass.
func TestAVMWhoseTopologyFileDoesNotHelpStillFails(t *testing.T) {
	far := `<system version="1"><cpu numaid="0"><pci busid="ffff:ff:01.0" class="0x060400"><pci busid="0000:00:05.0" class="0x030200"/><pci busid="0000:00:06.0" class="0x030200"/></pci></cpu>` +
		`<cpu numaid="1"><pci busid="ffff:ff:02.0" class="0x060400"><pci busid="0000:00:07.0" class="0x020700"/><pci busid="0000:00:08.0" class="0x020700"/></pci></cpu></system>`
	bad, notes, _ := pathVerdicts(t, collectNamed(t, "h100x2-vm-nccl-topo-file", nil, map[string]string{"etc/nccl/h100x2-host-topo.xml": far}))
	if len(bad) != 2 || len(notes) != 0 || !strings.Contains(bad[0], "is PHB here and SYS in NCCL_TOPO_FILE /etc/nccl/topo.xml") {
		t.Errorf("findings %q, notes %q", bad, notes)
	}
	other := `<system version="1"><cpu numaid="0"><pci busid="0000:00:05.0" class="0x030200"/></cpu></system>`
	bad, _, _ = pathVerdicts(t, collectNamed(t, "h100x2-vm-nccl-topo-file", nil, map[string]string{"etc/nccl/h100x2-host-topo.xml": other}))
	if len(bad) != 2 || !strings.Contains(bad[0], "does not place 0000:00:05.0 and 0000:00:07.0") {
		t.Errorf("findings %q", bad)
	}
}

// On bare metal a far NIC is a wiring fault whatever a topology file
// says: nothing is reworded, and no file makes it pass.
func TestBareMetalPathsAreNeverTakenFromATopologyFile(t *testing.T) {
	lie := `<system version="1"><cpu numaid="0"><pci busid="ffff:ff:01.0" class="0x060400"><pci busid="0000:98:00.0" class="0x030200"/><pci busid="0000:20:00.0" class="0x020700"/></pci></cpu></system>`
	ev := collectNamed(t, "h100x8-nic-sys", nil, map[string]string{"etc/nccl.conf": "NCCL_TOPO_FILE=/etc/topo.xml\n", "etc/topo.xml": lie})
	if ev.PCIe.Platform.VM() || ev.Overrides == nil || ev.Overrides.Topo == nil {
		t.Fatalf("VM %+v, overrides %+v", ev.PCIe.Platform, ev.Overrides)
	}
	bad, notes, bare := pathVerdicts(t, ev)
	if bare != 4 || len(bad) != 0 || len(notes) != 0 {
		t.Errorf("bare %d (want GPUs 4-7 judged from sysfs), findings %q, notes %q", bare, bad, notes)
	}
}

func TestNUMANodesCountDevicesElseCPUPackages(t *testing.T) {
	if n := numaNodes(collectNamed(t, "h100x8-nvswitch-cx7-pix", nil, nil)); n != 2 {
		t.Errorf("H100 node: %d NUMA nodes, want 2", n)
	}
	if n := numaNodes(collectNamed(t, "h100x2-vm-nccl-topo-file", nil, nil)); n != 1 {
		t.Errorf("VM: %d NUMA nodes, want 1 (one CPU package, devices on none)", n)
	}
}
