package inventory

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// Every fixture node gives a gres map of one valid line per GPU and an env
// fragment that sh sources for every rank, with the rank's rail NIC, and
// refuses the rank after the last.
func TestMapsOfEveryFixtureNodeAreValidForEachGPU(t *testing.T) {
	archives, _ := filepath.Glob(nodes + "*.ttar")
	if len(archives) < 10 {
		t.Fatalf("%d fixture nodes", len(archives))
	}
	for _, a := range archives {
		name := strings.TrimSuffix(filepath.Base(a), ".ttar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inv, ev := recorded(t, name, nil)
			g, err := gres(t, inv, ev)
			if err != nil {
				t.Errorf("gres: %v", err)
			}
			if gs := parseGres(t, g, inv.Node); len(gs) != len(inv.GPUs) {
				t.Errorf("%d gres lines for %d GPUs:\n%s", len(gs), len(inv.GPUs), g)
			}
			e, err := env(t, inv)
			if err != nil {
				t.Errorf("env: %v", err)
			}
			if out, err := exec.Command("sh", "-n", "-c", e).CombinedOutput(); err != nil {
				t.Fatalf("sh -n: %v: %s\n%s", err, out, e)
			}
			for _, b := range envStatements(e) {
				t.Errorf("env holds %s", b)
			}
			for r, g := range inv.GPUs {
				vars, rc, stderr := sourceEnv(t, "sh", "", e, false, fmt.Sprintf("SLURM_LOCALID=%d", r))
				if rc != 0 {
					t.Fatalf("rank %d: exit %d: %s", r, rc, stderr)
				}
				want := ""
				if g.PreferredPort != "" {
					want = "=" + g.PreferredPort
				}
				if vars["NCCL_IB_HCA"] != want || vars["GDRCHECK_GPU_BUS_ID"] != g.BusID || vars["GDRCHECK_CPUS"] != g.CPUList {
					t.Errorf("rank %d: NCCL_IB_HCA %q GDRCHECK_GPU_BUS_ID %q GDRCHECK_CPUS %q, want %q %q %q", r, vars["NCCL_IB_HCA"], vars["GDRCHECK_GPU_BUS_ID"], vars["GDRCHECK_CPUS"], want, g.BusID, g.CPUList)
				}
			}
			_, rc, stderr := sourceEnv(t, "sh", "", e, false, fmt.Sprintf("LOCAL_RANK=%d", len(inv.GPUs)))
			if rc == 0 || !strings.Contains(stderr, fmt.Sprintf("local rank %d", len(inv.GPUs))) {
				t.Errorf("rank %d of %d GPUs: exit %d, stderr %q", len(inv.GPUs), len(inv.GPUs), rc, stderr)
			}
		})
	}
}

func TestGresOfTheDGXLikeNodeGivesEachGPUTheCoresOfItsNUMANode(t *testing.T) {
	inv, ev := recorded(t, "h100x8-nvswitch-cx7-pix", nil)
	out, err := gres(t, inv, ev)
	if err != nil {
		t.Fatal(err)
	}
	gs := parseGres(t, out, "h100-node")
	if len(gs) != 8 {
		t.Fatalf("%d gres lines, want 8:\n%s", len(gs), out)
	}
	// 2 sockets of 56 cores with SMT: NUMA node 0 holds CPUs 0-55 and
	// 112-167, Slurm's cores 0-55; node 1 cores 56-111.
	for i, g := range gs {
		cores := "0-55"
		if i >= 4 {
			cores = "56-111"
		}
		if g.typ != "h100" || g.file != fmt.Sprintf("/dev/nvidia%d", i) || g.cores != cores {
			t.Errorf("line %d: Type=%s File=%s Cores=%s, want h100 /dev/nvidia%d %s", i, g.typ, g.file, g.cores, i, cores)
		}
		if want := fmt.Sprintf("NUMA %d, rail mlx5_%d:1 PIX", i/4, i); !strings.HasPrefix(g.comment, fmt.Sprintf("GPU %d ", i)) || !strings.Contains(g.comment, want) {
			t.Errorf("line %d: comment %q, want GPU %d and %q", i, g.comment, i, want)
		}
	}
}

func TestMapsOfThePCIeNodeShareEachNICAmongItsFourGPUs(t *testing.T) {
	inv, ev := recorded(t, "l40s8-pcie-cx7-pxb", nil)
	out, err := gres(t, inv, ev)
	if err != nil {
		t.Fatal(err)
	}
	gs := parseGres(t, out, "l40s-node")
	if len(gs) != 8 {
		t.Fatalf("%d gres lines, want 8:\n%s", len(gs), out)
	}
	for i, g := range gs {
		// One NUMA node: every GPU is local to every core, so Cores is
		// left out, as gres.conf(5) advises.
		if g.typ != "l40s" || g.cores != "" || !strings.Contains(g.comment, "no Cores: local to every core") {
			t.Errorf("line %d: Type=%s Cores=%q comment %q", i, g.typ, g.cores, g.comment)
		}
		if want := fmt.Sprintf("rail mlx5_%d:1 PXB", i/4); !strings.Contains(g.comment, want) {
			t.Errorf("line %d: comment %q, want %q", i, g.comment, want)
		}
	}
	e, _ := env(t, inv)
	for rank := 0; rank < 8; rank++ {
		vars, rc, stderr := sourceEnv(t, "sh", "", e, false, fmt.Sprintf("OMPI_COMM_WORLD_LOCAL_RANK=%d", rank))
		nic := fmt.Sprintf("mlx5_%d:1", rank/4)
		if rc != 0 || vars["NCCL_IB_HCA"] != "="+nic || vars["UCX_NET_DEVICES"] != nic || vars["GDRCHECK_CPUS"] != "0-127" || vars["GDRCHECK_GPU_INDEX"] != fmt.Sprint(rank) {
			t.Errorf("rank %d: exit %d %s, NCCL_IB_HCA %q UCX_NET_DEVICES %q GDRCHECK_CPUS %q GDRCHECK_GPU_INDEX %q", rank, rc, stderr, vars["NCCL_IB_HCA"], vars["UCX_NET_DEVICES"], vars["GDRCHECK_CPUS"], vars["GDRCHECK_GPU_INDEX"])
		}
	}
	// LOCAL_RANK wins over SLURM_LOCALID, as torchrun's over srun's.
	if vars, _, _ := sourceEnv(t, "sh", "", e, false, "LOCAL_RANK=5", "SLURM_LOCALID=1"); vars["GDRCHECK_GPU_INDEX"] != "5" {
		t.Errorf("LOCAL_RANK=5 SLURM_LOCALID=1: GPU %q, want 5", vars["GDRCHECK_GPU_INDEX"])
	}
}

// The recorded 2 x H200 VM has no RDMA NIC and no CPU topology in sysfs.
func TestMapsOfANodeWithoutNICsSetNoNCCLDevice(t *testing.T) {
	inv, ev := recorded(t, "h200x2-nv18-vm", nil)
	out, err := gres(t, inv, ev)
	if err != nil {
		t.Fatal(err)
	}
	gs := parseGres(t, out, "vm")
	if len(gs) != 2 {
		t.Fatalf("%d gres lines, want 2:\n%s", len(gs), out)
	}
	for i, g := range gs {
		if g.typ != "h200" || g.file != fmt.Sprintf("/dev/nvidia%d", i) || g.cores != "" ||
			!strings.Contains(g.comment, "no RDMA NIC") || !strings.Contains(g.comment, "no Cores: sysfs has no CPU topology") {
			t.Errorf("line %d: %+v", i, g)
		}
	}
	e, _ := env(t, inv)
	if !strings.Contains(e, "# no RDMA NIC: NCCL_IB_HCA and UCX_NET_DEVICES are not set") {
		t.Errorf("env does not say why NCCL_IB_HCA is not set:\n%s", e)
	}
	vars, rc, stderr := sourceEnv(t, "sh", "", e, false, "SLURM_LOCALID=1")
	if _, set := vars["NCCL_IB_HCA"]; rc != 0 || set || vars["GDRCHECK_GPU_UUID"] != "GPU-ce76c6c4-9893-55a7-7050-66ecf792ce4b" {
		t.Errorf("rank 1: exit %d %s, NCCL_IB_HCA set %v, GDRCHECK_GPU_UUID %q", rc, stderr, set, vars["GDRCHECK_GPU_UUID"])
	}
	// What the job chose itself stays.
	if vars, _, _ := sourceEnv(t, "sh", "", e, false, "SLURM_LOCALID=0", "NCCL_IB_HCA=mlx5"); vars["NCCL_IB_HCA"] != "mlx5" {
		t.Errorf("NCCL_IB_HCA=mlx5 became %q", vars["NCCL_IB_HCA"])
	}
	for _, bad := range [][]string{nil, {"LOCAL_RANK=x"}, {"SLURM_LOCALID=2"}} {
		if _, rc, stderr := sourceEnv(t, "sh", "", e, false, bad...); rc == 0 || !strings.Contains(stderr, "gdrcheck: ") {
			t.Errorf("%v: exit %d, stderr %q", bad, rc, stderr)
		}
	}
}

// File= follows the device minor, not the NVML index; a GPU whose minor
// nothing gives gets no line, and the error names it.
func TestGresNamesTheDeviceMinorNotTheIndex(t *testing.T) {
	// The driver probed GPUs 0 and 1 the other way round.
	swapped := func(root string) {
		nodetest.EditNVML(t, root, func(rec map[string]any) {
			gpus := rec["gpus"].([]any)
			gpus[0].(map[string]any)["minor"], gpus[1].(map[string]any)["minor"] = 1, 0
		})
	}
	inv, ev := recorded(t, "h100x8-nvswitch-cx7-pix", swapped)
	out, err := gres(t, inv, ev)
	gs := parseGres(t, out, "h100-node")
	if err != nil || len(gs) != 8 || gs[0].file != "/dev/nvidia0" || !strings.HasPrefix(gs[0].comment, "GPU 1 0000:19:00.0") || !strings.HasPrefix(gs[1].comment, "GPU 0 0000:18:00.0") {
		t.Errorf("%v, want /dev/nvidia0 on GPU 1:\n%s", err, out)
	}

	inv, ev = recorded(t, "h100x8-nvswitch-cx7-pix", func(root string) {
		swapped(root)
		nodetest.EditNVMLGPU(t, root, 2, func(g map[string]any) { delete(g, "minor") })
		if err := os.Remove(filepath.Join(root, "proc/driver/nvidia/gpus/0000:38:00.0/information")); err != nil {
			t.Fatal(err)
		}
	})
	out, err = gres(t, inv, ev)
	gs = parseGres(t, out, "h100-node")
	if !errors.Is(err, ErrNoMinor) || len(gs) != 7 || !strings.Contains(out, "# GPU 2 0000:38:00.0: left out: its device minor") || !strings.Contains(err.Error(), "device minor unknown for GPU(s) 0000:38:00.0") {
		t.Errorf("%v, %d lines, want ErrNoMinor and 7 without GPU 2:\n%s", err, len(gs), out)
	}
}

// Types are substrings of the names Slurm's AutoDetect gives (the model
// lower-cased, spaces as underscores), as gres.conf(5) requires.
func TestGresTypeIsTheModelAsSlurmsAutoDetectNamesIt(t *testing.T) {
	for model, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":          "h100",
		"NVIDIA H200":                    "h200",
		"NVIDIA H100 PCIe":               "h100_pcie",
		"NVIDIA H100 NVL":                "h100_nvl",
		"NVIDIA GH200 120GB":             "gh200",
		"NVIDIA L40S":                    "l40s",
		"NVIDIA A100-SXM4-80GB":          "a100-sxm4",
		"Tesla V100-SXM2-32GB":           "tesla_v100-sxm2",
		"NVIDIA RTX 6000 Ada Generation": "rtx_6000_ada_generation",
		"":                               "",
		"NVIDIA H100: bad":               "",
	} {
		got := gresType(model)
		if got != want {
			t.Errorf("gresType(%q) = %q, want %q", model, got, want)
		}
		if auto := strings.ReplaceAll(strings.ToLower(model), " ", "_"); !strings.Contains(auto, got) {
			t.Errorf("%q is not in Slurm's name %q", got, auto)
		}
	}
}
