package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// The causes of issue 24 a node shows in its kernel, its PCI tree and
// NVML's peer statuses (docs/field-causes.md rows 12, 34, 36, 37, 38),
// each a variant of the fixture node it belongs on.

// variantFrom extracts fixture node base (or builds it with build) into a
// directory and applies edit.
func variantFrom(t *testing.T, base string, build func(string) (*nodetest.Tree, error), edit func(*testing.T, string)) string {
	t.Helper()
	root := t.TempDir()
	switch {
	case build != nil:
		if _, err := build(root); err != nil {
			t.Fatal(err)
		}
	default:
		if err := extract(nodes+base+".ttar", root); err != nil {
			t.Fatal(err)
		}
	}
	if edit != nil {
		edit(t, root)
	}
	return root
}

// editPairs rewrites the GPU pairs of the node's NVML recording.
func editPairs(edit func(pairs []any)) func(*testing.T, string) {
	return nvmlEdit(func(rec map[string]any) { edit(rec["pairs"].([]any)) })
}

func edits(es ...func(*testing.T, string)) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		for _, e := range es {
			e(t, root)
		}
	}
}

func removeFile(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		if err := os.Remove(filepath.Join(root, rel)); err != nil {
			t.Fatal(err)
		}
	}
}

// Each variant fails the one spec that names its cause (or, a warning
// cause, passes with the warning); also lists the specs that fail with
// it as its symptoms, where the cause cannot come without them.
func TestEachFieldCauseOfTheNodeFailsForItsOwnReason(t *testing.T) {
	t.Parallel()
	const lockdown = "none [integrity] confidentiality\n"
	const refusal = "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n"
	cases := []struct {
		name  string
		base  string
		build func(string) (*nodetest.Tree, error)
		edit  func(*testing.T, string)
		spec  string
		says  string
		exit  int // 0: a warning
		also  []string
		// reason is what the node's status says where it is not fully
		// evaluated: the same cause.
		reason string
	}{
		{name: "VM without a topology file (#12)", base: "h100x2-vm-nccl-topo-file", edit: removeFile("etc/nccl.conf"),
			spec: "topology / gives every GPU an RDMA NIC within the GPUDirect path limit",
			says: "GPU 0 0000:00:05.0 -> mlx5_0 is PHB; GDR expected at PIX/PXB: this node is a virtual machine (the CPU's hypervisor flag in /proc/cpuinfo, DMI \"QEMU\" \"Standard PC (Q35 + ICH9, 2009)\"), and its PCI tree hides the host's PCIe switches (GPU and NIC both sit on its root bus), so NCCL sees PHB and turns GPUDirect RDMA off; set NCCL_TOPO_FILE",
			exit: 1},
		{name: "NUMA balancing on (#34)", base: healthyNode, edit: writeFile("proc/sys/kernel/numa_balancing", "1\n"),
			spec: "topology / keeps automatic NUMA balancing off",
			says: "kernel.numa_balancing is 1: the kernel unmaps and migrates the pages of NCCL's and the job's host buffers"},
		{name: "nvidia_peermem refused by lockdown (#36)", base: "h100x8-proprietary-no-peermem",
			edit: edits(writeFile("sys/kernel/security/lockdown", lockdown), writeFile("gdrcheck/kmsg.txt", refusal)),
			spec: "kernel / has a working GPUDirect peer-memory mechanism",
			says: "peermem: nvidia_peermem is not loaded, need loaded; cause: nvidia_peermem is not loaded and module signing refused a module (kernel log: Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7; lockdown integrity): sign the NVIDIA modules with a key the kernel trusts",
			exit: 1, also: []string{"kernel / registers GPU memory with every rail NIC"}},
		// NVML cannot see a GPU nouveau holds: the node is not fully
		// evaluated (exit 2, and no BAR1 for that GPU), and the
		// incomplete evidence names the same cause.
		{name: "a GPU held by nouveau (#37)", build: nodetest.HeldByNouveau(3),
			spec: "kernel / has no GPU held by nouveau or nova_core",
			says: "GPU 0000:39:00.0 is bound to nouveau, not nvidia: NVML, CUDA and GPUDirect cannot use it; blacklist nouveau (blacklist nouveau and options nouveau modeset=0 in /etc/modprobe.d/), rebuild the initramfs (update-initramfs -u, or dracut -f) and reboot",
			exit: 2, also: []string{"bar1 / reports BAR1 for every GPU", "setup / AfterSuite: node evidence"},
			reason: "sysfs has NVIDIA GPU(s) 0000:39:00.0 that NVML does not list: nouveau holds GPU(s) 0000:39:00.0, so the nvidia driver cannot drive them: blacklist nouveau"},
		{name: "PCIe P2P disabled by a registry key (#38)", base: "l40s8-pcie-cx7-pxb",
			edit: editPairs(func(pairs []any) {
				p := pairs[0].(map[string]any)
				p["p2p_read"], p["p2p_write"] = "DISABLED_BY_REGKEY", "DISABLED_BY_REGKEY"
			}),
			spec: "topology / has working PCIe peer access between GPUs under one PCIe switch",
			says: "GPU 0 0000:1a:00.0 <-> GPU 1 0000:1b:00.0 under one PCIe switch (SINGLE): P2P read DISABLED_BY_REGKEY, write DISABLED_BY_REGKEY, so NCCL stages their traffic through host memory (SHM); peer access is switched off by an NVIDIA driver registry key",
			exit: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := judgeRun(t, variantFrom(t, c.base, c.build, c.edit), c.spec, c.says, c.exit, "topology,kernel,bar1", nil, c.also...)
			if n := res.Nodes[0]; !strings.Contains(n.Reason, c.reason) {
				t.Errorf("node %s: %q, want %q", n.Status, n.Reason, c.reason)
			}
		})
	}
}
