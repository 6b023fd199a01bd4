package node_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

func probedFixture(t *testing.T, name string) *node.Evidence {
	t.Helper()
	return nodetest.ProbedRoot(t, nodetest.Extracted(t, "../../fixtures/nodes/"+name+".ttar"))
}

func TestSelectGPUsReadsSlurmsHostIndicesAndCUDAsUUIDs(t *testing.T) {
	ev := probedFixture(t, "h100x8-nvswitch-cx7-pix")
	byMinor := map[int]string{}
	for _, g := range ev.GPUs {
		if g.Minor == nil {
			t.Fatalf("GPU %s has no minor number in the recording", g.BusID)
		}
		byMinor[*g.Minor] = g.BusID
	}
	got, err := ev.SelectGPUs("3, 0,3")
	if err != nil || !slices.Equal(got, []string{byMinor[3], byMinor[0]}) {
		t.Errorf("SelectGPUs(\"3, 0,3\") = %q, %v; want /dev/nvidia3's and /dev/nvidia0's, once each", got, err)
	}
	uuid := ev.GPUs[5].UUID
	if got, err := ev.SelectGPUs(uuid); err != nil || !slices.Equal(got, []string{ev.GPUs[5].BusID}) {
		t.Errorf("SelectGPUs(%s) = %q, %v; want GPU %s", uuid, got, err, ev.GPUs[5].BusID)
	}
	if _, err := ev.SelectGPUs("GPU-"); err == nil || !strings.Contains(err.Error(), "the start of 8 GPUs' UUIDs") {
		t.Errorf("SelectGPUs(GPU-) = %v, want a prefix of every UUID refused", err)
	}
	for list, want := range map[string]string{
		"9":          "GPU 9: this node has no /dev/nvidia9 (8 GPUs)",
		"GPU-nope":   `GPU "GPU-nope": no GPU of this node has that UUID`,
		"MIG-1234":   "a MIG instance",
		"zero":       "want a host index",
		" , ":        "names no GPU",
		"0,-1":       "want a host index",
		"1,GPU-nope": "no GPU of this node has that UUID",
	} {
		if _, err := ev.SelectGPUs(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SelectGPUs(%q) = %v, want an error with %q", list, err, want)
		}
	}
}

func TestScopeKeepsTheJobsGPUsTheirRailNICsAndTheirRegistrations(t *testing.T) {
	ev := probedFixture(t, "h100x8-nvswitch-cx7-pix")
	ids, err := ev.SelectGPUs("1,6")
	if err != nil {
		t.Fatal(err)
	}
	rails := ev.Rails()
	ev.Scope(ids)
	var gpus, nics []string
	for _, g := range ev.GPUs {
		gpus = append(gpus, g.BusID)
	}
	for _, n := range ev.NICs {
		nics = append(nics, n.Name)
	}
	wantNICs := append(slices.Clone(rails[ids[0]]), rails[ids[1]]...)
	slices.Sort(wantNICs)
	slices.Sort(nics)
	if !slices.Equal(gpus, ids) || !slices.Equal(nics, wantNICs) || len(wantNICs) != 2 {
		t.Fatalf("scoped to GPUs %q and NICs %q, want %q and their rails %q", gpus, nics, ids, wantNICs)
	}
	if len(ev.Verbs.Registrations) == 0 {
		t.Fatal("no registrations left")
	}
	for _, r := range ev.Verbs.Registrations {
		if !slices.Contains(ids, r.GPU) || !slices.Contains(nics, r.NIC) {
			t.Errorf("registration %s -> %s outlived the scope", r.GPU, r.NIC)
		}
	}
	for _, p := range ev.Paths {
		if !slices.Contains(ids, p.GPU) || !slices.Contains(nics, p.NIC) {
			t.Errorf("path %s -> %s outlived the scope", p.GPU, p.NIC)
		}
	}
	for _, p := range ev.GPUPairs {
		if !slices.Contains(ids, p.A) || !slices.Contains(ids, p.B) {
			t.Errorf("GPU pair %s - %s outlived the scope", p.A, p.B)
		}
	}
	for _, g := range ev.CUDA.GPUs {
		if !slices.Contains(ids, g.BusID) {
			t.Errorf("CUDA's answer for %s outlived the scope", g.BusID)
		}
	}
}
