package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

// The shipped alert rules (examples/prometheus/gdrcheck.rules.yml), run by
// promtool test rules over the textfiles gdrcheck writes: every fixture
// node, a node whose direct NCCL runs left P2P, and make run's job,
// healthy and with make run-fault's planted node. Each alert fires for
// what it is about and on nothing else, once per node, with the same
// labels whether the target kept gdrcheck's node label or had one of its
// own.

// A scenario is what one node_exporter serves: textfiles and the node
// name each file's node becomes.
type scenario struct {
	name  string
	files []scenarioFile
	want  []string // the alerts that fire, beyond those the results imply
	res   []*results.Results
}

type scenarioFile struct {
	path, node string
}

// Alerts per fixture that its results do not imply by counting: the
// GPUDirect ones, stated here so that a textfile that stops carrying
// their evidence fails.
var gdrAlerts = map[string][]string{
	"h100x8-proprietary-no-peermem":           {"GPUDirectPeerMemoryMissing", "NCCLNoGDRThroughTheRails"},
	"h100x8-proprietary-peermem-unregistered": {"GPUDirectPeerMemoryMissing", "NCCLNoGDRThroughTheRails"},
	"h100x8-nccl221-peermem-only":             {"NCCLNoGDRThroughTheRails"},
	"rtx6000ada2-bar1-256mib":                 {"GPUDirectPeerMemoryMissing"},
	// libcuda cannot be used after a driver upgrade: nothing registers.
	"h100x8-nvml-version-mismatch": {"GPUDirectPeerMemoryMissing"},
	"h100x8-direct-p2p-broken":     {"NCCLFellBackOnTheDirectPath"},
	"job-run-fault":                {"NCCLLeftGDRDMABetweenNodes", "GdrcheckJobFailed"},
}

func TestTheAlertRulesFireForWhatIsBrokenOncePerNode(t *testing.T) {
	t.Parallel()
	rules := shippedRules(t)
	var scenarios []scenario
	ttars, _ := filepath.Glob(nodes + "*.ttar")
	byName := map[string]scenario{}
	for _, f := range ttars {
		name := strings.TrimSuffix(filepath.Base(f), ".ttar")
		_, res, prom := runFixtureProm(t, name)
		s := scenario{name: name, files: []scenarioFile{{prom, name}}, want: gdrAlerts[name], res: []*results.Results{res}}
		byName[name] = s
		scenarios = append(scenarios, s)
	}
	// Intra-node P2P broken: the direct runs replay the node's run with
	// P2P disabled (SHM between the GPUs), as a node whose NVLink or
	// PCIe P2P stopped working shows.
	recs, _ := shapeRuns("h100x8-nvswitch-cx7-pix")
	for _, op := range []string{"all_reduce", "all_gather", "reduce_scatter", "sendrecv"} {
		recs[op+"-direct"] = recs["all_reduce-p2p-disabled"]
	}
	res, prom := runNodeReplaying(t, "h100x8-nvswitch-cx7-pix", recs)
	scenarios = append(scenarios, scenario{name: "h100x8-direct-p2p-broken", files: []scenarioFile{{prom, "h100x8-direct-p2p-broken"}}, want: gdrAlerts["h100x8-direct-p2p-broken"], res: []*results.Results{res}})

	// make run's job and make run-fault's, each file served by the node
	// that led it beside that node's own.
	healthy, fault := byName["h100x8-nvswitch-cx7-pix"], byName["h100x8-proprietary-no-peermem"]
	for _, j := range []struct {
		name  string
		fault bool
	}{{"job-run", false}, {"job-run-fault", true}} {
		res, prom := makeRunJob(t, healthy.res[0], fault.res[0], j.fault)
		scenarios = append(scenarios, scenario{name: j.name, files: []scenarioFile{{healthy.files[0].path, "node1"}, {prom, ""}}, want: gdrAlerts[j.name], res: []*results.Results{healthy.res[0], res}})
	}

	for name := range gdrAlerts {
		if !slices.ContainsFunc(scenarios, func(s scenario) bool { return s.name == name }) {
			t.Errorf("gdrAlerts names %s, which is no scenario", name)
		}
	}
	fired := map[string]int{}
	var groups []string
	for _, s := range scenarios {
		for _, own := range []string{"", "rack7-" + s.name} {
			tg := target{instance: s.name + ":9100", ownNode: own}
			var b strings.Builder
			b.WriteString("  - interval: 1m\n    input_series:\n")
			for _, f := range s.files {
				for _, smp := range textfileSamples(t, f.path) {
					v := fmt.Sprintf("%gx40", smp.value)
					if smp.name == "gdrcheck_last_run_timestamp_seconds" {
						v = "0x40" // the run ended as the test began
					}
					b.WriteString(tg.series(smp, f.node, v))
				}
			}
			want := s.alerts(tg.instance)
			for _, a := range want {
				fired[a.name]++
			}
			b.WriteString("    alert_rule_test:\n" + expAlerts(rules, "30m", want))
			groups = append(groups, b.String())
		}
	}
	promtoolTest(t, groups...)
	for _, r := range rules {
		if r.Alert != "GdrcheckStale" && fired[r.Alert] == 0 {
			t.Errorf("%s fires in no scenario", r.Alert)
		}
	}
}

// alerts are the alerts s is to fire: its GPUDirect ones, and, for each
// node entry of its results, GdrcheckSpecsFailed where a spec failed and
// GdrcheckNodeUnevaluable where it was not evaluated.
func (s scenario) alerts(instance string) []alert {
	base := func(node string) map[string]string {
		return map[string]string{"job": "node", "instance": instance, "node": node}
	}
	var out []alert
	for _, name := range s.want {
		switch name {
		case "GdrcheckJobFailed":
			l := base("allocation")
			l["job_id"], l["verdict"] = "4711", "fail"
			out = append(out, alert{name, l})
		case "NCCLLeftGDRDMABetweenNodes":
			out = append(out, alert{name, base("allocation")})
		default:
			out = append(out, alert{name, base(s.name)})
		}
	}
	for i, res := range s.res {
		for _, n := range res.Nodes {
			node := s.files[i].node
			// The job's file holds the allocation's series alone (its
			// nodes' own come from their own node_exporters).
			if (node == "") != (n.Name == results.AllocationNode) {
				continue
			}
			if node == "" {
				node = results.AllocationNode
			}
			failed := 0
			for _, su := range n.Suites {
				failed += su.Counts().Failed
			}
			if failed > 0 {
				out = append(out, alert{"GdrcheckSpecsFailed", base(node)})
			}
			if n.Status != results.NodeEvaluated && n.Name != results.AllocationNode {
				out = append(out, alert{"GdrcheckNodeUnevaluable", base(node)})
			}
		}
	}
	return out
}

// runNodeReplaying runs every suite on a fixture node with its NCCL runs
// replaying recs, and returns the results and the textfile.
func runNodeReplaying(t *testing.T, name string, recs map[string]string) (*results.Results, string) {
	t.Helper()
	out := t.TempDir()
	prom := filepath.Join(out, "gdrcheck.prom")
	var bins []string
	for k := range recs {
		if op, mode, _ := strings.Cut(k, "-"); mode == "direct" {
			bins = append(bins, op+"_perf")
		}
	}
	dir, env := fakebin.NCCLTests(t, bins, recs)
	cmd := exec.Command(bin, "run", "-q", "--host-root", nodes+name+".ttar", "--out", out, "--prom-textfile", prom, "--nccl-tests-dir", dir)
	cmd.Env = append(append(os.Environ(), "SLURMD_NODENAME="), env...)
	r := runCmd(t, cmd)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, r.stderr)
	}
	checkPromtool(t, prom)
	checkPromAgrees(t, prom, res)
	return res, prom
}

// makeRunJob is make run's job without Slurm (make run-fault's with
// fault): four nodes that reported, node3 the node planted with the fault,
// the scaling suite across them replaying the recordings
// slurm/localcluster/make-run.cluster names, and the job collected into
// its allocation textfile.
func makeRunJob(t *testing.T, healthy, broken *results.Results, fault bool) (*results.Results, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "job-4711")
	names := []string{"node1", "node2", "node3", "node4"}
	for _, name := range names {
		src := healthy
		if fault && name == "node3" {
			src = broken
		}
		one := *src
		n := src.Nodes[0]
		n.Name = name
		one.Nodes = []results.Node{n}
		if err := os.MkdirAll(filepath.Join(dir, "nodes", name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := one.Write(filepath.Join(dir, "nodes", name, "results.json")); err != nil {
			t.Fatal(err)
		}
	}
	recs := makeRunRecordings(t, fault)
	fake, env := fakebin.NCCLTests(t, []string{"all_reduce_perf"}, recs)
	scale := filepath.Join(dir, "scale")
	cmd := exec.Command(bin, "run", "-q", "--suites", "scaling", "--launcher", "env", "--nccl-tests-dir", fake, "--out", scale,
		"--nodes", "node[1-4]", "--node-results", filepath.Join(dir, "nodes"))
	cmd.Env = append(append(os.Environ(), env...), "GDRCHECK_FAKE_NCCL_SLOW_NODE=node3")
	if r := runCmd(t, cmd); r.code > 1 {
		t.Fatalf("the scaling suite: exit %d\n%s", r.code, r.stderr)
	}
	job := `{"id": "4711", "nodes": ["node1", "node2", "node3", "node4"], "started": "2026-12-01T10:00:00Z", "config": {}, "version": "test"}`
	if err := os.WriteFile(filepath.Join(dir, "job.json"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(t.TempDir(), "gdrcheck-allocation.prom")
	r := gdrcheck(t, "collect", dir, "--prom-textfile", prom)
	want := 0
	if fault {
		want = 1
	}
	if r.code != want {
		t.Fatalf("collect: exit %d, want %d\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	res, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkPromtool(t, prom)
	checkAllocationAgrees(t, prom, res, "4711")
	return res, prom
}

// makeRunRecordings are the recordings make-run.cluster names for the
// healthy job, or, with fault, for make run-fault's.
func makeRunRecordings(t *testing.T, fault bool) map[string]string {
	t.Helper()
	f, err := os.Open("../../slurm/localcluster/make-run.cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			continue
		}
		switch kind, key, file := fields[0], fields[1], "../../"+fields[2]; {
		case kind == "rec", kind == "fault-rec" && fault && strings.HasSuffix(key, "-slow"):
			recs[key] = file
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// A node whose textfile stops being scraped (node_exporter down, the file
// removed), and one still served whose runs stopped, fire GdrcheckStale
// once the last run is 8 days old, with the target's own node label or
// without; a node that runs every day does not, and a node gone for
// over the rule's 30 days is forgotten.
func TestAStoppedNodeFiresGdrcheckStale(t *testing.T) {
	t.Parallel()
	rules := shippedRules(t)
	_, _, prom := runFixtureProm(t, "h100x8-nvswitch-cx7-pix")
	var last sample
	for _, s := range textfileSamples(t, prom) {
		if s.name == "gdrcheck_last_run_timestamp_seconds" {
			last = s
		}
	}
	if last.name == "" {
		t.Fatalf("%s has no gdrcheck_last_run_timestamp_seconds", prom)
	}
	const hours = 35 * 24
	daily := make([]string, hours)
	for h := range daily {
		daily[h] = fmt.Sprint(h / 24 * 86400)
	}
	var b strings.Builder
	b.WriteString("  - interval: 1h\n    input_series:\n")
	// Scraped for two days, then gone.
	b.WriteString(target{instance: "gone:9100"}.series(last, "gone", fmt.Sprintf("0x47 _x%d", hours)))
	b.WriteString(target{instance: "gone-renamed:9100", ownNode: "rack7-gone"}.series(last, "gone-renamed", fmt.Sprintf("0x47 _x%d", hours)))
	// Served all along, the run never repeated.
	b.WriteString(target{instance: "stuck:9100"}.series(last, "stuck", fmt.Sprintf("0x%d", hours)))
	b.WriteString(target{instance: "daily:9100"}.series(last, "daily", strings.Join(daily, " ")))
	stale := func(nodes ...string) []alert {
		var out []alert
		for _, n := range nodes {
			out = append(out, alert{"GdrcheckStale", map[string]string{"job": "node", "instance": n + ":9100", "node": n}})
		}
		return out
	}
	b.WriteString("    alert_rule_test:\n")
	for _, at := range []struct {
		when string
		want []alert
	}{
		{"7d", nil},
		{"8d", nil}, // 8 days old, not over: pending for an hour after
		{"8d2h", stale("gone", "gone-renamed", "stuck")},
		{"31d", stale("gone", "gone-renamed", "stuck")},
		{"33d", stale("stuck")}, // gone's last sample, at 2 days, is past the 30-day window
	} {
		b.WriteString(expAlerts(onlyRule(rules, "GdrcheckStale"), at.when, at.want))
	}
	promtoolTest(t, b.String())
}

// onlyRule is the rule of rules named name.
func onlyRule(rules []rule, name string) []rule {
	for _, r := range rules {
		if r.Alert == name {
			return []rule{r}
		}
	}
	return nil
}
