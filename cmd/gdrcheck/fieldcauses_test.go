package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// healthyNode is the recorded shape each field-cause variant starts from.
const healthyNode = "h100x8-nvswitch-cx7-pix"

// variantOf extracts the healthy node into a directory and applies edit:
// a fixture variant that differs from a passing node by one cause.
func variantOf(t *testing.T, edit func(t *testing.T, root string)) string {
	t.Helper()
	root := t.TempDir()
	if err := extract(nodes+healthyNode+".ttar", root); err != nil {
		t.Fatal(err)
	}
	edit(t, root)
	return root
}

// editGPU rewrites one GPU of the node's gdrcheck/nvml.json recording.
func editGPU(i int, edit func(g map[string]any)) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		p := filepath.Join(root, "gdrcheck/nvml.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		edit(rec["gpus"].([]any)[i].(map[string]any))
		if b, err = json.Marshal(rec); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFile writes a file of the variant's tree, relative to its root.
func writeFile(rel, content string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Each variant breaks one cause from docs/field-causes.md and fails the
// one spec that names it; a warning-only cause passes with its warning.
func TestEachFieldCauseVariantFailsForItsOwnReason(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(*testing.T, string)
		spec   string // suite / spec that fails, or warns when warn is set
		says   string
		warn   bool
		suites string
	}{
		{"MIG on (#19)", editGPU(2, func(g map[string]any) { g["mig"] = true }),
			"topology / has MIG off on every GPU",
			"GPU 2 0000:38:00.0 has MIG enabled: MIG instances get no GPU peer access and no GPUDirect RDMA path for NCCL; disable it (nvidia-smi -i 2 -mig 0, then reset the GPU)", false, "topology,kernel,bar1"},
		{"an NVLink down (#17)", editGPU(5, func(g map[string]any) { g["nvlinks"] = map[string]any{"up": 16, "total": 18} }),
			"topology / has every NVLink of each GPU up",
			"GPU 5 0000:99:00.0 has 16 of 18 NVLinks up, its peers 18: a link is down", false, "topology,kernel,bar1"},
		{"persistence off (#42)", editGPU(1, func(g map[string]any) { g["persistence"] = false }),
			"topology / keeps persistence mode on for every GPU",
			"GPU 1 0000:19:00.0 has persistence mode off", true, "topology,kernel,bar1"},
		{"Xid 79 in kmsg (#16)", writeFile("gdrcheck/kmsg.txt", "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"),
			"kernel / logs no Xid that breaks the direct path (79, 74, 144-149)",
			"kernel log: NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.: the GPU fell off the bus; drain the node", false, "topology,kernel,bar1"},
		{"Xid 145 in kmsg (#17)", writeFile("gdrcheck/kmsg.txt", "NVRM: Xid (PCI:0000:38:00): 145, NVLink: RLW Error Interrupt\n"),
			"kernel / logs no Xid that breaks the direct path (79, 74, 144-149)",
			"an NVLink error; drain the node", false, "topology,kernel,bar1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := variantOf(t, c.edit)
			judgeVariant(t, root, c.spec, c.says, c.warn, c.suites)
		})
	}
}

// judgeVariant runs the suites on a variant root: spec fails saying says
// and no other spec fails but those in also (the same cause seen by
// another spec), or, with warn, every spec passes and spec's first
// warning starts with says.
func judgeVariant(t *testing.T, root, spec, says string, warn bool, suites string, also ...string) {
	t.Helper()
	out := t.TempDir()
	r := gdrcheck(t, "run", "-q", "--host-root", root, "--out", out, "--suites", suites)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.stdout, r.stderr)
	}
	want := 1
	if warn {
		want = 0
	}
	if r.code != want {
		t.Errorf("exit %d, want %d:\n%s", r.code, want, r.stdout)
	}
	var failed []string
	var found *results.Spec
	for _, s := range res.Nodes[0].Suites {
		for _, sp := range s.Specs {
			if sp.State == results.StateFailed {
				failed = append(failed, s.Name+" / "+sp.Name)
			}
			if s.Name+" / "+sp.Name == spec {
				found = &sp
			}
		}
	}
	if found == nil {
		t.Fatalf("no spec %q ran", spec)
	}
	if warn {
		if found.State != results.StatePassed || len(failed) != 0 || !strings.HasPrefix(strings.Join(found.Warnings(), "\n"), says) {
			t.Errorf("%s: %s, warnings %q, failed %q; want a pass warning %q", spec, found.State, found.Warnings(), failed, says)
		}
		return
	}
	wantFailed := append([]string{spec}, also...)
	if !slices.Equal(slices.Sorted(slices.Values(failed)), slices.Sorted(slices.Values(wantFailed))) {
		t.Errorf("failed %q, want only %q", failed, wantFailed)
	}
	if !strings.Contains(found.Message, says) {
		t.Errorf("%s says %q, want %q", spec, found.Message, says)
	}
}
