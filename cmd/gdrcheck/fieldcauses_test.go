package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

// healthyNode is the recorded shape each field-cause variant starts from.
const healthyNode = "h100x8-nvswitch-cx7-pix"

// variantOf extracts the healthy node into a directory and applies edit:
// a fixture variant that differs from a passing node by one cause.
func variantOf(t *testing.T, edit func(t *testing.T, root string)) string {
	t.Helper()
	return variantFrom(t, healthyNode, nil, edit)
}

// nvmlEdit rewrites the node's gdrcheck/nvml.json recording.
func nvmlEdit(edit func(rec map[string]any)) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		nodetest.EditNVML(t, root, edit)
	}
}

// editGPU rewrites one GPU of the node's NVML recording.
func editGPU(i int, edit func(g map[string]any)) func(*testing.T, string) {
	return nvmlEdit(func(rec map[string]any) { edit(rec["gpus"].([]any)[i].(map[string]any)) })
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

// then applies edits in order.
func then(edits ...func(*testing.T, string)) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		for _, e := range edits {
			e(t, root)
		}
	}
}

// roce turns the variant's rails to RoCE v2 (GID 3, netdevs at 9000):
// the healthy RoCE shape, judged with roceBaselines.
func roce(t *testing.T, root string) { toRoCE(t, root, 3, 9000) }

// roceBaselines holds a profile of the H100 node whose rails are
// Ethernet: the shipped NDR profiles match no RoCE node (nic.link_layer).
var roceBaselines = []string{"--baseline-dir", "testdata/roce-baselines"}

// railNetdev is the netdev of a rail NIC of the variant's tree.
func railNetdev(t *testing.T, root, ibdev string) string {
	t.Helper()
	nets, _ := filepath.Glob(filepath.Join(root, "sys/class/infiniband", ibdev, "device/net/*"))
	if len(nets) != 1 {
		t.Fatalf("%s: netdevs %v", ibdev, nets)
	}
	return filepath.Base(nets[0])
}

// withoutIPv4 takes a RoCE port's netdev's IPv4 address away: its GID
// table keeps the link-local entries 0 and 1 only, so NCCL's own choice
// falls back to entry 0, RoCE v1.
func withoutIPv4(ibdev string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		port := filepath.Join(root, "sys/class/infiniband", ibdev, "ports/1")
		for _, i := range []string{"2", "3"} {
			if err := os.WriteFile(filepath.Join(port, "gids", i), []byte("0000:0000:0000:0000:0000:0000:0000:0000\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(port, "gid_attrs/types", i))
			os.Remove(filepath.Join(port, "gid_attrs/ndevs", i))
		}
	}
}

// railMTU sets the MTU of a rail NIC's netdev.
func railMTU(ibdev string, mtu int) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		if err := nodetest.SetNetMTU(root, railNetdev(t, root, ibdev), mtu); err != nil {
			t.Fatal(err)
		}
	}
}

// Each variant breaks one cause from docs/field-causes.md and fails the
// one spec that names it; a warning-only cause passes with its warning.
func TestEachFieldCauseVariantFailsForItsOwnReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		edit   func(*testing.T, string)
		spec   string // suite / spec that fails, or warns when warn is set
		says   string
		warn   bool
		suites string
		args   []string
	}{
		{"MIG on (#19)", editGPU(2, func(g map[string]any) { g["mig"] = true }),
			"topology / has MIG off on every GPU",
			"GPU 2 0000:38:00.0 has MIG enabled: MIG instances get no GPU peer access and no GPUDirect RDMA path for NCCL; disable it (nvidia-smi -i 2 -mig 0, then reset the GPU)", false, "topology,kernel,bar1", nil},
		{"an NVLink down (#17)", editGPU(5, func(g map[string]any) { g["nvlinks"] = map[string]any{"up": 16, "total": 18} }),
			"topology / has every NVLink of each GPU up",
			"GPU 5 0000:99:00.0 has 16 of 18 NVLinks up, its peers 18: a link is down", false, "topology,kernel,bar1", nil},
		{"persistence off (#42)", editGPU(1, func(g map[string]any) { g["persistence"] = false }),
			"topology / keeps persistence mode on for every GPU",
			"GPU 1 0000:19:00.0 has persistence mode off", true, "topology,kernel,bar1", nil},
		{"Xid 79 in kmsg (#16)", writeFile("gdrcheck/kmsg.txt", "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"),
			"kernel / logs no Xid that breaks the direct path (79, 74, 144-149)",
			"kernel log: NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.: the GPU fell off the bus; drain the node", false, "topology,kernel,bar1", nil},
		{"Xid 145 in kmsg (#17)", writeFile("gdrcheck/kmsg.txt", "NVRM: Xid (PCI:0000:38:00): 145, NVLink: RLW Error Interrupt\n"),
			"kernel / logs no Xid that breaks the direct path (79, 74, 144-149)",
			"an NVLink error; drain the node", false, "topology,kernel,bar1", nil},
		{"fabric manager not done (#18)", editGPU(3, func(g map[string]any) { g["fabric"] = map[string]any{"state": "IN_PROGRESS", "status": "SUCCESS"} }),
			"topology / has every GPU's NVLink fabric state Completed with status Success",
			"GPU 3 0000:39:00.0 has NVLink fabric state IN_PROGRESS: nvidia-fabricmanager has not registered it with the NVSwitch fabric, so CUDA fails with error 802", false, "topology,kernel,bar1", nil},
		{"fabric Completed / Insufficient Resources (#18)", editGPU(6, func(g map[string]any) {
			g["fabric"] = map[string]any{"state": "COMPLETED", "status": "ERROR_INSUFFICIENT_RESOURCES"}
		}),
			"topology / has every GPU's NVLink fabric state Completed with status Success",
			"GPU 6 0000:b8:00.0 has NVLink fabric state COMPLETED with status ERROR_INSUFFICIENT_RESOURCES: the fabric manager could not add it to the NVSwitch fabric", false, "topology,kernel,bar1", nil},
		{"GDRCopy missing under UCX (#35)", writeFile("usr/lib/x86_64-linux-gnu/ucx/libuct_cuda_gdr.so.0", ""),
			"kernel / has GDRCopy's gdrdrv loaded where UCX or MPI would use it",
			"GDRCopy's gdrdrv module is not loaded, yet UCX (/usr/lib/x86_64-linux-gnu/ucx) is installed: UCX's gdr_copy transport is unavailable", true, "topology,kernel,bar1", nil},
		{"a rail in Ethernet mode on an InfiniBand profile (#28)", flipRail,
			linkLayerSpec,
			"mlx5_3 port 1 (ibp27s0) runs Ethernet, 7 of the node's 8 rail ports InfiniBand", false, "topology,kernel,bar1,fabric", nil},
		{"a RoCE rail whose netdev lost its IPv4 address (#23)", then(roce, withoutIPv4("mlx5_2")),
			"fabric / gives NCCL a RoCE v2 GID on every RoCE rail port",
			"mlx5_2 port 1 (ibp26s0): NCCL would use GID 0 (NCCL's own choice)", false, "topology,kernel,bar1,fabric", roceBaselines},
		{"NCCL_IB_GID_INDEX on a link-local entry (#23)", then(roce, writeFile("etc/nccl.conf", "NCCL_IB_GID_INDEX=1\n")),
			"fabric / gives NCCL a RoCE v2 GID on every RoCE rail port",
			"NCCL would use GID 1 (NCCL_IB_GID_INDEX=1 (/etc/nccl.conf line 1))", false, "topology,kernel,bar1,fabric", roceBaselines},
		{"one RoCE rail at MTU 1024 (#29)", then(roce, railMTU("mlx5_5", 1500)),
			"fabric / runs every RoCE rail port at the node's highest active MTU",
			"mlx5_5 port 1 (ibp29s0) runs at active MTU 1024 (netdev MTU 1500), the node's other RoCE rails at 4096", false, "topology,kernel,bar1,fabric", roceBaselines},
		{"every RoCE rail at MTU 1024 (#29)", then(roce, func(t *testing.T, root string) {
			for i := range 8 {
				railMTU(fmt.Sprintf("mlx5_%d", i), 1500)(t, root)
			}
		}),
			"fabric / runs every RoCE rail port at the node's highest active MTU",
			"every RoCE rail runs at active MTU 1024", true, "topology,kernel,bar1,fabric", roceBaselines},
	}
	actions := fieldCauseActions(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := variantOf(t, c.edit)
			res := judgeVariant(t, root, c.spec, c.says, c.warn, c.suites, c.args)
			if c.warn {
				return
			}
			// The failing spec asks what docs/field-causes.md says
			// the cause needs.
			m := causeNumber.FindStringSubmatch(c.name)
			if m == nil {
				t.Fatalf("%q names no cause (#N)", c.name)
			}
			want := actions[m[1]]
			for _, s := range res.Nodes[0].Suites {
				for _, sp := range s.Specs {
					if s.Name+" / "+sp.Name == c.spec && sp.Action != want {
						t.Errorf("%s asks %s (%s %s); docs/field-causes.md says cause #%s needs %s", c.spec, sp.Action, sp.Scope, sp.Entity, m[1], want)
					}
				}
			}
		})
	}
}

var causeNumber = regexp.MustCompile(`\(#(\d+)\)`)

// fieldCauseActions reads the action column of docs/field-causes.md:
// cause number -> action.
func fieldCauseActions(t *testing.T) map[string]results.Action {
	t.Helper()
	b, err := os.ReadFile("../../docs/field-causes.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| (\\d+) \\|.*\\| `([A-Z_]+)`[^|]*\\|$")
	out := map[string]results.Action{}
	for _, l := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			out[m[1]] = results.Action(m[2])
		}
	}
	if len(out) != 42 {
		t.Fatalf("docs/field-causes.md: %d rows with an action, want 42", len(out))
	}
	return out
}

// judgeVariant runs the suites (and args) on a variant root: spec fails
// saying says and no other spec fails but those in also (the same cause
// seen by another spec), or, with warn, every spec passes and spec's
// first warning starts with says.
func judgeVariant(t *testing.T, root, spec, says string, warn bool, suites string, args []string, also ...string) *results.Results {
	t.Helper()
	exit := 1
	if warn {
		exit = 0
	}
	return judgeRun(t, root, spec, says, exit, suites, args, also...)
}

// judgeRun is judgeVariant for a run that must exit with exit (0: spec
// passes with the warning says; 2: the node is not fully evaluated, as
// when NVML cannot see a GPU), returning the results for more checks.
func judgeRun(t *testing.T, root, spec, says string, exit int, suites string, args []string, also ...string) *results.Results {
	t.Helper()
	out := t.TempDir()
	r := gdrcheck(t, append([]string{"run", "-q", "--host-root", root, "--out", out, "--suites", suites}, args...)...)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.stdout, r.stderr)
	}
	if r.code != exit {
		t.Errorf("exit %d, want %d:\n%s", r.code, exit, r.stdout)
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
	if exit == 0 {
		if found.State != results.StatePassed || len(failed) != 0 || !strings.HasPrefix(strings.Join(found.Warnings(), "\n"), says) {
			t.Errorf("%s: %s, warnings %q, failed %q; want a pass warning %q", spec, found.State, found.Warnings(), failed, says)
		}
		return res
	}
	wantFailed := append([]string{spec}, also...)
	if !slices.Equal(slices.Sorted(slices.Values(failed)), slices.Sorted(slices.Values(wantFailed))) {
		t.Errorf("failed %q, want only %q", failed, wantFailed)
	}
	if !strings.Contains(found.Message, says) {
		t.Errorf("%s says %q, want %q", spec, found.Message, says)
	}
	return res
}
