package node_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// plant builds the healthy H100 node, applies edit to its tree and
// collects it as gdrcheck run --host-root does.
func plant(t *testing.T, build func(string) (*nodetest.Tree, error), edit func(dir string)) *node.Evidence {
	t.Helper()
	return collect(t, func(dir string) (*nodetest.Tree, error) {
		tr, err := build(dir)
		if err == nil {
			edit(dir)
		}
		return tr, err
	})
}

func write(t *testing.T, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The lines the kernel and modprobe print when module signing refuses a
// module (saidsay-so/acpi_ec#8, kernel/module/signing.c), kept apart from
// peer-memory trouble; a module that loaded tainted is not refused.
func TestModuleSigningRefusalsAreKeptApartFromPeerMemoryTrouble(t *testing.T) {
	var sb strings.Builder
	for _, l := range []string{
		"5,2001,9000000,-;Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7",
		"[   14.1] Loading of unsigned module is rejected",
		"[   14.2] nvidia_peermem: module verification failed: signature and/or required key missing - tainting kernel",
		"[   14.3] NVRM: GPU 0000:01:00.0 is already bound to NovaCore.",
	} {
		sb.WriteString(l + "\n")
	}
	ev := plant(t, h100(nodetest.ProprietaryDriver()), func(dir string) {
		write(t, dir, "gdrcheck/kmsg.txt", sb.String())
		write(t, dir, "sys/kernel/security/lockdown", "none [integrity] confidentiality\n")
		write(t, dir, "sys/module/module/parameters/sig_enforce", "N\n")
		write(t, dir, "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-aae5-0e8d8c6c8c6c", "\x06\x00\x00\x00\x01")
	})
	l := ev.Kernel.Load
	if len(ev.Kernel.Log) != 0 {
		t.Errorf("peer-memory trouble %q: a refusal or a tainted load is none", ev.Kernel.Log)
	}
	if len(l.Refused) != 2 || !strings.HasPrefix(l.Refused[0], "Lockdown: modprobe: unsigned module loading is restricted") {
		t.Errorf("refused %q", l.Refused)
	}
	if len(l.Bound) != 1 {
		t.Errorf("bound %q", l.Bound)
	}
	if l.Lockdown != "integrity" || !l.LockedDown() || l.SigEnforce == nil || *l.SigEnforce || l.SecureBoot == nil || !*l.SecureBoot {
		t.Errorf("signing state %+v", l)
	}
	if got := l.SigningState(); got != "lockdown integrity, Secure Boot on" {
		t.Errorf("SigningState() = %q", got)
	}
	if !l.NVIDIA || l.Holder() != "" {
		t.Errorf("nvidia loaded %t, holder %q", l.NVIDIA, l.Holder())
	}
}

func TestParseBoundNamesTheGPUAndTheDriver(t *testing.T) {
	gpu, drv, ok := node.ParseBound("[  201.910514] NVRM: GPU 0000:01:00.0 is already bound to NovaCore.")
	if !ok || gpu != "0000:01:00.0" || drv != "NovaCore" || !node.IsConflictingDriver(drv) {
		t.Errorf("%q %q %t", gpu, drv, ok)
	}
	if node.IsConflictingDriver("nvidia") || node.IsConflictingDriver("vfio-pci") || !node.IsConflictingDriver("nouveau") {
		t.Error("only nouveau and nova_core take GPUs from nvidia")
	}
}

// nouveau holding every GPU, nvidia not loaded: NVML's "driver not
// loaded" names nouveau and the fix, once, instead of "modprobe nvidia".
func TestNouveauHoldingTheGPUsIsTheCauseOfTheUnloadedDriver(t *testing.T) {
	ev := plant(t, h100(), func(dir string) {
		write(t, dir, "gdrcheck/nvml.json", `{"init_error": "ERROR_DRIVER_NOT_LOADED"}`)
		os.Remove(filepath.Join(dir, "proc/driver/nvidia/version"))
		os.RemoveAll(filepath.Join(dir, "sys/module/nvidia"))
		os.MkdirAll(filepath.Join(dir, "sys/module/nouveau"), 0o755)
		for _, g := range []string{"0000:18:00.0", "0000:19:00.0"} {
			os.Symlink("../../../bus/pci/drivers/nouveau", filepath.Join(dir, "sys/bus/pci/devices", g, "driver"))
		}
	})
	p, ok := ev.Unusable(node.SourceNVML)
	if !ok {
		t.Fatal("NVML usable")
	}
	if strings.Contains(p.Cause, "modprobe nvidia") || !strings.Contains(p.Cause, "nouveau holds GPU(s) 0000:18:00.0, 0000:19:00.0") || !strings.Contains(p.Cause, "blacklist nouveau") {
		t.Errorf("cause %q", p.Cause)
	}
	if ev.Kernel.Load.NVIDIA || !ev.Kernel.Load.Nouveau || ev.GPUs[0].Driver != "nouveau" || ev.GPUs[2].Driver != "" {
		t.Errorf("load %+v, drivers %q %q", ev.Kernel.Load, ev.GPUs[0].Driver, ev.GPUs[2].Driver)
	}
}

// nvidia refused by module signing: the cause names the kernel log's
// refusal and the signing fix.
func TestASigningRefusalIsTheCauseOfTheUnloadedDriver(t *testing.T) {
	ev := plant(t, h100(), func(dir string) {
		write(t, dir, "gdrcheck/nvml.json", `{"init_error": "ERROR_DRIVER_NOT_LOADED"}`)
		os.Remove(filepath.Join(dir, "proc/driver/nvidia/version"))
		os.RemoveAll(filepath.Join(dir, "sys/module/nvidia"))
		write(t, dir, "gdrcheck/kmsg.txt", "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n")
	})
	p, _ := ev.Unusable(node.SourceNVML)
	if !strings.Contains(p.Cause, "module signing refused a module (kernel log: Lockdown: modprobe") || !strings.Contains(p.Cause, "mokutil --import") {
		t.Errorf("cause %q", p.Cause)
	}
}

// A GPU nouveau took while nvidia drives the rest: the "not listed" cause
// names nouveau, and the other GPUs keep the driver their link names.
func TestAGPUOnNouveauIsNamedAmongThoseNVMLDoesNotList(t *testing.T) {
	ev := collect(t, nodetest.HeldByNouveau(3))
	p, ok := ev.Problem(node.SourceGPUs)
	if !ok || !strings.Contains(p.Message, "0000:39:00.0") || !strings.HasPrefix(p.Cause, "nouveau holds GPU(s) 0000:39:00.0, so the nvidia driver cannot drive them") {
		t.Errorf("%+v", p)
	}
}

func TestVMFactsTellAGuest(t *testing.T) {
	ev := collect(t, nodetest.H100x2VM)
	vm := ev.PCIe.Platform
	if got := vm.Name(); !vm.VM() || got != `the CPU's hypervisor flag in /proc/cpuinfo, DMI "QEMU" "Standard PC (Q35 + ICH9, 2009)"` {
		t.Errorf("VM %t, Name() = %q", vm.VM(), got)
	}
	if bm := collect(t, h100()).PCIe.Platform; bm.VM() {
		t.Errorf("bare metal is a VM: %+v", bm)
	}
}

func TestNUMABalancingIsReadWhereTheKernelHasIt(t *testing.T) {
	if nb := collect(t, h100()).Kernel.NUMABalancing; nb != nil {
		t.Errorf("absent file read as %d", *nb)
	}
	ev := plant(t, h100(), func(dir string) { write(t, dir, "proc/sys/kernel/numa_balancing", "1\n") })
	if nb := ev.Kernel.NUMABalancing; nb == nil || *nb != 1 {
		t.Errorf("numa_balancing %v", nb)
	}
}

// A snapshot keeps the topology file the image links absolutely as a
// file at the configured path: a recording holds no absolute link, and
// replays place the devices as the node does.
func TestASnapshotCopiesATopologyFileLinkedAbsolutely(t *testing.T) {
	src := t.TempDir()
	if _, err := nodetest.H100x2VM(src); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(src, nodetest.VMTopoFile)
	os.Remove(link)
	if err := os.Symlink("/etc/nccl/h100x2-host-topo.xml", link); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	want := node.Collect(h, node.DefaultSources(h))
	dst := t.TempDir()
	if _, err := h.Snapshot(dst, node.DefaultSources(h), "test"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, nodetest.VMTopoFile)); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("recorded %s: %v %v", nodetest.VMTopoFile, fi, err)
	}
	hs, err := node.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	got := node.Collect(hs, node.DefaultSources(hs))
	if want.Overrides == nil || want.Overrides.Topo.Err != "" || got.Overrides == nil || got.Overrides.Topo.Err != "" {
		t.Fatalf("topology file: node %+v, snapshot %+v", want.Overrides, got.Overrides)
	}
	if c, ok := got.Overrides.Topo.Class("0000:00:05.0", "0000:00:07.0"); !ok || c != node.PathPIX {
		t.Errorf("replayed: %s %t", c, ok)
	}
	if !got.PCIe.Platform.VM() || got.PCIe.Platform.Name() != want.PCIe.Platform.Name() {
		t.Errorf("VM %+v, want %+v", got.PCIe.Platform, want.PCIe.Platform)
	}
}
