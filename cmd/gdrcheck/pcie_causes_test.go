package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

// built builds a fixture node from its nodetest builder into a temporary
// root and applies edits to its tree: the PCIe causes are Variants of the
// builders, or shapes no healthy archive holds.
func built(t *testing.T, build func(string) (*nodetest.Tree, error), edits ...func(*nodetest.Tree)) string {
	t.Helper()
	root := t.TempDir()
	tree, err := build(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(tree)
	}
	if err := tree.Finish(); err != nil {
		t.Fatal(err)
	}
	return root
}

func h100With(vs ...nodetest.Variant) func(string) (*nodetest.Tree, error) {
	return func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d, vs...) }
}

// The PCIe causes of docs/field-causes.md (#7, #13, #14, #15), each a
// variant of a passing node that fails, or warns, for its own reason.
func TestEachPCIeFieldCauseVariantFailsForItsOwnReason(t *testing.T) {
	t.Parallel()
	const pcieSpec = "topology / sets PCIe payload, read request and relaxed ordering for full GPUDirect speed"
	cases := []struct {
		name   string
		build  func(string) (*nodetest.Tree, error)
		edits  []func(*nodetest.Tree)
		spec   string
		says   string
		warn   bool
		suites string
		also   []string // fail too, for the same cause
	}{
		{"AER fatal error on a GPU (#15)", h100With(nodetest.AERFatal(1)), nil,
			"topology / has no PCIe AER errors on the GPUs, NICs and bridges above them",
			"GPU 1 0000:19:00.0 has had 1 fatal and 0 non-fatal uncorrectable PCIe errors since boot (fatal: SDES 1): a marginal link, riser or slot", false, "topology,kernel,bar1", nil},
		{"NIC Max Read Request 512 (#14)", h100With(nodetest.NICReadRequest(3, 512)), nil, pcieSpec,
			"NIC mlx5_3 0000:3b:00.0 reads with PCIe Max Read Request 512 bytes; expected 4096", true, "topology,kernel,bar1", nil},
		{"ATS off in a VM (#13)", h100With(nodetest.InVM(nodetest.ATSOff)), nil,
			"topology / has ATS enabled on the NICs and GPUs of a virtual machine",
			"NIC mlx5_0 0000:1a:00.0 has ATS disabled (ATSCtl 0x0000) in this VM", true, "topology,kernel,bar1", nil},
		// NVIDIA/nccl#2079's box has no NIC: only the new spec can see it.
		{"ACS between PCIe peer GPUs (#7)", nodetest.PCIeWorkstation(0x1d), nil,
			"topology / has no ACS redirect on the path between two GPUs that talk over PCIe",
			"bridge 0000:40:01.1 between GPU 0 0000:41:00.0 <-> GPU 1 0000:42:00.0 has ACS ReqRedir+ CmpltRedir+ (ACSCtl 0x001d)", false, "topology", nil},
		// On the L40S box every bridge between two GPUs also carries one
		// of them to its NIC, so the GPU -> NIC spec fails as well.
		{"ACS on a GPU <-> GPU bridge of the PCIe box (#7)", nodetest.L40S8, []func(*nodetest.Tree){func(tr *nodetest.Tree) {
			tr.SetConfig("0000:14:01.0", nodetest.PCIeConfig(nodetest.BridgeDevCtl, 0x1d))
		}},
			"topology / has no ACS redirect on the path between two GPUs that talk over PCIe",
			"bridge 0000:14:01.0 between GPU 0 0000:1a:00.0 <-> GPU 1 0000:1b:00.0 and 2 more GPU pair(s) has ACS ReqRedir+ CmpltRedir+ (ACSCtl 0x001d)", false, "topology,kernel,bar1",
			[]string{"topology / has no ACS redirect on the path between a GPU and its NIC"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			judgeVariant(t, built(t, c.build, c.edits...), c.spec, c.says, c.warn, c.suites, nil, c.also...)
		})
	}
}

// The healthy counterparts of the variants above pass with no word from
// the PCIe specs: the VM with ATS on, the workstation with ACS clear.
func TestPCIeHealthyCounterpartsPassQuietly(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(string) (*nodetest.Tree, error){
		"H100 VM with ATS on":          h100With(nodetest.InVM(nodetest.ATSOn)),
		"workstation with ACS cleared": nodetest.PCIeWorkstation(0),
	} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			r := gdrcheck(t, "run", "-q", "--host-root", built(t, build), "--out", out, "--suites", "topology")
			res, err := results.Read(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatalf("%v\n%s", err, r.stderr)
			}
			if r.code != 0 {
				t.Errorf("exit %d:\n%s", r.code, r.stdout)
			}
			ran := 0
			for _, s := range res.Nodes[0].Suites {
				for _, sp := range s.Specs {
					if !strings.Contains(sp.Name, "PCIe") && !strings.Contains(sp.Name, "ATS") {
						continue
					}
					if sp.State == results.StatePassed {
						ran++
					}
					if sp.State == results.StateFailed || len(sp.Notes) > 0 {
						b, _ := json.Marshal(sp)
						t.Errorf("%s", b)
					}
				}
			}
			if ran < 3 {
				t.Errorf("%d PCIe specs passed, want at least 3 to have run", ran)
			}
		})
	}
}
