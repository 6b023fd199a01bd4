package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

const pix = "../../fixtures/nodes/h100x8-nvswitch-cx7-pix.ttar"

// fresh is a deep result that still speaks for the node.
var fresh = DeepState{Found: true, Exit: results.ExitPassed, At: time.Now()}

func fixture(name string) string { return filepath.Join("../../fixtures/nodes", name+".ttar") }

// TestJudgeOnEveryFixtureNode: the recorded nodes, judged as `gdrcheck
// health --host-root` reads them (no probe), with a fresh deep result.
func TestJudgeOnEveryFixtureNode(t *testing.T) {
	for _, c := range []struct {
		node, state string
		action      results.Action
		checks      []string // the checks with findings, in order
	}{
		{"h100x8-nvswitch-cx7-pix", StateHealthy, results.ActionNone, nil},
		{"h100x8-proprietary-peermem", StateHealthy, results.ActionNone, nil},
		{"l40s8-pcie-cx7-pxb", StateHealthy, results.ActionNone, nil},
		{"gh200x4-c2c-cx7", StateHealthy, results.ActionNone, nil},
		{"h100x8-gpu-downtrained", StateUnhealthy, results.ActionResetGPU, []string{CheckGPULink}},
		{"h100x8-proprietary-no-peermem", StateUnhealthy, results.ActionReloadDriver, []string{CheckPeerMemory}},
		{"h100x8-proprietary-peermem-unregistered", StateUnhealthy, results.ActionReloadDriver, []string{CheckPeerMemory}},
		{"h100x8-nccl221-peermem-only", StateUnhealthy, results.ActionReloadDriver, []string{CheckPeerMemory, CheckKnownBad}},
		{"h100x8-nvml-version-mismatch", StateUnevaluable, results.ActionRerun, []string{CheckEvaluate}},
		{"cpu-no-gpu", StateUnevaluable, results.ActionRerun, []string{CheckEvaluate}},
	} {
		t.Run(c.node, func(t *testing.T) {
			ev := nodetest.Collected(t, nodetest.Extracted(t, fixture(c.node)))
			v := Judge(Input{Node: "n1", Evidence: ev, Deep: fresh})
			if v.State != c.state || v.Action != c.action {
				t.Fatalf("verdict %s action=%s, want %s action=%s: %s", v.State, v.Action, c.state, c.action, v.Summary())
			}
			var got []string
			for _, f := range v.Findings {
				got = append(got, f.Check)
				if !f.Action.Valid() || !f.Scope.Valid() || f.Entity == "" || f.Cause == "" {
					t.Errorf("finding without action, scope, entity or cause: %+v", f)
				}
			}
			if strings.Join(got, ",") != strings.Join(c.checks, ",") {
				t.Errorf("checks %v, want %v: %s", got, c.checks, v.Summary())
			}
		})
	}
}

func TestGPULinkNamesTheGPUAndItsLink(t *testing.T) {
	ev := nodetest.Collected(t, nodetest.Extracted(t, fixture("h100x8-gpu-downtrained")))
	f := Judge(Input{Node: "n1", Evidence: ev, Deep: fresh}).Findings[0]
	if f.Scope != results.ScopeLink || f.Entity != "0000:39:00.0" || !strings.Contains(f.Cause, "x8") || !strings.Contains(f.Cause, "x16") {
		t.Errorf("finding %+v: want the link of 0000:39:00.0, x8 of x16", f)
	}
}

// railNIC is the first GPU's preferred NIC.
func railNIC(t *testing.T, ev *node.Evidence) node.NIC {
	t.Helper()
	p, ok := ev.PreferredPath(ev.GPUs[0].BusID)
	if !ok {
		t.Fatal("no preferred path for GPU 0")
	}
	n, _ := ev.NIC(p.NIC)
	return n
}

func TestRailPortDownAndSlowNeedACable(t *testing.T) {
	root := nodetest.Extracted(t, pix)
	nic := railNIC(t, nodetest.Collected(t, root))
	if err := nodetest.SetPortState(root, nic.Name, 1, "1: DOWN", "3: Disabled"); err != nil {
		t.Fatal(err)
	}
	v := Judge(Input{Node: "n1", Evidence: nodetest.Collected(t, root), Deep: fresh})
	w, ok := v.Worst()
	if !ok || w.Check != CheckRailPort || w.Action != results.ActionCheckCable || w.Entity != nic.Name+"/1" {
		t.Fatalf("worst %+v, want rail-port CHECK_CABLE on %s/1: %s", w, nic.Name, v.Summary())
	}
	if !strings.Contains(w.Cause, "DOWN") {
		t.Errorf("cause %q does not say the port is down", w.Cause)
	}
}

func TestNICLinkBelowItsMaximum(t *testing.T) {
	root := nodetest.Extracted(t, pix)
	nic := railNIC(t, nodetest.Collected(t, root))
	p := filepath.Join(root, "sys/bus/pci/devices", nic.BusID, "current_link_width")
	if err := os.WriteFile(p, []byte("8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := Judge(Input{Node: "n1", Evidence: nodetest.Collected(t, root), Deep: fresh})
	w, ok := v.Worst()
	if !ok || w.Check != CheckNICLink || w.Entity != nic.BusID || w.Action != results.ActionReboot {
		t.Fatalf("worst %+v, want nic-pcie REBOOT on %s: %s", w, nic.BusID, v.Summary())
	}
}

// TestCountersThatMovedSinceTheLastRun: a link counter that grew between
// two readings is a finding on its port; traffic-driven counters and a
// first run (nothing to compare) are not.
func TestCountersThatMovedSinceTheLastRun(t *testing.T) {
	root := nodetest.Extracted(t, pix)
	ev := nodetest.Collected(t, root)
	nic := railNIC(t, ev)
	read := func() *node.FabricSample {
		h, err := node.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		s, err := h.FabricCounters()
		if err != nil {
			t.Fatal(err)
		}
		return &s
	}
	before := read()
	set := func(name string, v uint64) {
		if err := nodetest.SetCounter(root, nic.Name, 1, name, v); err != nil {
			t.Fatal(err)
		}
	}
	set("symbol_error", 12)
	set("port_xmit_discards", 99) // congestion, moved by jobs
	after := read()
	if fs := counters(Input{Evidence: ev, Counters: after}); len(fs) != 0 {
		t.Errorf("a first run judged counters: %v", fs)
	}
	fs := counters(Input{Evidence: ev, Counters: after, Prev: &Previous{Counters: before}})
	if len(fs) != 1 || fs[0].Entity != nic.Name+"/1" || fs[0].Action != results.ActionCheckCable || !strings.Contains(fs[0].Cause, "symbol_error +12") {
		t.Fatalf("findings %v, want one symbol_error +12 on %s/1", fs, nic.Name)
	}
	if strings.Contains(fs[0].Cause, "discards") {
		t.Errorf("cause %q counts traffic-driven discards", fs[0].Cause)
	}
	if fs := counters(Input{Evidence: ev, Counters: after, Prev: &Previous{Counters: after}}); len(fs) != 0 {
		t.Errorf("unchanged counters judged: %v", fs)
	}
}

// TestXidsSinceTheLastRun: an Xid in the kernel log is a finding once;
// the next run, which has seen it, does not report it again.
func TestXidsSinceTheLastRun(t *testing.T) {
	root := nodetest.Extracted(t, pix)
	log := "[  100.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.\n" +
		"[  200.000000] NVRM: Xid (PCI:0000:2a:00): 74, pid=1, NVLink: fatal error detected on link 3\n"
	if err := os.WriteFile(filepath.Join(root, "gdrcheck/kmsg.txt"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := nodetest.Collected(t, root)
	fs := xids(Input{Evidence: ev})
	if len(fs) != 2 {
		t.Fatalf("findings %v, want the two Xids", fs)
	}
	byEntity := map[string]results.Action{}
	for _, f := range fs {
		byEntity[f.Entity] = f.Action
	}
	if byEntity["0000:18:00"] != results.ActionReboot || byEntity["0000:2a:00"] != results.ActionResetGPU {
		t.Errorf("actions %v: want 79 REBOOT, 74 RESET_GPU", byEntity)
	}
	if fs := xids(Input{Evidence: ev, Prev: &Previous{Xids: ev.Kernel.Xids}}); len(fs) != 0 {
		t.Errorf("Xids the last run saw reported again: %v", fs)
	}
}

func TestDeepResultStates(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      DeepState
		state  string
		action results.Action
		cause  string
	}{
		{"fresh", fresh, "", "", ""},
		{"absent", DeepState{}, StateStale, results.ActionRerun, "deep result absent"},
		{"stale", DeepState{Found: true, Exit: 0, Stale: "since the last deep run: kernel 6.8.0-60 -> 6.8.0-62"}, StateStale, results.ActionRerun, "deep result stale: since the last deep run: kernel"},
		{"failed", DeepState{Found: true, Exit: results.ExitFailed, Action: results.ActionReloadDriver, Check: "kernel", Cause: "nvidia_peermem unregistered"}, StateUnhealthy, results.ActionReloadDriver, "deep run failed: kernel: nvidia_peermem unregistered"},
		{"failed without action", DeepState{Found: true, Exit: results.ExitFailed}, StateUnhealthy, results.ActionInvestigate, "deep run failed"},
		{"stale failure", DeepState{Found: true, Exit: results.ExitFailed, Stale: "boot id changed"}, StateStale, results.ActionRerun, "deep result stale"},
		{"unreadable", DeepState{Err: "reading deep.json: bad"}, StateStale, results.ActionRerun, "deep result unreadable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := deep("n1", c.d)
			if c.state == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %v for a fresh proof", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].State != c.state || fs[0].Action != c.action || !strings.HasPrefix(fs[0].Cause, c.cause) {
				t.Fatalf("findings %+v, want %s %s %q", fs, c.state, c.action, c.cause)
			}
		})
	}
}

// TestVerdictFolding: unevaluable outranks unhealthy, which outranks
// stale; the node's action is the most disruptive; Worst names the most
// disruptive unhealthy finding only.
func TestVerdictFolding(t *testing.T) {
	stale := Finding{Check: CheckDeep, State: StateStale, Action: results.ActionRerun}
	cable := Finding{Check: CheckRailPort, State: StateUnhealthy, Action: results.ActionCheckCable}
	reset := Finding{Check: CheckGPULink, State: StateUnhealthy, Action: results.ActionResetGPU}
	v := verdictOf([]Finding{stale, reset, cable})
	if v.State != StateUnhealthy || v.Action != results.ActionCheckCable {
		t.Errorf("verdict %s %s, want unhealthy CHECK_CABLE", v.State, v.Action)
	}
	if w, _ := v.Worst(); w.Check != CheckRailPort {
		t.Errorf("worst %s, want rail-port", w.Check)
	}
	if _, ok := verdictOf([]Finding{stale}).Worst(); ok {
		t.Error("a stale deep result is a drain's worst finding")
	}
	if v := verdictOf([]Finding{cable, evaluate("n1", "deadline")}); v.State != StateUnevaluable {
		t.Errorf("state %s, want unevaluable over unhealthy", v.State)
	}
	if v := verdictOf(nil); v.State != StateHealthy || v.Action != results.ActionNone {
		t.Errorf("no findings: %s %s", v.State, v.Action)
	}
}

// A gate's finding carries the failed spec's own action, scope and entity
// (the prolog's drain reason ends in them); a spec without one is
// INVESTIGATE on the node, as a node's own action reads it.
func TestGateFindingsKeepEachSpecsAction(t *testing.T) {
	n := results.Node{Name: "gpu07", Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "kernel", Specs: []results.Spec{
		{Name: "has a working GPUDirect peer-memory mechanism", State: results.StateFailed, Message: "no GPUDirect peer-memory mechanism works\nmore",
			Action: results.ActionReloadDriver, Scope: results.ScopeNode, Entity: "gpu07"},
		{Name: "registers GPU memory with every rail NIC", State: results.StateFailed, Message: "GPU 0000:18:00.0 -> mlx5_0: registration failed",
			Action: results.ActionResetGPU, Scope: results.ScopeGPU, Entity: "0000:18:00.0"},
		{Name: "an older spec", State: results.StateFailed, Message: "written before actions"},
		{Name: "passes", State: results.StatePassed},
	}}}}
	v := PrologVerdict(n)
	want := []Finding{
		{Check: CheckProlog, State: StateUnhealthy, Cause: "kernel: no GPUDirect peer-memory mechanism works", Action: results.ActionReloadDriver, Scope: results.ScopeNode, Entity: "gpu07"},
		{Check: CheckProlog, State: StateUnhealthy, Cause: "kernel: GPU 0000:18:00.0 -> mlx5_0: registration failed", Action: results.ActionResetGPU, Scope: results.ScopeGPU, Entity: "0000:18:00.0"},
		{Check: CheckProlog, State: StateUnhealthy, Cause: "kernel: written before actions", Action: results.ActionInvestigate, Scope: results.ScopeNode, Entity: "gpu07"},
	}
	if len(v.Findings) != len(want) {
		t.Fatalf("%d findings, want %d: %+v", len(v.Findings), len(want), v.Findings)
	}
	for i := range want {
		if v.Findings[i] != want[i] {
			t.Errorf("finding %d: %+v, want %+v", i, v.Findings[i], want[i])
		}
	}
	if v.State != StateUnhealthy || v.Action != results.ActionInvestigate {
		t.Errorf("verdict %s %s, want unhealthy INVESTIGATE (the most disruptive of the three)", v.State, v.Action)
	}
	if d := DeepVerdict(n); d.Findings[0].Check != CheckDeep || d.Findings[0].Action != results.ActionReloadDriver {
		t.Errorf("deep verdict's first finding %+v, want the deep check with RELOAD_DRIVER", d.Findings[0])
	}
}
