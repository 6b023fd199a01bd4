package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

func TestInventoryJSONOfTheDGXLikeNodeMatchesThePublicMatrixPairByPair(t *testing.T) {
	t.Parallel()
	r := gdrcheck(t, "inventory", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var inv struct {
		GPUs []struct {
			Index        int    `json:"index"`
			BusID        string `json:"bus_id"`
			PreferredNIC string `json:"preferred_nic"`
			Path         string `json:"path"`
		} `json:"gpus"`
		Paths []struct {
			GPUIndex int    `json:"gpu_index"`
			NIC      string `json:"nic"`
			Path     string `json:"path"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &inv); err != nil {
		t.Fatalf("inventory JSON: %v\n%s", err, r.stdout)
	}
	want := nodetest.TopoMatrix(t, "../../fixtures/corpus/nvidia-smi-topo/gke-a4-b200-8gpu-nv18-8nic-cx7-pix-node-sys.txt")
	if len(inv.GPUs) != 8 || len(inv.Paths) != 64 || len(want) != 8 {
		t.Fatalf("%d GPUs, %d pairs; public matrix %d rows", len(inv.GPUs), len(inv.Paths), len(want))
	}
	for _, g := range inv.GPUs {
		if g.PreferredNIC == "" || g.Path != "PIX" {
			t.Errorf("GPU %d: preferred_nic %q path %q, want a PIX NIC", g.Index, g.PreferredNIC, g.Path)
		}
	}
	for _, p := range inv.Paths {
		gpu := "GPU" + string(rune('0'+p.GPUIndex))
		if w := want[gpu][p.NIC]; w != p.Path {
			t.Errorf("%s <-> %s: %s, the public matrix says %s", gpu, p.NIC, p.Path, w)
		}
	}
}

func TestInventoryExpectReportsTheGPUsThatChangedRail(t *testing.T) {
	t.Parallel()
	stored := filepath.Join(t.TempDir(), "node.yaml")
	r := gdrcheck(t, "inventory", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--format", "yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if err := os.WriteFile(stored, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := node.ParseInventory([]byte(r.stdout)); err != nil {
		t.Fatalf("the YAML inventory does not read back: %v", err)
	}

	same := gdrcheck(t, "inventory", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--expect", stored)
	if same.code != 0 {
		t.Errorf("unchanged node: exit %d: %s", same.code, same.stderr)
	}
	moved := gdrcheck(t, "inventory", "--host-root", nodes+"h100x8-nic-sys.ttar", "--expect", stored)
	if moved.code != 1 {
		t.Fatalf("node with moved NICs: exit %d, want 1: %s", moved.code, moved.stderr)
	}
	for _, want := range []string{
		"drift: GPU 4 0000:98:00.0: rail mlx5_4 (SYS), expected mlx5_4 (PIX)",
		"drift: GPU 7 0000:b9:00.0: rail mlx5_7 (SYS), expected mlx5_7 (PIX)",
	} {
		if !strings.Contains(moved.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, moved.stderr)
		}
	}
	if strings.Contains(moved.stderr, "GPU 0 ") {
		t.Errorf("GPU 0 kept its rail but was reported:\n%s", moved.stderr)
	}

	// The same comparison as a spec of the topology suite.
	out := t.TempDir()
	run := gdrcheck(t, "run", "-q", "--host-root", nodes+"h100x8-nic-sys.ttar", "--out", out, "--expect", stored)
	if run.code != 1 || !strings.Contains(run.stdout, "matches the expected inventory") {
		t.Errorf("run --expect: exit %d, want 1 with the inventory spec failing:\n%s", run.code, run.stdout)
	}
}

func TestBadInputExitsTwoWithAMessageNamingWhatIsMissing(t *testing.T) {
	t.Parallel()
	unpack := func(t *testing.T, name string) string {
		dir := t.TempDir()
		r := gdrcheck(t, "inventory", "--host-root", nodes+name+".ttar", "--format", "json")
		if r.code != 0 {
			t.Fatalf("fixture %s is broken: %s", name, r.stderr)
		}
		if err := extract(nodes+name+".ttar", dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// inventory exits 0 where only NVML is missing: sysfs's map is
	// complete, and NVML's error is a warning.
	cases := []struct {
		name      string
		root      func(t *testing.T) string
		wants     []string
		inventory int
	}{
		{"a host root that does not exist", func(t *testing.T) string { return "/nonexistent/gdrcheck" }, []string{`host root "/nonexistent/gdrcheck"`, "no such file or directory"}, 2},
		{"a node without NVIDIA GPUs", func(t *testing.T) string { return nodes + "cpu-no-gpu.ttar" }, []string{"no NVIDIA GPU found", "ERROR_DRIVER_NOT_LOADED"}, 2},
		{"a recording without NVML answers", func(t *testing.T) string {
			dir := unpack(t, "h200x2-nv18-vm")
			os.Remove(filepath.Join(dir, "gdrcheck/nvml.json"))
			return dir
		}, []string{"no NVML recording", "gdrcheck/nvml.json"}, 0},
		{"a PCI device missing its class file", func(t *testing.T) string {
			dir := unpack(t, "h200x2-nv18-vm")
			os.Remove(filepath.Join(dir, "sys/devices/pci0000:00/0000:00:06.0/class"))
			return dir
		}, []string{"0000:00:06.0/class", "no such file or directory"}, 2},
		{"an unreadable InfiniBand port", func(t *testing.T) string {
			dir := unpack(t, "h100x8-nvswitch-cx7-pix")
			p, _ := filepath.Glob(filepath.Join(dir, "sys/devices/*/*/*/*/*/infiniband/mlx5_3/ports/1/rate"))
			if len(p) != 1 {
				t.Fatalf("rate file of mlx5_3 not found")
			}
			os.Remove(p[0])
			return dir
		}, []string{"mlx5_3", "ports/1/rate"}, 2},
		{"a broken NVML recording", func(t *testing.T) string {
			dir := unpack(t, "h200x2-nv18-vm")
			os.WriteFile(filepath.Join(dir, "gdrcheck/nvml.json"), []byte("{\n  \"driver_version\": 580,\n}\n"), 0o644)
			return dir
		}, []string{"gdrcheck/nvml.json", "line 3", "invalid character"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := c.root(t)
			for _, args := range [][]string{{"inventory"}, {"run", "-q", "--suites", "topology", "--out", t.TempDir()}} {
				r := gdrcheck(t, append(args, "--host-root", root)...)
				want := 2
				if args[0] == "inventory" {
					want = c.inventory
				}
				if r.code != want {
					t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args[0], r.code, want, r.stdout, r.stderr)
				}
				all := r.stdout + r.stderr
				for _, w := range c.wants {
					if !strings.Contains(all, w) {
						t.Errorf("%s: output does not say %q:\n%s", args[0], w, all)
					}
				}
			}
		})
	}
}

func TestUnknownSuiteIsRejectedByName(t *testing.T) {
	t.Parallel()
	r := gdrcheck(t, "run", "--suites", "topology,topolgy", "--host-root", nodes+"h200x2-nv18-vm.ttar", "--out", t.TempDir())
	if r.code != 2 || !strings.Contains(r.stderr, `unknown suite "topolgy"`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// BenchmarkRunTopology times the quick gate on a fixture node: a whole
// gdrcheck process, archive unpacking included (the target is under 2 s).
func BenchmarkRunTopology(b *testing.B) {
	for _, name := range []string{"h100x8-nvswitch-cx7-pix", "h200x2-nv18-vm"} {
		b.Run(name, func(b *testing.B) {
			out := b.TempDir()
			for i := 0; i < b.N; i++ {
				if r := gdrcheck(b, "run", "-q", "--suites", "topology", "--host-root", nodes+name+".ttar", "--out", out); r.code != 0 {
					b.Fatalf("exit %d: %s", r.code, r.stderr)
				}
			}
		})
	}
}
