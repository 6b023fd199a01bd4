// Package compare judges an upgrade: the same nodes before and after it,
// aspect by aspect (software, peer-memory mechanism, BAR1, PCIe links,
// IOMMU, GPU <-> NIC map, inherited NCCL and UCX settings, verdicts, NCCL
// transports, bandwidth, known-bad combinations). Each aspect of each node
// is one spec, so Jenkins tracks "node X: mechanism" across builds; a
// change for the worse fails it (a regression), any other change is
// noted. It judges two results.json and runs no Ginkgo, so `gdrcheck run
// --compare-to` can use it in the process that ran the suites.
package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// Suite names the compare suite in results.json and JUnit.
const Suite = results.SuiteCompare

// DefaultTolerance is the bandwidth drop, as a fraction of the run before,
// not called a regression where no baseline band says how much a run
// varies.
const DefaultTolerance = 0.05

// Options tune the comparison.
type Options struct {
	// Tolerance replaces the baselines' bands (and DefaultTolerance) for
	// every bandwidth when it is set (> 0).
	Tolerance float64
}

// The aspects, one spec each per node; the names are stable.
const (
	AspectSoftware  = "keeps its driver, kernel and libraries"
	AspectMechanism = "keeps its peer-memory mechanism"
	AspectBAR1      = "keeps its BAR1 aperture"
	AspectPCIe      = "keeps its PCIe links"
	AspectIOMMU     = "keeps its IOMMU mode"
	AspectRails     = "keeps its GPU <-> NIC map"
	AspectOverrides = "keeps its inherited NCCL and UCX settings"
	AspectVerdicts  = "keeps its verdicts"
	AspectTransport = "keeps its NCCL transports"
	AspectBandwidth = "keeps its bandwidth"
	AspectKnownBad  = "stays out of known-bad combinations"
)

// Compare judges after against before, node by node. The result holds
// one node per node of after, each with the compare suite alone; its exit
// code is 1 on any regression. Nodes of only one run are noted, skipped:
// two allocations seldom hold the same nodes.
func Compare(before, after *results.Results, opt Options) *results.Results {
	out, _ := CompareSources(memory(before), memory(after), opt) // memory never fails
	return out
}

// AmendAll adds the compare suite to every node of after, in place
// (gdrcheck run --compare-to): the allocation with the cross-node runs.
func AmendAll(before, after *results.Results, opt Options) {
	amend := Amend(before, opt, len(after.Nodes) == 1)
	for i, n := range after.Nodes {
		var runs []results.Run
		if n.Name == results.AllocationNode {
			runs = after.Runs
		}
		after.Nodes[i] = amend(n, runs)
	}
	after.Tool.Suites = append(slices.Clone(after.Tool.Suites), Suite)
}

// Amend returns what adds the compare suite to a node of a run as it is
// written (gdrcheck run --compare-to, a job's collector): the node
// compared with its namesake in before, runs being the cross-node runs
// where the node is the allocation. With single, a run of one node is
// compared with a before of one node under another name (a host renamed,
// two recordings of one node).
func Amend(before *results.Results, opt Options, single bool) func(n results.Node, runs []results.Run) results.Node {
	amend := amender(memory(before), opt, single)
	return func(n results.Node, runs []results.Run) results.Node {
		out, _ := amend(n, runs) // memory never fails
		return out
	}
}

// amender is Amend over a Source, whose reads may fail.
func amender(before Source, opt Options, single bool) func(n results.Node, runs []results.Run) (results.Node, error) {
	amend := evidenceAmender(before, opt, single)
	return func(n results.Node, runs []results.Run) (results.Node, error) {
		return amend(n, evidence(n), runs)
	}
}

// evidenceAmender is amender of a node whose evidence is decoded
// already (ae).
func evidenceAmender(before Source, opt Options, single bool) func(n results.Node, ae *node.Evidence, runs []results.Run) (results.Node, error) {
	return func(n results.Node, ae *node.Evidence, runs []results.Run) (results.Node, error) {
		bn, be, ok, err := nodeOf(before, n.Name)
		if err == nil && !ok && single && before.Len() == 1 {
			bn, be, err = at(before, 0)
			ok = err == nil
		}
		if err != nil {
			return n, fmt.Errorf("the run before: %w", err)
		}
		s := results.Suite{Name: Suite}
		switch {
		case !ok:
			s.Specs = []results.Spec{{Name: AspectVerdicts, State: results.StateSkipped, Message: "not in the run before: nothing to compare with"}}
		default:
			var beforeRuns []results.Run
			if bn.Name == results.AllocationNode {
				beforeRuns = before.Runs()
			}
			s.Specs = compareNode(bn, n, be, ae, append(slices.Clone(bn.Runs), beforeRuns...), append(slices.Clone(n.Runs), runs...), opt)
		}
		n.Suites = append(slices.Clone(n.Suites), s)
		return n, nil
	}
}

// change collects what one aspect found: regressions fail it, the rest
// are noted.
type change struct {
	worse, notes []string
}

func (c *change) regress(format string, a ...any) {
	c.worse = append(c.worse, fmt.Sprintf(format, a...))
}
func (c *change) note(format string, a ...any) { c.notes = append(c.notes, fmt.Sprintf(format, a...)) }

// aspectActions is what remediation does about a node that regressed in
// an aspect: undo what changed, or, where the change is in what the node
// did rather than how it is set up, have a person look.
var aspectActions = map[string]results.Action{
	AspectSoftware: results.ActionReimage, AspectMechanism: results.ActionReloadDriver, AspectKnownBad: results.ActionReimage,
	AspectBAR1: results.ActionFixConfig, AspectPCIe: results.ActionCheckCable, AspectIOMMU: results.ActionFixConfig,
	AspectRails: results.ActionInvestigate, AspectOverrides: results.ActionFixConfig, AspectVerdicts: results.ActionInvestigate,
	AspectTransport: results.ActionInvestigate, AspectBandwidth: results.ActionInvestigate,
}

func (c change) spec(name string) results.Spec {
	sp := results.Spec{Name: name, State: results.StatePassed, Notes: c.notes}
	if len(c.worse) > 0 {
		sp.SetRemedy(results.Remedy{Action: aspectActions[name], Scope: results.ScopeNode})
	}
	switch len(c.worse) {
	case 0:
		if len(c.notes) == 0 {
			sp.Notes = []string{"unchanged"}
		}
	case 1:
		sp.State, sp.Message = results.StateFailed, c.worse[0]
	default:
		sp.State, sp.Message = results.StateFailed, fmt.Sprintf("%s (and %d more)\n%s", c.worse[0], len(c.worse)-1, strings.Join(c.worse, "\n"))
	}
	return sp
}

// compareNode judges a against b, be and ae being their evidence (nil:
// none).
func compareNode(b, a results.Node, be, ae *node.Evidence, bruns, aruns []results.Run, opt Options) []results.Spec {
	specs := []results.Spec{software(b, a).spec(AspectSoftware), mechanism(b, a).spec(AspectMechanism), knownBad(b, a, be, ae).spec(AspectKnownBad)}
	if be != nil && ae != nil {
		specs = append(specs, bar1(be, ae).spec(AspectBAR1), pcie(be, ae).spec(AspectPCIe), iommu(be, ae).spec(AspectIOMMU), rails(be, ae).spec(AspectRails),
			inherited(be, ae).spec(AspectOverrides))
	}
	specs = append(specs, verdicts(b, a).spec(AspectVerdicts), transports(bruns, aruns).spec(AspectTransport), bandwidth(bruns, aruns, opt).spec(AspectBandwidth))
	slices.SortStableFunc(specs, func(x, y results.Spec) int { return strings.Compare(x.Name, y.Name) })
	return specs
}

// evidence decodes a node's raw evidence; nil where it has none (an
// allocation, a node that never reported).
func evidence(n results.Node) *node.Evidence {
	if len(n.Evidence) == 0 {
		return nil
	}
	// encoding/json/v2 (go-json-experiment) first: five times faster on
	// the 60 KB of a node's evidence, which a comparison of two jobs of
	// 16,384 nodes decodes twice per node. Where it refuses what
	// encoding/json takes, encoding/json decides, as before.
	var ev node.Evidence
	if jsonv2.Unmarshal(n.Evidence, &ev, jsontext.AllowInvalidUTF8(true)) == nil {
		return &ev
	}
	ev = node.Evidence{}
	if json.Unmarshal(n.Evidence, &ev) != nil {
		return nil
	}
	return &ev
}

// software notes every version that moved: the upgrade itself is no
// regression, but the closed kernel modules replacing the open ones are
// (no dma-buf).
func software(b, a results.Node) change {
	var c change
	for _, f := range []struct{ key, what string }{
		{"driver", "driver"}, {"driver_flavour", "kernel modules"}, {"kernel", "kernel"}, {"cuda_driver", "CUDA driver"},
		{"nccl", "NCCL"}, {"rdma_core", "rdma-core"}, {"mofed", "MLNX_OFED/DOCA"}, {"gpu_model", "GPUs"},
	} {
		was, now := b.Fact(f.key), a.Fact(f.key)
		if was == now {
			continue
		}
		if f.key == "driver_flavour" && was == "open" && now == "proprietary" {
			c.regress("kernel modules open -> proprietary: the proprietary modules cannot export dma-bufs")
			continue
		}
		c.note("%s %s -> %s", f.what, dash(was), dash(now))
	}
	return c
}

// mechanismRank orders the peer-memory paths from best.
var mechanismRank = map[string]int{"dmabuf": 2, "peermem": 1, "none": 0}

func mechanism(b, a results.Node) change {
	var c change
	was, now := b.Fact("mechanism"), a.Fact("mechanism")
	switch {
	case was == now:
	case was == "" || now == "":
		c.note("peer-memory mechanism %s -> %s (the kernel suite ran in only one of the runs)", dash(was), dash(now))
	case mechanismRank[now] < mechanismRank[was]:
		c.regress("peer-memory mechanism %s -> %s", was, now)
	default:
		c.note("peer-memory mechanism %s -> %s", was, now)
	}
	if pw, pn := b.Fact("peermem"), a.Fact("peermem"); pw != pn {
		c.note("nvidia_peermem %s -> %s", dash(pw), dash(pn))
	}
	return c
}

func gpuName(g node.GPU) string {
	if g.Index < 0 {
		return "GPU " + g.BusID
	}
	return fmt.Sprintf("GPU %d %s", g.Index, g.BusID)
}

// pairGPUs matches each GPU after with the one before at the same bus id.
func pairGPUs(b, a *node.Evidence, c *change, each func(bg, ag node.GPU)) {
	old := map[string]node.GPU{}
	for _, g := range b.GPUs {
		old[g.BusID] = g
	}
	for _, g := range a.GPUs {
		bg, ok := old[g.BusID]
		if !ok {
			c.note("%s is new", gpuName(g))
			continue
		}
		delete(old, g.BusID)
		each(bg, g)
	}
	for _, g := range b.GPUs {
		if _, gone := old[g.BusID]; gone {
			c.regress("%s is gone", gpuName(g))
		}
	}
}

func bar1(b, a *node.Evidence) change {
	var c change
	pairGPUs(b, a, &c, func(bg, ag node.GPU) {
		switch {
		case bg.BAR1 == nil || ag.BAR1 == nil:
			if (bg.BAR1 == nil) != (ag.BAR1 == nil) {
				c.note("%s: BAR1 known in only one of the runs", gpuName(ag))
			}
		case ag.BAR1.TotalMiB < bg.BAR1.TotalMiB:
			c.regress("%s: BAR1 %d -> %d MiB", gpuName(ag), bg.BAR1.TotalMiB, ag.BAR1.TotalMiB)
		case ag.BAR1.TotalMiB != bg.BAR1.TotalMiB:
			c.note("%s: BAR1 %d -> %d MiB", gpuName(ag), bg.BAR1.TotalMiB, ag.BAR1.TotalMiB)
		}
	})
	return c
}

// pcie compares link widths, and the generations the links can reach:
// the current generation drops on its own when a GPU idles, so only a
// narrower link or a lower maximum is a regression.
func pcie(b, a *node.Evidence) change {
	var c change
	pairGPUs(b, a, &c, func(bg, ag node.GPU) {
		bw, aw := width(bg), width(ag)
		if aw < bw {
			c.regress("%s: PCIe link x%d -> x%d", gpuName(ag), bw, aw)
		}
		if bm, am := bg.PCIe.MaxGen, ag.PCIe.MaxGen; bm > 0 && am > 0 && am < bm {
			c.regress("%s: PCIe link can reach Gen%d, was Gen%d", gpuName(ag), am, bm)
		}
		if bc, ac := bg.PCIe.CurGen, ag.PCIe.CurGen; bc != ac && bc > 0 && ac > 0 {
			c.note("%s: PCIe Gen%d -> Gen%d now (the generation follows the GPU's power state)", gpuName(ag), bc, ac)
		}
	})
	return c
}

func width(g node.GPU) int {
	if g.PCIe.CurWidth > 0 {
		return g.PCIe.CurWidth
	}
	if l := g.PCIe.Sysfs; l != nil {
		return l.CurWidth
	}
	return 0
}

func iommu(b, a *node.Evidence) change {
	var c change
	if was, now := b.IOMMU.Mode, a.IOMMU.Mode; was != now {
		if now == node.IOMMUTranslating {
			c.regress("IOMMU %s -> %s: translated DMA slows or breaks peer traffic", was, now)
		} else {
			c.note("IOMMU %s -> %s", was, now)
		}
	}
	return c
}

func rails(b, a *node.Evidence) change {
	var c change
	pairGPUs(b, a, &c, func(bg, ag node.GPU) {
		bp, bok := b.PreferredPath(bg.BusID)
		ap, aok := a.PreferredPath(ag.BusID)
		switch {
		case !bok && !aok:
		case bok && !aok:
			c.regress("%s: rail %s (%s) -> no NIC", gpuName(ag), bp.NIC, bp.Class)
		case !bok:
			c.note("%s: no NIC -> rail %s (%s)", gpuName(ag), ap.NIC, ap.Class)
		case ap.Class.Rank() > bp.Class.Rank():
			c.regress("%s: rail %s (%s) -> %s (%s)", gpuName(ag), bp.NIC, bp.Class, ap.NIC, ap.Class)
		case ap.NIC != bp.NIC || ap.Class != bp.Class:
			c.note("%s: rail %s (%s) -> %s (%s)", gpuName(ag), bp.NIC, bp.Class, ap.NIC, ap.Class)
		}
	})
	return c
}

func verdicts(b, a results.Node) change {
	var c change
	if b.Status != a.Status {
		if a.Status != results.NodeEvaluated {
			c.regress("node %s -> %s: %s", b.Status, a.Status, firstLine(a.Reason))
		} else {
			c.note("node %s -> %s", b.Status, a.Status)
		}
	}
	old := map[string]results.Spec{}
	for _, s := range b.Suites {
		for _, sp := range s.Specs {
			old[s.Name+" / "+sp.Name] = sp
		}
	}
	now := map[string]bool{}
	for _, s := range a.Suites {
		if s.Name == Suite {
			continue
		}
		for _, sp := range s.Specs {
			key := s.Name + " / " + sp.Name
			now[key] = true
			was, ok := old[key]
			switch {
			case !ok:
			case was.State == results.StatePassed && failed(sp.State):
				c.regress("%s: passed -> %s: %s", key, sp.State, firstLine(sp.Message))
			case failed(was.State) && sp.State == results.StatePassed:
				c.note("%s: %s -> passed", key, was.State)
			case was.State == results.StatePassed && sp.State == results.StateSkipped:
				c.note("%s: passed -> skipped: %s", key, firstLine(sp.Message))
			}
		}
	}
	if a.Status != results.NodeEvaluated {
		return c // its status already says why its specs are gone
	}
	// A check that passed and is gone proves nothing after: an AFTER
	// that ran less must not read as one that kept everything.
	for _, s := range b.Suites {
		if s.Name == Suite {
			continue
		}
		for _, sp := range s.Specs {
			if key := s.Name + " / " + sp.Name; sp.State == results.StatePassed && !now[key] {
				c.regress("%s: passed -> absent: the run after has no such spec", key)
			}
		}
	}
	return c
}

func failed(state string) bool {
	return state != results.StatePassed && state != results.StateSkipped && state != results.StatePending
}

// runKey identifies a run across the two results.
func runKey(r results.Run) string {
	k := r.Suite + " " + r.Op + " " + r.Mode
	if r.Mem != "" {
		k += " " + r.Mem
	}
	if len(r.Nodes) > 1 || r.Suite == "scale" || r.Suite == "pairwise" {
		k += fmt.Sprintf(" across %d node(s)", len(r.Nodes))
		if r.Suite == "pairwise" {
			k += " " + strings.Join(r.Nodes, "+")
		}
	}
	return k
}

func pairRuns(b, a []results.Run, each func(br, ar results.Run)) {
	old := map[string]results.Run{}
	for _, r := range b {
		old[runKey(r)] = r
	}
	for _, r := range a {
		if br, ok := old[runKey(r)]; ok {
			each(br, r)
		}
	}
}

// transports: the direct path must stay the path it was; a forced
// fallback landing elsewhere is noted.
func transports(b, a []results.Run) change {
	var c change
	pairRuns(b, a, func(br, ar results.Run) {
		// A multi-node run is named by the classes between its nodes,
		// which P2P inside each node would outnumber.
		bt, at := br.PathTransport(), ar.PathTransport()
		if bt == at && br.PathVerdict == ar.PathVerdict {
			return
		}
		what := fmt.Sprintf("%s: %s -> %s", runKey(ar), dash(bt), dash(at))
		if ar.PathVerdict != br.PathVerdict {
			what += fmt.Sprintf(" (path %s -> %s)", dash(br.PathVerdict), dash(ar.PathVerdict))
		}
		if ar.Mode == "direct" && (br.PathVerdict == "direct" && ar.PathVerdict != "direct" || bt != at && br.PathVerdict != "unknown") {
			c.regress("%s", what)
			return
		}
		c.note("%s", what)
	})
	return c
}

// bandwidth fails a run whose bus bandwidth fell by more than its
// baseline band allows (the band's width below its expected value), else
// by more than DefaultTolerance; Options.Tolerance overrides both.
func bandwidth(b, a []results.Run, opt Options) change {
	var c change
	pairRuns(b, a, func(br, ar results.Run) {
		if ar.Suite == "negative" || ar.Suite == "mpi" && ar.Mode != "direct" {
			return // a forced fallback losing more is no regression
		}
		if ar.OneRank() || br.OneRank() {
			return
		}
		if br.BusBW <= 0 || ar.Error != "" && br.Error == "" {
			if ar.Error != "" && br.Error == "" {
				c.regress("%s: ran before, fails now: %s", runKey(ar), firstLine(ar.Error))
			}
			return
		}
		tol, from := DefaultTolerance, "gdrcheck's default"
		if band := ar.Baseline; band != nil && band.Expected > 0 && band.Low < band.Expected {
			tol, from = (band.Expected-band.Low)/band.Expected, "baseline "+band.Profile
		}
		if opt.Tolerance > 0 {
			tol, from = opt.Tolerance, "--tolerance"
		}
		delta := (ar.BusBW - br.BusBW) / br.BusBW
		unit := ar.Unit
		if unit == "" {
			unit = "GB/s"
		}
		line := fmt.Sprintf("%s: busbw %.2f -> %.2f %s (%+.1f%%)", runKey(ar), br.BusBW, ar.BusBW, unit, 100*delta)
		switch {
		case delta < -tol:
			c.regress("%s; %s allows %.1f%%", line, from, 100*tol)
		case math.Abs(delta) > tol:
			c.note("%s", line)
		}
		cpuPerGB(&c, br, ar, delta, tol)
	})
	return c
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
