package compare

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// The real 2 x H200 NV18 node with every default suite.
const recorded = "../../fixtures/results/h200x2-nv18-all-suites.results.json"

func load(t *testing.T) *results.Results {
	t.Helper()
	r, err := results.Read(recorded)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// withEvidence changes the node's raw evidence.
func withEvidence(t *testing.T, n *results.Node, change func(*node.Evidence)) {
	t.Helper()
	var ev node.Evidence
	if err := json.Unmarshal(n.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	change(&ev)
	b, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	n.Evidence = b
}

func setFact(n *results.Node, name, value string) {
	for i := range n.Facts {
		if n.Facts[i].Name == name {
			n.Facts[i].Value = value
			return
		}
	}
	n.Facts = append(n.Facts, results.Fact{Name: name, Value: value})
}

func run(n *results.Node, suite, op, mode string) *results.Run {
	for i := range n.Runs {
		if r := &n.Runs[i]; r.Suite == suite && r.Op == op && r.Mode == mode {
			return r
		}
	}
	return nil
}

// Each kind of regression, planted alone in the recorded node, fails its
// own aspect and only it; each harmless change is noted and passes.
func TestEachPlantedChangeLandsInItsAspect(t *testing.T) {
	cases := []struct {
		name    string
		plant   func(t *testing.T, n *results.Node)
		aspect  string
		regress bool
		want    string
	}{
		{"closed modules", func(t *testing.T, n *results.Node) { setFact(n, "driver_flavour", "proprietary") },
			AspectSoftware, true, "kernel modules open -> proprietary"},
		{"driver upgrade", func(t *testing.T, n *results.Node) { setFact(n, "driver", "580.200.01") },
			AspectSoftware, false, "driver 580.159.04 -> 580.200.01"},
		{"NCCL upgrade", func(t *testing.T, n *results.Node) { setFact(n, "nccl", "2.29.1") },
			AspectSoftware, false, "NCCL - -> 2.29.1"},
		{"mechanism lost", func(t *testing.T, n *results.Node) { setFact(n, "mechanism", "none") },
			AspectMechanism, true, "peer-memory mechanism dmabuf -> none"},
		{"BAR1 shrunk", func(t *testing.T, n *results.Node) {
			withEvidence(t, n, func(ev *node.Evidence) { ev.GPUs[1].BAR1.TotalMiB = 256 })
		}, AspectBAR1, true, "-> 256 MiB"},
		{"link narrowed", func(t *testing.T, n *results.Node) {
			withEvidence(t, n, func(ev *node.Evidence) {
				ev.GPUs[0].PCIe.CurWidth = 8
				if ev.GPUs[0].PCIe.Sysfs != nil {
					ev.GPUs[0].PCIe.Sysfs.CurWidth = 8
				}
			})
		}, AspectPCIe, true, "PCIe link x16 -> x8"},
		{"IOMMU translating", func(t *testing.T, n *results.Node) {
			withEvidence(t, n, func(ev *node.Evidence) { ev.IOMMU.Mode = node.IOMMUTranslating })
		}, AspectIOMMU, true, "IOMMU off -> translating"},
		{"spec now failing", func(t *testing.T, n *results.Node) {
			for si := range n.Suites {
				for pi := range n.Suites[si].Specs {
					if sp := &n.Suites[si].Specs[pi]; strings.HasPrefix(sp.Name, "has working peer access") {
						sp.State, sp.Message = results.StateFailed, "GPU 0 -> GPU 1: no peer access"
					}
				}
			}
		}, AspectVerdicts, true, "passed -> failed: GPU 0 -> GPU 1: no peer access"},
		{"direct path left", func(t *testing.T, n *results.Node) {
			r := run(n, "collectives", "sendrecv", "direct")
			r.Transport, r.PathVerdict = "SHM", "fallback"
		}, AspectTransport, true, "collectives sendrecv direct: P2P/CUMEM -> SHM (path direct -> fallback)"},
		{"fallback landed elsewhere", func(t *testing.T, n *results.Node) {
			run(n, "negative", "all_reduce", "p2p-disabled").Transport = "NET/Socket"
		}, AspectTransport, false, "negative all_reduce p2p-disabled: SHM -> NET/Socket"},
		{"P2P disabled in /etc/nccl.conf", func(t *testing.T, n *results.Node) {
			withEvidence(t, n, func(ev *node.Evidence) {
				ev.Overrides = &node.Overrides{Settings: []node.Setting{{Name: "NCCL_P2P_DISABLE", Value: "1", Source: "/etc/nccl.conf", Line: 2}}}
			})
		}, AspectOverrides, true, "NCCL_P2P_DISABLE: unset -> 1 (/etc/nccl.conf line 2): NVLink/PCIe peer-to-peer between this node's GPUs is off"},
		{"a harmless setting added", func(t *testing.T, n *results.Node) {
			withEvidence(t, n, func(ev *node.Evidence) {
				ev.Overrides = &node.Overrides{Settings: []node.Setting{{Name: "NCCL_DEBUG", Value: "WARN", Source: node.EnvironmentSource}}}
			})
		}, AspectOverrides, false, "NCCL_DEBUG: unset -> WARN (environment)"},
		{"bandwidth inside its band", func(t *testing.T, n *results.Node) {
			run(n, "collectives", "all_gather", "direct").BusBW *= 0.92
		}, AspectBandwidth, false, ""}, // moved within its tolerance: not news,
		{"bandwidth below its band", func(t *testing.T, n *results.Node) {
			run(n, "collectives", "all_gather", "direct").BusBW *= 0.85
		}, AspectBandwidth, true, "baseline h200x2-nv18 allows 10.0%"},
		{"a forced fallback slower", func(t *testing.T, n *results.Node) {
			run(n, "negative", "all_reduce", "p2p-shm-disabled").BusBW *= 0.5
		}, AspectBandwidth, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, after := load(t), load(t)
			c.plant(t, &after.Nodes[0])
			res := Compare(before, after, Options{})
			specs := res.Nodes[0].Suites[0].Specs
			for _, sp := range specs {
				if sp.Name != c.aspect {
					if sp.State != results.StatePassed {
						t.Errorf("%s: %s also %s: %s", c.name, sp.Name, sp.State, sp.Message)
					}
					continue
				}
				text := sp.Message + strings.Join(sp.Notes, "\n")
				if got := sp.State == results.StateFailed; got != c.regress {
					t.Errorf("%s: %s %s, regression %v wanted: %s", c.name, sp.Name, sp.State, c.regress, text)
				}
				if c.want == "" && len(sp.Notes) == 1 && sp.Notes[0] == "unchanged" {
					continue
				}
				if c.want == "" || !strings.Contains(text, c.want) {
					t.Errorf("%s: %s says %q, want %q", c.name, sp.Name, text, c.want)
				}
			}
			if code := res.ExitCode(); (code == results.ExitFailed) != c.regress {
				t.Errorf("%s: exit %d", c.name, code)
			}
		})
	}
}

func TestNodesOfOneRunOnlyAreNotedNotFailed(t *testing.T) {
	before, after := load(t), load(t)
	extra := after.Nodes[0]
	extra.Name = "node9"
	after.Nodes = append(after.Nodes, extra)
	res := Compare(before, after, Options{})
	if code := res.ExitCode(); code != results.ExitPassed {
		t.Fatalf("a node new in the run after: exit %d", code)
	}
	if sp := res.Nodes[1].Suites[0].Specs[0]; sp.State != results.StateSkipped || !strings.Contains(sp.Message, "not in the run before") {
		t.Errorf("node9: %s %q", sp.State, sp.Message)
	}
}

func TestAmendComparesAMissingNodeAsARegression(t *testing.T) {
	before := load(t)
	amend := Amend(before, Options{}, false)
	n := amend(results.Node{Name: "vm", Status: results.NodeMissing, Reason: "node vm never reported (no results.json)"}, nil)
	s := n.Suites[len(n.Suites)-1]
	var found bool
	for _, sp := range s.Specs {
		if sp.Name == AspectVerdicts {
			found = true
			if sp.State != results.StateFailed || !strings.Contains(sp.Message, "node evaluated -> missing: node vm never reported") {
				t.Errorf("%s: %s %q", sp.Name, sp.State, sp.Message)
			}
		}
	}
	if !found || s.Name != Suite {
		t.Errorf("amend added %+v", s)
	}
}

func TestWithoutABaselineBandTheDefaultToleranceJudges(t *testing.T) {
	before, after := load(t), load(t)
	r := run(&after.Nodes[0], "collectives", "reduce_scatter", "direct")
	if r.Baseline != nil {
		t.Fatalf("%s: reduce_scatter has a baseline band now; pick a run without one", recorded)
	}
	r.BusBW *= 0.94
	sp := Compare(before, after, Options{}).Nodes[0].Suites[0].Specs
	for _, s := range sp {
		if s.Name == AspectBandwidth && (s.State != results.StateFailed || !strings.Contains(s.Message, "gdrcheck's default allows 5.0%")) {
			t.Errorf("a 6 %% drop without a band: %s %q", s.State, s.Message)
		}
	}
}

// The real one-H200 node, twice (device call D): its sendrecv is a GPU's
// copy to itself, 874276 then 944177 "GB/s", and its reductions print 0.
// Neither is bus bandwidth to compare.
func TestOneRankRunsHaveNoBandwidthToCompare(t *testing.T) {
	one := func(busbw float64) *results.Results {
		return &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: "vm", Status: results.NodeEvaluated,
			Runs: []results.Run{{Suite: "collectives", Op: "sendrecv", Mode: "direct", Ranks: 1, BusBW: busbw}, {Suite: "collectives", Op: "all_reduce", Mode: "direct", Ranks: 1}}}}}
	}
	for _, sp := range Compare(one(874276), one(500000), Options{}).Nodes[0].Suites[0].Specs {
		if sp.Name == AspectBandwidth && (sp.State != results.StatePassed || len(sp.Notes) != 1 || sp.Notes[0] != "unchanged") {
			t.Errorf("%s: %s %q %v", sp.Name, sp.State, sp.Message, sp.Notes)
		}
	}
}

// gdrcheck compare of a job whose node never reported the second time:
// the node is in the run after, missing, and that is a regression.
func TestCompareNamesANodeMissingInTheRunAfter(t *testing.T) {
	before, after := load(t), load(t)
	after.Nodes[0] = results.Node{Name: "vm", Status: results.NodeMissing, Reason: "node vm never reported (no results.json)"}
	res := Compare(before, after, Options{})
	if code := res.ExitCode(); code != results.ExitFailed {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, sp := range res.Nodes[0].Suites[0].Specs {
		if sp.Name == AspectVerdicts && !strings.Contains(sp.Message, "node evaluated -> missing") {
			t.Errorf("%s: %s %q", sp.Name, sp.State, sp.Message)
		}
	}
}

// A spec that passed before and is gone after proved nothing the second
// time: it is a regression, named, not "no change".
func TestASpecThatPassedAndIsGoneIsARegression(t *testing.T) {
	before, after := load(t), load(t)
	var gone string
	for i, s := range after.Nodes[0].Suites {
		for j, sp := range s.Specs {
			if gone == "" && sp.State == results.StatePassed {
				gone = s.Name + " / " + sp.Name
				after.Nodes[0].Suites[i].Specs = append(s.Specs[:j:j], s.Specs[j+1:]...)
			}
		}
	}
	if gone == "" {
		t.Fatalf("%s: no passed spec", recorded)
	}
	res := Compare(before, after, Options{})
	if code := res.ExitCode(); code != results.ExitFailed {
		t.Fatalf("%s removed: exit %d, want 1", gone, code)
	}
	for _, sp := range res.Nodes[0].Suites[0].Specs {
		if sp.Name == AspectVerdicts && (sp.State != results.StateFailed || sp.Message != gone+": passed -> absent: the run after has no such spec") {
			t.Errorf("%s: %s %q", sp.Name, sp.State, sp.Message)
		}
	}
	if res := Compare(before, load(t), Options{}); res.ExitCode() != results.ExitPassed {
		t.Errorf("the same run twice: exit %d", res.ExitCode())
	}
}

// issue 22: a 4-node run whose traffic between the nodes lost GDRDMA is
// named by the classes between the nodes, not by the P2P inside each.
func TestMultiNodeTransportsAreNamedByTheirNetworkClasses(t *testing.T) {
	job := func(net string, verdict string) *results.Results {
		nodes := []string{"node1", "node2", "node3", "node4"}
		return &results.Results{Schema: results.Schema,
			Nodes: []results.Node{{Name: results.AllocationNode, Status: results.NodeEvaluated}},
			Runs: []results.Run{{Suite: "scale", Op: "all_reduce", Mode: "direct", Nodes: nodes, Ranks: 32,
				Transport: "P2P/direct", Transports: map[string]int{"P2P/direct": 192, net: 32}, PathVerdict: verdict}}}
	}
	var got []string
	for _, sp := range Compare(job("NET/IB/GDRDMA", results.PathDirect), job("NET/IB", results.PathFallback), Options{}).Nodes[0].Suites[0].Specs {
		if sp.Name == AspectTransport {
			got = append(got, sp.State, sp.Message)
		}
	}
	want := "scale all_reduce direct across 4 node(s): NET/IB/GDRDMA -> NET/IB (path direct -> fallback)"
	if len(got) != 2 || got[0] != results.StateFailed || !strings.Contains(got[1], want) {
		t.Errorf("transport aspect: %q, want failed with %q", got, want)
	}
}

// The mpi suite's runs pair by scope and mode: its direct osu_bw losing
// half is a regression, a forced fallback losing half is not.
func TestMPIRunsCompareLikeTheNCCLOnes(t *testing.T) {
	for _, c := range []struct {
		mode    string
		regress bool
	}{{"direct", true}, {"no-cuda-ipc", false}} {
		before, after := load(t), load(t)
		for i, res := range []*results.Results{before, after} {
			bw := 347.16
			if i == 1 {
				bw /= 2
			}
			res.Nodes[0].Runs = append(res.Nodes[0].Runs, results.Run{Suite: "mpi", Tool: "osu_bw", Op: "bw intra-node", Mode: c.mode, Ranks: 2, BusBW: bw, Nodes: res.Nodes[0].Runs[0].Nodes})
		}
		res := Compare(before, after, Options{})
		for _, sp := range res.Nodes[0].Suites[0].Specs {
			if sp.Name == AspectBandwidth && (sp.State == results.StateFailed) != c.regress {
				t.Errorf("%s: %s %s, regression %v wanted: %s %v", c.mode, sp.Name, sp.State, c.regress, sp.Message, sp.Notes)
			}
		}
	}
}
