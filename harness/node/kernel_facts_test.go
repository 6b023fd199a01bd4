package node

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParseDriverVersionTellsOpenFromProprietary(t *testing.T) {
	cases := []struct{ line, flavour, version string }{
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  ", FlavourOpen, "580.159.04"},
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.60.13  Wed Nov 30 06:39:21 UTC 2022", FlavourProprietary, "525.60.13"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.15  Release Build", FlavourOpen, "570.86.15"},
	}
	for _, c := range cases {
		f, v := parseDriverVersion(c.line + "\nGCC version: 12\n")
		if f != c.flavour || v != c.version {
			t.Errorf("%q: %s %s, want %s %s", c.line, f, v, c.flavour, c.version)
		}
	}
}

// The real kernel logs in the corpus: a Jean Zay A100 node loading the
// proprietary 525 driver (no peer-memory trouble in it), and an Omni-Path
// node (no mlx5, no peermem).
func TestFilterLogKeepsOnlyPeerMemoryTrouble(t *testing.T) {
	for _, f := range []string{
		"m4logs-jeanzay-a100-dmesg-proprietary-nvidia-525-taint-nvswitch.txt",
		"m4logs-jeanzay-dmesg-omnipath-hfi1-vnic-no-mlx5.txt",
		"nvidia-cloudnativedocs-lsmod-nvidia_fs-nvidia_peermem.txt",
	} {
		b, err := os.ReadFile("../../fixtures/corpus/kernel/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if got := filterLog(string(b)); len(got) != 0 {
			t.Errorf("%s: flagged %q", f, got)
		}
	}
	kmsg := strings.Join([]string{
		"6,1234,5678901,-;nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)",
		"4,1235,5678902,-;nvidia_peermem: disagrees about version of symbol ib_umem_get",
		"6,1236,5678903,-;mlx5_core 0000:1a:00.0: firmware version: 28.39.1002",
		"[  321.000001] NVRM: nvidia_peermem: invalid context in get_pages",
		"[  321.000001] NVRM: nvidia_peermem: invalid context in get_pages",
	}, "\n")
	got := filterLog(kmsg)
	want := []string{
		"[  321.000001] NVRM: nvidia_peermem: invalid context in get_pages",
		"nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)",
		"nvidia_peermem: disagrees about version of symbol ib_umem_get",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// Xid records in the form the driver writes them (NVIDIA's "Xid Errors"
// document): 79 and the NVLink ones are kept, application Xids are not.
func TestFilterLogKeepsTheXidsThatBreakTheDirectPath(t *testing.T) {
	kmsg := strings.Join([]string{
		"4,900,123456789,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"[ 1234.5] NVRM: Xid (PCI:0000:99:00): 74, pid=1234, name=python, Ch 00000008, errorString CTX SWITCH TIMEOUT",
		"NVRM: Xid (PCI:0000:38:00): 145, NVLink: RLW Error Interrupt",
		"NVRM: Xid (PCI:0000:18:00): 13, pid=4321, name=train, Graphics SM Warp Exception",
		"NVRM: Xid (PCI:0000:18:00): 31, pid=4321, name=train, Ch 00000010, intr 10000000. MMU Fault",
		"NVRM: Xid (PCI:0000:18:00): 7940, not an Xid gdrcheck knows",
	}, "\n")
	got := filterLog(kmsg)
	want := []string{
		"NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"NVRM: Xid (PCI:0000:38:00): 145, NVLink: RLW Error Interrupt",
		"[ 1234.5] NVRM: Xid (PCI:0000:99:00): 74, pid=1234, name=python, Ch 00000008, errorString CTX SWITCH TIMEOUT",
	}
	slices.Sort(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestVersionComparisons(t *testing.T) {
	for _, c := range []struct {
		release string
		ok      bool
	}{{"6.18.44-fc-v657-gpu", true}, {"5.12.0", true}, {"5.11.22-100", false}, {"4.18.0-513.el8.x86_64", false}, {"", false}} {
		if KernelAtLeast(c.release, 5, 12) != c.ok {
			t.Errorf("KernelAtLeast(%q, 5.12) != %v", c.release, c.ok)
		}
	}
	for _, c := range []struct {
		v  string
		ok bool
	}{{"580.159.04", true}, {"515.43.04", true}, {"515.42", false}, {"470.256.02", false}, {"", false}} {
		if versionAtLeast(c.v, 515, 43) != c.ok {
			t.Errorf("versionAtLeast(%q, 515.43) != %v", c.v, c.ok)
		}
	}
}

func TestMechanismFollowsTheMatrixAndThenTheRegistrationProof(t *testing.T) {
	one, zero := 1, 0
	base := func() *Evidence {
		return &Evidence{
			Host:   HostFacts{DriverVersion: "580.95.05", CUDADriverVersion: 13000},
			GPUs:   []GPU{{BusID: "0000:18:00.0", BAR1: &BAR1{TotalMiB: 131072, UsedMiB: 1, FreeMiB: 131071}}},
			Kernel: KernelFacts{Release: "6.8.0-60-generic", DriverFlavour: FlavourOpen, DriverVersion: "580.95.05"},
			CUDA: CUDAFacts{Available: true, DriverVersion: 13000, GPUs: []CUDAGPU{{BusID: "0000:18:00.0", DMABufSupported: &one,
				Export: DMABufExport{Tried: true, OK: true, Bytes: 2 << 20}}}},
			Verbs: VerbsFacts{Available: true, RDMACoreVersion: 50, HasRegDMABufMR: true},
		}
	}
	cases := []struct {
		name      string
		mod       func(e *Evidence)
		mechanism string
		decided   string
		warning   string
	}{
		{"open modules, new stack, export works", func(*Evidence) {}, MechanismDMABuf, "compatibility", ""},
		{"old kernel, no peermem", func(e *Evidence) { e.Kernel.Release = "4.18.0-513.el8.x86_64" }, MechanismNone, "compatibility", ""},
		{"attribute 124 is 0, peermem registered", func(e *Evidence) {
			e.CUDA.GPUs[0].DMABufSupported = &zero
			e.Kernel.Peermem = PeermemInfo{Loaded: true, Registered: true, Client: "nv_mem"}
		}, MechanismPeermem, "compatibility", "DMA-BUF is unavailable, so GPUDirect rides on nvidia_peermem: [NO] GPU 0000:18:00.0 DMA_BUF_SUPPORTED (124): 0 (need 1)"},
		{"rdma-core 33 without ibv_reg_dmabuf_mr", func(e *Evidence) { e.Verbs.RDMACoreVersion, e.Verbs.HasRegDMABufMR = 33, false }, MechanismNone, "compatibility", ""},
		{"peermem loaded but unregistered next to working DMA-BUF", func(e *Evidence) { e.Kernel.Peermem.Loaded = true }, MechanismDMABuf, "compatibility", "nvidia_peermem is loaded but not registered"},
		{"the matrix says yes but the NIC refuses the dma-buf", func(e *Evidence) {
			e.Verbs.Registrations = []Registration{
				{GPU: "0000:18:00.0", NIC: "mlx5_0", Path: PathDMABuf, Error: "ibv_reg_dmabuf_mr: Operation not supported (errno 95)"},
				{GPU: "0000:18:00.0", NIC: "mlx5_0", Path: PathPeermem, Error: "ibv_reg_mr: Bad address (errno 14)"},
			}
		}, MechanismNone, "registration", ""},
		{"registration proves peermem although the matrix doubts it", func(e *Evidence) {
			e.Verbs.Registrations = []Registration{
				{GPU: "0000:18:00.0", NIC: "mlx5_0", Path: PathDMABuf, Error: "ibv_reg_dmabuf_mr: Operation not supported (errno 95)"},
				{GPU: "0000:18:00.0", NIC: "mlx5_0", Path: PathPeermem, OK: true},
			}
		}, MechanismPeermem, "registration", "DMA-BUF registration failed on a rail NIC"},
	}
	for _, c := range cases {
		e := base()
		c.mod(e)
		v := e.Mechanism()
		if v.Mechanism != c.mechanism || v.DecidedBy != c.decided {
			t.Errorf("%s: %s by %s, want %s by %s\n%v", c.name, v.Mechanism, v.DecidedBy, c.mechanism, c.decided, v.DMABuf)
		}
		if c.warning != "" && !strings.Contains(strings.Join(v.Warnings, "\n"), c.warning) {
			t.Errorf("%s: warnings %q lack %q", c.name, v.Warnings, c.warning)
		}
		if c.warning == "" && len(v.Warnings) > 0 {
			t.Errorf("%s: unexpected warnings %q", c.name, v.Warnings)
		}
	}
}

func TestBAR1StateNamesTheAperture(t *testing.T) {
	e := &Evidence{GPUs: []GPU{{BusID: "0000:03:00.0", BAR1: &BAR1{TotalMiB: 256, UsedMiB: 250, FreeMiB: 6}}}}
	if got := e.BAR1State("0000:03:00.0"); got != "BAR1 250 MiB used of 256 MiB, 6 MiB free" {
		t.Errorf("%q", got)
	}
	if got := e.BAR1State("0000:04:00.0"); got != "BAR1 unknown" {
		t.Errorf("%q", got)
	}
}

// gdrdrv is read from its module entry, its character major and its
// device node; a tree without dev/ leaves the node unknown.
func TestGDRCopyIsReadFromModuleMajorAndDeviceNode(t *testing.T) {
	dir := t.TempDir()
	for p, s := range map[string]string{
		"sys/module/gdrdrv/version": "2.4\n",
		"proc/devices":              "Character devices:\n  1 mem\n195 nvidia\n509 gdrdrv\n\nBlock devices:\n  8 sd\n",
		"dev/nvidia0":               "",
	} {
		if err := os.MkdirAll(dir+"/"+p[:strings.LastIndex(p, "/")], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/"+p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := h.GDRCopy()
	if !g.Present() || g.Version != "2.4" || g.Major != 509 || g.DevNode == nil || *g.DevNode {
		t.Errorf("gdrdrv without its device node: %+v", g)
	}
	os.WriteFile(dir+"/dev/gdrdrv", nil, 0o644)
	if g = h.GDRCopy(); g.DevNode == nil || !*g.DevNode {
		t.Errorf("with /dev/gdrdrv: %+v", g)
	}
	os.RemoveAll(dir + "/dev")
	os.RemoveAll(dir + "/sys/module/gdrdrv")
	if g = h.GDRCopy(); !g.Present() || g.Loaded || g.DevNode != nil {
		t.Errorf("only the major, no dev/: %+v", g)
	}
}
