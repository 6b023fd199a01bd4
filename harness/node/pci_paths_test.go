package node_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

func TestPCIeFactsOfTheH100NodeCoverGPUsNICsAndTheirBridges(t *testing.T) {
	ev := collect(t, nodetest.Named(t, "h100x8-nvswitch-cx7-pix"))
	roles := map[string]int{}
	for _, d := range ev.PCIe.Devices {
		roles[d.Role]++
		if d.Control == nil || d.AER == nil {
			t.Errorf("%s %s: control %+v (%s), AER %+v (%s)", d.Role, d.Address, d.Control, d.ControlError, d.AER, d.AERError)
		}
	}
	// 4 root ports, 4 upstream and 16 downstream switch ports.
	if roles[node.RoleGPU] != 8 || roles[node.RoleNIC] != 8 || roles[node.RoleBridge] != 24 {
		t.Errorf("roles %v", roles)
	}
	nic, _ := ev.PCIe.Device("0000:1a:00.0")
	if nic.Role != node.RoleNIC || nic.Name != "mlx5_0" || nic.Control.MaxReadRequest != 4096 || nic.Control.MaxPayloadSupported != 512 {
		t.Errorf("mlx5_0: %+v %+v", nic, nic.Control)
	}
	// The switch ports cap the hierarchy at 256 bytes, below the NIC's 512.
	if nic.PathMaxPayload != 256 {
		t.Errorf("mlx5_0 path payload %d, want 256", nic.PathMaxPayload)
	}
	if len(ev.PCIe.PeerPaths) != 28 {
		t.Errorf("%d GPU peer paths, want 28", len(ev.PCIe.PeerPaths))
	}
	if p := ev.PCIe.Platform; p.VM() || p.CPUVendor != "GenuineIntel" || p.CPUModel != 143 {
		t.Errorf("platform %+v", p)
	}
}

func TestAVMIsToldByItsHypervisorSigns(t *testing.T) {
	vm := collect(t, func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d, nodetest.InVM(nodetest.ATSOff)) }).PCIe.Platform
	if !vm.VM() || len(vm.VMSigns) != 2 || !strings.Contains(vm.VMSigns[1], `"QEMU"`) {
		t.Errorf("QEMU guest: %+v", vm)
	}
	// The recorded H200 VM predates the DMI and cpuinfo recording; its
	// virtio functions still tell.
	h200 := collect(t, func(d string) (*nodetest.Tree, error) {
		return nil, extractTo("../../fixtures/nodes/h200x1-vm.ttar", d)
	}).PCIe.Platform
	if !h200.VM() || !slices.Contains(h200.VMSigns, "virtio PCI function 0000:00:01.0") {
		t.Errorf("recorded H200 VM: %+v", h200)
	}
}

func TestGPUPeerPathBridgesGetTheirACSRead(t *testing.T) {
	ev := collect(t, nodetest.PCIeWorkstation(0x1d))
	if len(ev.PCIe.PeerPaths) != 1 || !slices.Equal(ev.PCIe.PeerPaths[0].Bridges, []string{"0000:40:01.1", "0000:40:03.1"}) {
		t.Fatalf("peer paths %+v", ev.PCIe.PeerPaths)
	}
	// No NIC: no GPU -> NIC path, yet both GPP bridges are read.
	if len(ev.ACS) != 2 || ev.ACS[0].Control != 0x1d || !ev.ACS[1].Redirects() {
		t.Errorf("ACS %+v", ev.ACS)
	}
}

func extractTo(archive, dir string) error { return ttar.ExtractFile(archive, dir) }

// A root port whose hierarchy supports 512-byte payloads makes 256 a
// setting to raise, until a function below it supports only 256.
func TestPathMaxPayloadIsTheSmallestBelowTheRootPort(t *testing.T) {
	build := func(sibling bool) func(string) (*nodetest.Tree, error) {
		return func(dir string) (*nodetest.Tree, error) {
			t := nodetest.New(dir)
			t.HostBridge("pci0000:00", 0, "0-7")
			t.Bridge("pci0000:00", "0000:00:01.0", 0)
			t.SetConfig("0000:00:01.0", nodetest.PCIeConfig(nodetest.DevCtl{MaxPayload: 256, MaxPayloadSupported: 512, MaxReadRequest: 512}, 0))
			t.AddNIC("0000:00:01.0", "0000:01:00.0", nodetest.CX7("mlx5_0", ""))
			if sibling {
				old := nodetest.CX7("mlx5_1", "")
				old.DevCtl.MaxPayloadSupported = 256
				t.AddNIC("0000:00:01.0", "0000:01:00.1", old)
			}
			return t, t.Finish()
		}
	}
	for sibling, want := range map[bool]int{false: 512, true: 256} {
		ev := collect(t, build(sibling))
		d, ok := ev.PCIe.Device("0000:01:00.0")
		if !ok || d.PathMaxPayload != want || d.Control.MaxPayload != 256 {
			t.Errorf("sibling %v: %+v, want path payload %d", sibling, d, want)
		}
	}
}
