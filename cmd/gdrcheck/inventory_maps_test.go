package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gresLine is a gres.conf line as writeGres writes it.
var gresLine = regexp.MustCompile(`^Name=gpu( Type=[a-z0-9][a-z0-9_.-]*)? File=/dev/nvidia([0-9]+)( Cores=[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)? # (.*)$`)

type gresEntry struct {
	typ, file, cores, comment string
}

// parseGres checks every line of a gres output: the header first, then
// gres lines or comments; it returns the gres lines.
func parseGres(t *testing.T, out, node string) []gresEntry {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := fmt.Sprintf("# %s: gres.conf lines from gdrcheck %s", node, version); lines[0] != want {
		t.Errorf("header %q, want %q", lines[0], want)
	}
	var gs []gresEntry
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "#") {
			continue
		}
		m := gresLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("not a gres.conf line: %q", l)
			continue
		}
		gs = append(gs, gresEntry{strings.TrimPrefix(m[1], " Type="), "/dev/nvidia" + m[2], strings.TrimPrefix(m[3], " Cores="), m[7]})
	}
	return gs
}

// sourceEnv sources an env output in sh with only the given variables
// set and returns the environment it leaves, or its exit code and stderr.
func sourceEnv(t *testing.T, script string, vars ...string) (map[string]string, int, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "env.sh")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `. "$0" || exit $?; env`, f)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, vars...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	return env, code, stderr.String()
}

type invGPU struct {
	Index         int    `json:"index"`
	UUID          string `json:"uuid"`
	BusID         string `json:"bus_id"`
	CPUList       string `json:"cpu_list"`
	PreferredNIC  string `json:"preferred_nic"`
	PreferredPort string `json:"preferred_port"`
	Path          string `json:"path"`
}

func inventoryGPUs(t *testing.T, root string) ([]invGPU, string, int) {
	t.Helper()
	r := gdrcheck(t, "inventory", "--host-root", root, "--format", "json")
	var inv struct {
		Node string   `json:"node"`
		GPUs []invGPU `json:"gpus"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &inv); err != nil {
		t.Fatalf("inventory JSON: %v\n%s", err, r.stdout)
	}
	return inv.GPUs, inv.Node, r.code
}

// Every fixture node gives a gres map of one valid line per GPU and an env
// fragment that sh sources for every rank, with the rank's rail NIC, and
// refuses the rank after the last; both exit as the inventory does.
func TestInventoryMapsOfEveryFixtureNodeAreValidForEachGPU(t *testing.T) {
	archives, _ := filepath.Glob(nodes + "*.ttar")
	if len(archives) < 10 {
		t.Fatalf("%d fixture nodes", len(archives))
	}
	for _, a := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(a), ".ttar"), func(t *testing.T) {
			root := t.TempDir()
			if err := extract(a, root); err != nil {
				t.Fatal(err)
			}
			gpus, host, code := inventoryGPUs(t, root)
			gres := gdrcheck(t, "inventory", "--host-root", root, "--format", "gres")
			if gres.code != code {
				t.Errorf("gres: exit %d, json %d: %s", gres.code, code, gres.stderr)
			}
			if gs := parseGres(t, gres.stdout, host); len(gs) != len(gpus) {
				t.Errorf("%d gres lines for %d GPUs:\n%s", len(gs), len(gpus), gres.stdout)
			}
			env := gdrcheck(t, "inventory", "--host-root", root, "--format", "env")
			if env.code != code {
				t.Errorf("env: exit %d, json %d: %s", env.code, code, env.stderr)
			}
			if out, err := exec.Command("sh", "-n", "-c", env.stdout).CombinedOutput(); err != nil {
				t.Fatalf("sh -n: %v: %s\n%s", err, out, env.stdout)
			}
			for r, g := range gpus {
				vars, rc, stderr := sourceEnv(t, env.stdout, fmt.Sprintf("SLURM_LOCALID=%d", r))
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
			_, rc, stderr := sourceEnv(t, env.stdout, fmt.Sprintf("LOCAL_RANK=%d", len(gpus)))
			if rc == 0 || !strings.Contains(stderr, fmt.Sprintf("local rank %d", len(gpus))) {
				t.Errorf("rank %d of %d GPUs: exit %d, stderr %q", len(gpus), len(gpus), rc, stderr)
			}
		})
	}
}

func TestInventoryGresOfTheDGXLikeNodeGivesEachGPUTheCoresOfItsNUMANode(t *testing.T) {
	r := gdrcheck(t, "inventory", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--format", "gres")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	gs := parseGres(t, r.stdout, "h100-node")
	if len(gs) != 8 {
		t.Fatalf("%d gres lines, want 8:\n%s", len(gs), r.stdout)
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

func TestInventoryMapsOfThePCIeNodeShareEachNICAmongItsFourGPUs(t *testing.T) {
	root := nodes + "l40s8-pcie-cx7-pxb.ttar"
	r := gdrcheck(t, "inventory", "--host-root", root, "--format", "gres")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	gs := parseGres(t, r.stdout, "l40s-node")
	if len(gs) != 8 {
		t.Fatalf("%d gres lines, want 8:\n%s", len(gs), r.stdout)
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
	env := gdrcheck(t, "inventory", "--host-root", root, "--format", "env")
	for rank := 0; rank < 8; rank++ {
		vars, rc, stderr := sourceEnv(t, env.stdout, fmt.Sprintf("OMPI_COMM_WORLD_LOCAL_RANK=%d", rank))
		nic := fmt.Sprintf("mlx5_%d:1", rank/4)
		if rc != 0 || vars["NCCL_IB_HCA"] != "="+nic || vars["UCX_NET_DEVICES"] != nic || vars["GDRCHECK_CPUS"] != "0-127" || vars["GDRCHECK_GPU_INDEX"] != fmt.Sprint(rank) {
			t.Errorf("rank %d: exit %d %s, NCCL_IB_HCA %q UCX_NET_DEVICES %q GDRCHECK_CPUS %q GDRCHECK_GPU_INDEX %q", rank, rc, stderr, vars["NCCL_IB_HCA"], vars["UCX_NET_DEVICES"], vars["GDRCHECK_CPUS"], vars["GDRCHECK_GPU_INDEX"])
		}
	}
	// LOCAL_RANK wins over SLURM_LOCALID, as torchrun's over srun's.
	if vars, _, _ := sourceEnv(t, env.stdout, "LOCAL_RANK=5", "SLURM_LOCALID=1"); vars["GDRCHECK_GPU_INDEX"] != "5" {
		t.Errorf("LOCAL_RANK=5 SLURM_LOCALID=1: GPU %q, want 5", vars["GDRCHECK_GPU_INDEX"])
	}
}

// The recorded 2 x H200 VM has no RDMA NIC and no CPU topology in sysfs.
func TestInventoryMapsOfANodeWithoutNICsSetNoNCCLDevice(t *testing.T) {
	root := nodes + "h200x2-nv18-vm.ttar"
	r := gdrcheck(t, "inventory", "--host-root", root, "--format", "gres")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	gs := parseGres(t, r.stdout, "vm")
	if len(gs) != 2 {
		t.Fatalf("%d gres lines, want 2:\n%s", len(gs), r.stdout)
	}
	for i, g := range gs {
		if g.typ != "h200" || g.file != fmt.Sprintf("/dev/nvidia%d", i) || g.cores != "" ||
			!strings.Contains(g.comment, "no RDMA NIC") || !strings.Contains(g.comment, "no Cores: sysfs has no CPU topology") {
			t.Errorf("line %d: %+v", i, g)
		}
	}
	env := gdrcheck(t, "inventory", "--host-root", root, "--format", "env")
	if !strings.Contains(env.stdout, "# no RDMA NIC: NCCL_IB_HCA and UCX_NET_DEVICES are not set") {
		t.Errorf("env does not say why NCCL_IB_HCA is not set:\n%s", env.stdout)
	}
	vars, rc, stderr := sourceEnv(t, env.stdout, "SLURM_LOCALID=1")
	if _, set := vars["NCCL_IB_HCA"]; rc != 0 || set || vars["GDRCHECK_GPU_UUID"] != "GPU-ce76c6c4-9893-55a7-7050-66ecf792ce4b" {
		t.Errorf("rank 1: exit %d %s, NCCL_IB_HCA set %v, GDRCHECK_GPU_UUID %q", rc, stderr, set, vars["GDRCHECK_GPU_UUID"])
	}
	// What the job chose itself stays.
	if vars, _, _ := sourceEnv(t, env.stdout, "SLURM_LOCALID=0", "NCCL_IB_HCA=mlx5"); vars["NCCL_IB_HCA"] != "mlx5" {
		t.Errorf("NCCL_IB_HCA=mlx5 became %q", vars["NCCL_IB_HCA"])
	}
	for _, bad := range [][]string{nil, {"LOCAL_RANK=x"}, {"SLURM_LOCALID=2"}} {
		if _, rc, stderr := sourceEnv(t, env.stdout, bad...); rc == 0 || !strings.Contains(stderr, "gdrcheck: ") {
			t.Errorf("%v: exit %d, stderr %q", bad, rc, stderr)
		}
	}
}

// File= follows the device minor, not the NVML index; a GPU whose minor
// nothing gives gets no line, and the map exits 2 naming it.
func TestInventoryGresNamesTheDeviceMinorNotTheIndex(t *testing.T) {
	root := t.TempDir()
	if err := extract(nodes+"h100x8-nvswitch-cx7-pix.ttar", root); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(root, "gdrcheck/nvml.json")
	edit := func(f func(gpus []any)) {
		b, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		f(m["gpus"].([]any))
		b, _ = json.Marshal(m)
		if err := os.WriteFile(rec, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The driver probed GPUs 0 and 1 the other way round.
	edit(func(gpus []any) { gpus[0].(map[string]any)["minor"], gpus[1].(map[string]any)["minor"] = 1, 0 })
	r := gdrcheck(t, "inventory", "--host-root", root, "--format", "gres")
	gs := parseGres(t, r.stdout, "h100-node")
	if r.code != 0 || len(gs) != 8 || gs[0].file != "/dev/nvidia0" || !strings.HasPrefix(gs[0].comment, "GPU 1 0000:19:00.0") || !strings.HasPrefix(gs[1].comment, "GPU 0 0000:18:00.0") {
		t.Errorf("exit %d, want /dev/nvidia0 on GPU 1:\n%s", r.code, r.stdout)
	}

	edit(func(gpus []any) { delete(gpus[2].(map[string]any), "minor") })
	if err := os.Remove(filepath.Join(root, "proc/driver/nvidia/gpus/0000:38:00.0/information")); err != nil {
		t.Fatal(err)
	}
	r = gdrcheck(t, "inventory", "--host-root", root, "--format", "gres")
	gs = parseGres(t, r.stdout, "h100-node")
	if r.code != 2 || len(gs) != 7 || !strings.Contains(r.stdout, "# GPU 2 0000:38:00.0: left out: its device minor") || !strings.Contains(r.stderr, "device minor unknown for GPU(s) 0000:38:00.0") {
		t.Errorf("exit %d, %d lines, want 2 and 7 without GPU 2:\n%s\n%s", r.code, len(gs), r.stdout, r.stderr)
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
