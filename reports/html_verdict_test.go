package reports

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

// verdictJob is a 4-node job as make run-fault leaves it with one node
// lost: gpu1 proves GPUDirect RDMA, gpu2's proof fails (host-staged
// NET/IB when forced onto the network, the fallback still detected),
// gpu3 ran only skipped specs, gpu4 never reported.
func verdictJob() *results.Results {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	spec := func(name, state, msg string) results.Spec {
		return results.Spec{Name: name, State: state, Message: msg}
	}
	ratio := func(mode string) results.Metric {
		return results.Metric{Name: "ratio_to_direct", Subject: mode, Value: 0.1}
	}
	node := func(name, mech, through, proof, proofMsg string) results.Node {
		detect := spec("detects the fallback forced by NCCL_P2P_DISABLE and NCCL_SHM_DISABLE (network)", results.StatePassed, "")
		detect.Metrics = []results.Metric{ratio("p2p-shm-disabled")}
		reg := results.StatePassed
		if proof != results.StatePassed {
			reg = results.StateFailed
		}
		pts := []results.Point{{Size: 1 << 20, BusBW: 100}, {Size: 1 << 30, BusBW: 480}}
		return results.Node{Name: name, Status: results.NodeEvaluated,
			Facts: []results.Fact{{Name: "mechanism", Value: mech}, {Name: "rdma_nics", Value: "8"}},
			Suites: []results.Suite{
				{Name: "kernel", Specs: []results.Spec{spec(registerSpec, reg, "")}},
				{Name: "negative", Specs: []results.Spec{detect, spec(gdrProofSpec, proof, proofMsg)}},
			},
			Runs: []results.Run{
				{Suite: "collectives", Tool: "all_reduce_perf", Op: "all_reduce", Mode: "direct", Transport: "P2P/direct", BusBW: 480, Points: pts,
					Baseline: &results.Band{Profile: "h100x8-ndr", Metric: "nccl.all_reduce.busbw", Expected: 460, Low: 460, High: 460, Direction: results.Higher}},
				{Suite: "negative", Tool: "all_reduce_perf", Op: "all_reduce", Mode: "p2p-shm-disabled", Transport: through, BusBW: 46, Points: pts[:1]},
			},
		}
	}
	skipped := results.Node{Name: "gpu3", Status: results.NodeEvaluated, Facts: []results.Fact{{Name: "rdma_nics", Value: "8"}},
		Suites: []results.Suite{{Name: "negative", Specs: []results.Spec{spec(gdrProofSpec, results.StateSkipped, "p2p-shm-disabled not run: needs RDMA NICs")}}}}
	return &results.Results{Schema: results.Schema, Started: t0, Finished: t0.Add(time.Minute), Nodes: []results.Node{
		node("gpu1", "dmabuf", "NET/IB/GDRDMA", results.StatePassed, ""),
		node("gpu2", "none", "NET/IB", results.StateFailed, "with P2P and SHM disabled NCCL did not reach GPU memory through the NICs: 32 of 32 connections used NET/IB without GDRDMA"),
		skipped,
		{Name: "gpu4", Status: results.NodeMissing, Reason: "node gpu4 never reported (no results.json)"},
	}}
}

// section is the node's <section> of the page.
func section(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<section class="card node" id="` + id + `">.*?</section>`).FindString(page)
	if m == "" {
		t.Fatalf("no section %s", id)
	}
	return m
}

func TestHTMLBadgesReadTheNodesStatusInOneWord(t *testing.T) {
	page := renderHTML(t, verdictJob())
	for id, want := range map[string]string{
		"node-0": `<span class="badge good" title="status: evaluated">PASS</span>`,
		"node-1": `<span class="badge bad" title="status: evaluated">FAIL</span>`,
		"node-2": `<span class="badge skip" title="status: evaluated">SKIP</span>`,
		"node-3": `<span class="badge bad" title="status: missing">MISSING</span>`,
	} {
		h2 := regexp.MustCompile(`<h2>.*</h2>`).FindString(section(t, page, id))
		if !strings.Contains(h2, want) {
			t.Errorf("%s heading %q, want the badge %s", id, h2, want)
		}
		if strings.Contains(h2, ">evaluated<") || strings.Contains(h2, ">missing<") {
			t.Errorf("%s badge still names the raw status: %s", id, h2)
		}
	}
	r := verdictJob()
	r.Nodes[0].Status = results.NodeUnevaluable
	if h2 := regexp.MustCompile(`<h2>.*</h2>`).FindString(section(t, renderHTML(t, r), "node-0")); !strings.Contains(h2, ">UNEVALUABLE</span>") {
		t.Errorf("unevaluable node's heading %q", h2)
	}
}

func TestHTMLNodeIndexMarksFailingAndMissingNodes(t *testing.T) {
	page := renderHTML(t, verdictJob())
	nav := regexp.MustCompile(`<nav class="nodes">.*</nav>`).FindString(page)
	for _, want := range []string{
		`<a class="good" href="#node-0">gpu1</a>`,
		`<a class="bad" href="#node-1">gpu2 <span class="mark">FAIL</span></a>`,
		`<a class="skip" href="#node-2">gpu3 <span class="mark">SKIP</span></a>`,
		`<a class="bad" href="#node-3">gpu4 <span class="mark">MISSING</span></a>`,
	} {
		if !strings.Contains(nav, want) {
			t.Errorf("index %q lacks %s", nav, want)
		}
	}
}

func TestHTMLSaysPerNodeWhetherGPUDirectRDMAWasProven(t *testing.T) {
	page := renderHTML(t, verdictJob())
	gdr := func(id string) string {
		s := section(t, page, id)
		m := regexp.MustCompile(`(?s)<div class="gdr">\s*<h3>GPUDirect RDMA</h3>.*?</div>`).FindString(s)
		if m == "" {
			t.Fatalf("%s has no GPUDirect RDMA section:\n%s", id, s)
		}
		// It comes before the facts and suites: the first thing said.
		if strings.Index(s, m) > strings.Index(s, `<div class="cols">`) {
			t.Errorf("%s: GPUDirect RDMA comes after the facts", id)
		}
		return m
	}
	for id, want := range map[string][]string{
		"node-0": {"<td>dmabuf</td>", `<td class="good">yes</td>`, "<td>NET/IB/GDRDMA</td>", `<td class="verdict good">proven</td>`},
		"node-1": {"<td>none</td>", `<td class="bad">NO</td>`, "<td>NET/IB</td>", `<td class="verdict bad">NOT PROVEN: with P2P and SHM disabled NCCL did not reach GPU memory through the NICs`},
		"node-2": {`<td class="verdict skip">NOT PROVEN: skipped: p2p-shm-disabled not run: needs RDMA NICs</td>`},
		"node-3": {`<td class="verdict bad">NOT PROVEN: the node never reported</td>`},
	} {
		g := gdr(id)
		for _, w := range want {
			if !strings.Contains(g, w) {
				t.Errorf("%s GPUDirect RDMA section lacks %s:\n%s", id, w, g)
			}
		}
	}
	// The console's table is among the page's tables too.
	if !strings.Contains(page, "<caption>GPUDirect RDMA</caption>") {
		t.Error("the tables lack GPUDirect RDMA")
	}
	// A node without RDMA NICs has nothing to prove and no section.
	r := verdictJob()
	r.Nodes[2].Suites[0].Specs[0].Message = "no RDMA NICs on this node: there is no GPUDirect RDMA path to prove"
	if s := section(t, renderHTML(t, r), "node-2"); strings.Contains(s, `<div class="gdr">`) {
		t.Errorf("node without NICs has a GPUDirect RDMA section:\n%s", s)
	}
}

func TestHTMLFallbackChartShowsDetectionAndGDRProofApart(t *testing.T) {
	page := renderHTML(t, verdictJob())
	bar := func(id string) string {
		m := regexp.MustCompile(`(?s)<g class="bar" data-mode="p2p-shm-disabled">.*?</g>`).FindString(section(t, page, id))
		if m == "" {
			t.Fatalf("%s has no p2p-shm-disabled bar", id)
		}
		return m
	}
	ok, bad := bar("node-0"), bar("node-1")
	for _, b := range []string{ok, bad} {
		if !strings.Contains(b, `<text class="sub detect" `) || !strings.Contains(b, `<tspan class="good">fallback detected</tspan>`) {
			t.Errorf("bar lacks the detection verdict:\n%s", b)
		}
	}
	if !strings.Contains(ok, `<text class="sub proof" `) || !strings.Contains(ok, `<tspan class="good">GDRDMA proven</tspan>`) {
		t.Errorf("healthy node's bar lacks the proof:\n%s", ok)
	}
	// The node whose proof failed on this very mode says so, in red,
	// beside the detection that still passed.
	if !strings.Contains(bad, `<tspan class="bad">GDR NOT PROVEN</tspan>`) || strings.Contains(bad, "GDRDMA proven") {
		t.Errorf("failing node's bar does not say its GDR proof failed:\n%s", bad)
	}
}

func TestHTMLDrawsAOneSidedBaselineAsABound(t *testing.T) {
	page := renderHTML(t, verdictJob())
	s := section(t, page, "node-0")
	if !strings.Contains(s, `<g class="bound">`) || !strings.Contains(s, `<text class="boundlabel" `) || !strings.Contains(s, ">≥ 460</text>") {
		t.Errorf("one-sided baseline is not drawn as a bound:\n%s", s)
	}
	if !strings.Contains(s, "baseline h100x8-ndr for direct at 1 GiB: ≥ 460 GB/s, a bound") {
		t.Error("caption does not state the bound")
	}
	for _, bad := range []string{`<rect class="band" `, "shaded 460.00 to 460.00", "band 460.00 to 460.00"} {
		if strings.Contains(s, bad) {
			t.Errorf("one-sided baseline still drawn as a zero-width band: %s", bad)
		}
	}
	// A two-sided band stays a band.
	r := verdictJob()
	r.Nodes[0].Runs[0].Baseline = &results.Band{Profile: "p", Expected: 460, Low: 414, High: 506}
	if s := section(t, renderHTML(t, r), "node-0"); !strings.Contains(s, `<rect class="band" `) || !strings.Contains(s, "shaded 414.00 to 506.00") {
		t.Error("two-sided band not drawn as a band")
	}
}

func TestOneSidedBandIsExportedAsABound(t *testing.T) {
	for _, c := range []struct {
		band results.Band
		want string
	}{
		{results.Band{Profile: "p", Metric: "m", Expected: 460, Low: 460, High: 460, Direction: results.Higher}, `{"profile":"p","metric":"m","expected":460,"at_least":460,"direction":"higher"}`},
		{results.Band{Profile: "p", Metric: "m", Expected: 0.5, Low: 0.5, High: 0.5, Direction: results.Lower}, `{"profile":"p","metric":"m","expected":0.5,"at_most":0.5,"direction":"lower"}`},
		{results.Band{Profile: "p", Metric: "m", Expected: 460, Low: 414, High: 506}, `{"profile":"p","metric":"m","expected":460,"low":414,"high":506}`},
	} {
		b, err := json.Marshal(c.band)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%+v exported as %s, want %s", c.band, b, c.want)
		}
		var back results.Band
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if c.band.Direction == "" && back.Direction == "" {
			back.Direction = c.band.Direction
		}
		if back != c.band {
			t.Errorf("%s read back as %+v, want %+v", b, back, c.band)
		}
	}
	// results.json written before this change: low = expected = high.
	var old results.Band
	if err := json.Unmarshal([]byte(`{"profile":"p","metric":"m","expected":460,"low":460,"high":460}`), &old); err != nil || !old.OneSided() || old.Bound() != "≥ 460" {
		t.Errorf("old form read as %+v (%v)", old, err)
	}
	if err := json.Unmarshal([]byte(`{"expected":1,"low":1}`), &old); err == nil {
		t.Error("a band with low and no high was taken")
	}
}
