package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// overrideNode is the 8 x H100 fixture node (one PIX CX-7 per GPU) with
// files planted under its root.
func overrideNode(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := extract(nodes+"h100x8-nvswitch-cx7-pix.ttar", dir); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jobEnv is the test's environment without its own NCCL_* and UCX_*, plus
// the ones a test plants: what the job would inherit.
func jobEnv(planted ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NCCL_") && !strings.HasPrefix(kv, "UCX_") {
			env = append(env, kv)
		}
	}
	return append(append(env, "SLURMD_NODENAME=", "HOME=/root"), planted...)
}

const siteConf = "# site tuning\nNCCL_DEBUG=WARN\nNCCL_NET_GDR_LEVEL=LOC\n"

// inventory lists each inherited setting with where it came from and the
// override audit's word on it, in all three formats; a node that inherits
// nothing lists none.
func TestInventoryListsInheritedOverridesWithTheirSourceAndFit(t *testing.T) {
	t.Parallel()
	root := overrideNode(t, map[string]string{"etc/nccl.conf": siteConf})
	env := jobEnv("NCCL_NVLS_ENABLE=0")

	r := gdrcheckEnv(t, env, "inventory", "--host-root", root)
	if r.code != 0 {
		t.Fatalf("inventory: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"| name | value | from | fits |",
		"| NCCL_NVLS_ENABLE | 0 | environment | fits |",
		"| NCCL_DEBUG | WARN | /etc/nccl.conf:2 | fits |",
		"| NCCL_NET_GDR_LEVEL | LOC | /etc/nccl.conf:3 | breaks the direct path: GPUDirect RDMA off for 8 GPU(s) (0000:18:00.0 -> mlx5_0 is PIX,",
	} {
		if !strings.Contains(squeeze(r.stdout), want) {
			t.Errorf("the table lacks %q:\n%s", want, r.stdout)
		}
	}

	want := []node.InventoryOverride{
		{Setting: node.Setting{Name: "NCCL_NVLS_ENABLE", Value: "0", Source: "environment"}, Fit: "fits"},
		{Setting: node.Setting{Name: "NCCL_DEBUG", Value: "WARN", Source: "/etc/nccl.conf", Line: 2}, Fit: "fits"},
		{Setting: node.Setting{Name: "NCCL_NET_GDR_LEVEL", Value: "LOC", Source: "/etc/nccl.conf", Line: 3}, Fit: "breaks the direct path"},
	}
	for _, format := range []string{"yaml", "json"} {
		r := gdrcheckEnv(t, env, "inventory", "--host-root", root, "--format", format)
		inv, err := node.ParseInventory([]byte(r.stdout))
		if r.code != 0 || err != nil {
			t.Fatalf("inventory --format %s: exit %d, %v\n%s", format, r.code, err, r.stderr)
		}
		if len(inv.Overrides) != len(want) {
			t.Fatalf("--format %s: overrides %+v, want %d", format, inv.Overrides, len(want))
		}
		for i, w := range want {
			got := inv.Overrides[i]
			if got.Setting != w.Setting || got.Fit != w.Fit || (w.Fit == "fits") != (got.Why == "") {
				t.Errorf("--format %s: override %d %+v, want %+v", format, i, got, w)
			}
		}
		if !strings.Contains(inv.Overrides[2].Why, "GPUDirect RDMA off for 8 GPU(s)") {
			t.Errorf("--format %s: why %q", format, inv.Overrides[2].Why)
		}
	}

	bare := gdrcheckEnv(t, jobEnv(), "inventory", "--host-root", overrideNode(t, nil), "--format", "json")
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(bare.stdout), &m); err != nil || bare.code != 0 {
		t.Fatalf("inventory of the bare node: exit %d, %v", bare.code, err)
	}
	if _, ok := m["overrides"]; ok {
		t.Errorf("a node that inherits nothing lists overrides: %s", m["overrides"])
	}
}

// compare reads the inherited settings from each run's results.json: one
// that breaks the direct path appearing in /etc/nccl.conf is a regression
// naming the variable, its old and new value and its source; a harmless
// change is a note.
func TestCompareFlagsAnInheritedOverrideChange(t *testing.T) {
	t.Parallel()
	run := func(root string, env []string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "run")
		r := gdrcheckEnv(t, env, "run", "--host-root", root, "--suites", "topology", "--out", out)
		if r.code == results.ExitUnevaluable {
			t.Fatalf("run: exit 2\n%s", r.stderr)
		}
		res, err := results.Read(filepath.Join(out, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res.Nodes[0].Evidence), `"overrides"`) && len(env) > len(jobEnv()) {
			t.Errorf("results.json keeps no overrides")
		}
		return out
	}
	before := run(overrideNode(t, nil), jobEnv("NCCL_DEBUG=INFO"))
	after := run(overrideNode(t, map[string]string{"etc/nccl.conf": siteConf}), jobEnv("NCCL_DEBUG=INFO"))

	// A wide terminal: the change is looked for whole, not as wrapped.
	r := gdrcheckEnv(t, append(jobEnv(), "COLUMNS=1000"), "compare", before, after)
	if r.code != results.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if want := "keeps its inherited NCCL and UCX settings | REGRESSED | NCCL_NET_GDR_LEVEL: unset -> LOC (/etc/nccl.conf line 3): GPUDirect RDMA off for 8 GPU(s)"; !strings.Contains(squeeze(r.stdout), want) {
		t.Errorf("the comparison does not say %q:\n%s", want, r.stdout)
	}

	benign := run(overrideNode(t, map[string]string{"etc/nccl.conf": "NCCL_NVLS_ENABLE=0\n"}), jobEnv("NCCL_DEBUG=WARN"))
	r = gdrcheckEnv(t, append(jobEnv(), "COLUMNS=1000"), "compare", before, benign)
	if r.code != results.ExitPassed {
		t.Fatalf("a harmless change: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"NCCL_DEBUG: INFO -> WARN (environment)", "NCCL_NVLS_ENABLE: unset -> 0 (/etc/nccl.conf line 1)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the comparison does not note %q:\n%s", want, r.stdout)
		}
	}
}
