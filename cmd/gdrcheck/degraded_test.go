package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

// sysfsOnlyTree builds an H100 fixture node without any of its recordings:
// sysfs and procfs alone, no NVML, no CUDA/verbs probe.
func sysfsOnlyTree(t *testing.T, vs ...nodetest.Variant) string {
	t.Helper()
	dir := t.TempDir()
	build := nodetest.SysfsOnly(func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d, vs...) })
	if _, err := build(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestInventoryOfASysfsOnlyTreeIsCompleteAndWarnsThatNVMLIsMissing(t *testing.T) {
	t.Parallel()
	root := sysfsOnlyTree(t)
	r := gdrcheck(t, "inventory", "--host-root", root, "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 for a complete sysfs map:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "warning: NVML: no NVML recording for host root") {
		t.Errorf("stderr does not warn of NVML's absence:\n%s", r.stderr)
	}
	var inv node.Inventory
	if err := json.Unmarshal([]byte(r.stdout), &inv); err != nil {
		t.Fatalf("inventory JSON: %v\n%s", err, r.stdout)
	}
	if len(inv.Warnings) != 1 || !strings.Contains(inv.Warnings[0], "gdrcheck/nvml.json") {
		t.Errorf("warnings %q, want NVML's missing recording", inv.Warnings)
	}
	want := nodetest.TopoMatrix(t, "../../fixtures/corpus/nvidia-smi-topo/gke-a4-b200-8gpu-nv18-8nic-cx7-pix-node-sys.txt")
	if len(inv.GPUs) != 8 || len(inv.Paths) != 64 {
		t.Fatalf("%d GPUs, %d pairs; want 8 and 64", len(inv.GPUs), len(inv.Paths))
	}
	row := map[string]string{}
	for i, g := range inv.GPUs {
		row[g.BusID] = fmt.Sprintf("GPU%d", i)
		if g.Index != -1 || g.UUID != "" {
			t.Errorf("GPU %s: index %d UUID %q without NVML", g.BusID, g.Index, g.UUID)
		}
		if wantNIC := fmt.Sprintf("mlx5_%d", i); g.PreferredNIC != wantNIC || g.Path != node.PathPIX || g.PreferredPort != wantNIC+":1" {
			t.Errorf("GPU %s: rail %s %s (%s), want %s:1 (PIX)", g.BusID, g.PreferredNIC, g.PreferredPort, g.Path, wantNIC)
		}
	}
	for _, p := range inv.Paths {
		if w := want[row[p.GPU]][p.NIC]; string(p.Path) != w {
			t.Errorf("%s %s <-> %s: %s, the public matrix says %s", row[p.GPU], p.GPU, p.NIC, p.Path, w)
		}
	}

	y := gdrcheck(t, "inventory", "--host-root", root, "--format", "yaml")
	back, err := node.ParseInventory([]byte(y.stdout))
	if y.code != 0 || err != nil || len(back.Warnings) != 1 {
		t.Errorf("YAML: exit %d, reads back: %v, warnings %q", y.code, err, back.Warnings)
	}
	table := gdrcheck(t, "inventory", "--host-root", root)
	if table.code != 0 || !strings.Contains(table.stdout, "GPU 0000:18:00.0") || strings.Contains(table.stdout, "GPU-1") {
		t.Errorf("table: exit %d, rows not named by bus id:\n%s", table.code, table.stdout)
	}
}

func TestTopologyOnASysfsOnlyTreeStillJudgesWhatSysfsShows(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		variant nodetest.Variant
		spec    string
		says    string
	}{
		{"downtrained link", nodetest.DowntrainedGPU(3), "runs every GPU and NIC link at its maximum width and speed",
			"GPU 0000:39:00.0 link is downtrained in width: 32.0 GT/s x8; expected 32.0 GT/s x16"},
		{"ACS redirect", nodetest.ACSRedirect(), "has no ACS redirect on the path between a GPU and its NIC",
			"GPU 0000:38:00.0 -> mlx5_2: bridge 0000:37:00.0 has ACS ReqRedir+ CmpltRedir+; expected no P2P redirect"},
		{"translating IOMMU", nodetest.IOMMU("DMA-FQ"), "has the IOMMU off or in passthrough for GPUs and NICs",
			"GPU 0000:18:00.0 is in IOMMU group 6 with a DMA-FQ domain (translating)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := sysfsOnlyTree(t, c.variant)
			// A tree with /proc/version alone still names its kernel.
			os.Remove(filepath.Join(root, "proc/sys/kernel/osrelease"))
			if err := os.WriteFile(filepath.Join(root, "proc/version"), []byte("Linux version 6.8.0-60-generic (buildd@lcy02-amd64-098) #63-Ubuntu SMP\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			r := gdrcheck(t, "run", "-q", "--suites", "topology", "--host-root", root, "--out", out)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2 (NVML missing):\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "kernel 6.8.0-60-generic, 8 GPU(s), 8 RDMA NIC(s)") {
				t.Errorf("stdout does not name the kernel from proc/version:\n%s", r.stdout)
			}
			validateJUnit(t, filepath.Join(out, "junit.xml"))
			res, err := results.Read(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			n := res.Nodes[0]
			if n.Status != results.NodeUnevaluable || !strings.Contains(n.Reason, "no NVML recording") {
				t.Errorf("status %s, reason %q", n.Status, n.Reason)
			}
			state := map[string]results.Spec{}
			for _, s := range n.Suites {
				for _, sp := range s.Specs {
					state[s.Name+" / "+sp.Name] = sp
				}
			}
			if sp := state["setup / AfterSuite: node evidence"]; sp.State != results.StateFailed || !strings.HasPrefix(sp.Message, "node evidence is incomplete: NVML: no NVML recording") {
				t.Errorf("NVML's absence: %s %q", sp.State, sp.Message)
			}
			if sp := state["topology / "+c.spec]; sp.State != results.StateFailed || !strings.Contains(sp.Message, c.says) {
				t.Errorf("%s: %s %q, want it to say %q", c.spec, sp.State, sp.Message, c.says)
			}
			if sp := state["topology / has working peer access between GPUs joined by NVLink"]; sp.State != results.StateSkipped || !strings.HasPrefix(sp.Message, "NVLink state and peer access are known only to NVML, which could not be used") {
				t.Errorf("NVLink without NVML: %s %q", sp.State, sp.Message)
			}
			failed := 0
			for name, sp := range state {
				if sp.State == results.StateFailed && name != "setup / AfterSuite: node evidence" {
					failed++
				}
			}
			if failed != 1 {
				t.Errorf("%d topology specs failed, the tree breaks one: %v", failed, state)
			}
			b, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
			if !strings.Contains(string(b), `name="AfterSuite: node evidence"`) {
				t.Errorf("JUnit has no case naming NVML's absence")
			}
		})
	}
}

// The morning after a driver upgrade without a reboot: the gate names the
// mismatch and its fix, judges everything sysfs answers, and exits 2.
func TestTheUpgradeGateNamesTheDriverLibraryVersionMismatch(t *testing.T) {
	t.Parallel()
	v, res := runFixture(t, "h100x8-nvml-version-mismatch", "--suites", "topology,kernel,bar1")
	if v.ExitCode != 2 || v.Status != results.NodeUnevaluable {
		t.Fatalf("exit %d status %s, want 2 unevaluable:\n%s", v.ExitCode, v.Status, strings.Join(v.Specs, "\n"))
	}
	for _, w := range []string{"NVML: initialising: ERROR_LIB_RM_VERSION_MISMATCH: Driver/library version mismatch: the NVIDIA kernel module loaded is 570.133.20", "libnvidia-ml.so.580.95.05", "or reboot", "libcuda: cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)"} {
		if !strings.Contains(v.Reason, w) {
			t.Errorf("reason does not say %q: %s", w, v.Reason)
		}
	}
	passed, skipped := 0, 0
	for _, s := range res.Nodes[0].Suites {
		for _, sp := range s.Specs {
			switch {
			case sp.State == results.StatePassed:
				passed++
			case sp.State == results.StateSkipped && s.Name == "bar1":
				skipped++
				if !strings.HasPrefix(sp.Message, "BAR1 is known only to NVML, which could not be used: NVML: initialising: ERROR_LIB_RM_VERSION_MISMATCH") {
					t.Errorf("bar1 / %s skipped for %q", sp.Name, sp.Message)
				}
			}
		}
	}
	// Seven topology specs from sysfs (AER and device control among
	// them), the override audit (no override set), NUMA balancing (not
	// recorded: a note), the kernel's module check, its nouveau check and
	// its known-bad check (NCCL unknown: nothing to match).
	if passed != 12 || skipped != 4 {
		t.Errorf("%d passed, %d bar1 skipped; want 12 and 4:\n%s", passed, skipped, strings.Join(v.Specs, "\n"))
	}
	inv := gdrcheck(t, "inventory", "--host-root", nodes+"h100x8-nvml-version-mismatch.ttar", "--format", "json")
	if inv.code != 0 || !strings.Contains(inv.stderr, "warning: NVML: initialising: ERROR_LIB_RM_VERSION_MISMATCH: Driver/library version mismatch") {
		t.Errorf("inventory: exit %d, stderr:\n%s", inv.code, inv.stderr)
	}
}

func TestGPUsOnlyNVMLListsAreAnEvidenceErrorNotFailedSpecs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tr, err := nodetest.H100x8(root)
	if err != nil {
		t.Fatal(err)
	}
	ghost := tr.NVML.GPUs[7]
	ghost.Index, ghost.BusID = 8, "0000:d0:00.0"
	tr.NVML.GPUs = append(tr.NVML.GPUs, ghost)
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	const says = "NVML lists GPU(s) 0000:d0:00.0 that sysfs does not have"
	out := t.TempDir()
	r := gdrcheck(t, "run", "-q", "--suites", "topology", "--host-root", root, "--out", out)
	if r.code != 2 || !strings.Contains(r.stdout, says) {
		t.Errorf("run: exit %d, want 2 naming the GPU:\n%s", r.code, r.stdout)
	}
	if strings.Contains(r.stdout, "has no path to any NIC") || strings.Contains(r.stdout, "P2P read ERROR_INVALID_ARGUMENT") {
		t.Errorf("specs failed for a GPU that does not exist:\n%s", r.stdout)
	}
	inv := gdrcheck(t, "inventory", "--host-root", root)
	if inv.code != 2 || !strings.Contains(inv.stderr, says) {
		t.Errorf("inventory: exit %d, want 2 naming the GPU:\n%s", inv.code, inv.stderr)
	}
}
