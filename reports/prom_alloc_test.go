package reports

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gdrcheck/gdrcheck/results"
)

// jobNode is a healthy node of a merged job with what the per-node form
// would render (a GPU, a run), so that a test can see none of it here.
func jobNode(name string) results.Node {
	return results.Node{
		Name: name, Status: results.NodeEvaluated, Profile: "h100x8-ndr",
		Facts: []results.Fact{{Name: "driver", Value: "580.95.05"}, {Name: "mechanism", Value: "dmabuf"}, {Name: "peermem", Value: "absent"}},
		GPUs:  []results.GPU{{Index: 0, BusID: "0000:18:00.0", NIC: "mlx5_0", Path: "PIX"}},
		Runs:  []results.Run{{Suite: "collectives", Op: "all_reduce", Mode: "direct", BusBW: 480, Points: []results.Point{{Size: 1 << 30, BusBW: 480}}}},
		Suites: []results.Suite{
			{Name: "topology", Specs: []results.Spec{{Name: "a", State: results.StatePassed}, {Name: "b", State: results.StatePassed}, {Name: "c", State: results.StateSkipped}}},
			{Name: "kernel", Specs: []results.Spec{{Name: "d", State: results.StatePassed}}},
		},
	}
}

// promJob is a merged job of n nodes (gpu0001...), of which gpu0002 never
// reported, gpu0005 could not be evaluated and gpu0007 failed a kernel
// spec with no peer-memory mechanism; the scaling suite's entry names
// gpu0003 (slow in every pair, a severe outlier) and gpu0004 and gpu0006
// (suspect), and the runs across nodes go 1, 2, 4 ... n.
func promJob(n int) *results.Results {
	src := promSample()
	r := &results.Results{Schema: results.Schema, Tool: src.Tool, Started: src.Started, Finished: src.Finished}
	var all []string
	for i := 1; i <= n; i++ {
		nd := jobNode(fmt.Sprintf("gpu%04d", i))
		switch i {
		case 2:
			nd = results.Node{Name: nd.Name, Status: results.NodeMissing, Reason: "never reported"}
		case 5:
			nd = results.Node{Name: nd.Name, Status: results.NodeUnevaluable, Reason: "NVML: ERROR_DRIVER_NOT_LOADED"}
		case 7:
			nd.Facts[1].Value = "none"
			nd.Suites[1].Specs = []results.Spec{{Name: "d", State: results.StateFailed, Message: "no peer-memory mechanism works"}}
		}
		r.Nodes = append(r.Nodes, nd)
		all = append(all, nd.Name)
	}
	for k := 1; k <= n; k *= 2 {
		r.Runs = append(r.Runs, results.Run{Suite: "scale", Op: "all_reduce", Mode: "direct", Nodes: all[:k], BusBW: 400 - float64(k),
			Points: []results.Point{{Size: 1 << 30, BusBW: 400}}, Baseline: &results.Band{Expected: 400, Low: 360, High: 440}})
	}
	r.Nodes = append(r.Nodes, results.Node{Name: results.AllocationNode, Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "scaling", Specs: []results.Spec{
		{Name: "scales", State: results.StatePassed, Metrics: []results.Metric{{Name: "scaling_efficiency", Value: 0.5, Subject: "4 over 2 nodes", Verdict: "fail"}}},
		{Name: "pairs", State: results.StateFailed, Metrics: []results.Metric{{Name: "slow_in_every_pair", Value: 1, Subject: "gpu0003", Verdict: "fail"}}},
		{Name: "outliers", State: results.StateFailed, Metrics: []results.Metric{
			{Name: "busbw_robust_z", Value: -2.5, Subject: "gpu0006", Verdict: "info"},
			{Name: "busbw_robust_z", Value: -7.5, Subject: "gpu0003", Verdict: "fail"},
			{Name: "busbw_robust_z", Value: -3.1, Subject: "gpu0004", Verdict: "info"},
			{Name: "busbw_robust_z", Value: -9, Subject: "not-a-node", Verdict: "fail"},
		}},
	}}}})
	return r
}

// samples parses a textfile with Prometheus' own text parser into series
// (labels sorted, as key writes them) -> value, and checks that each
// sample is one line of it: no label value broke a line.
func samples(t *testing.T, b []byte) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parsing the textfile: %v\n%s", err, b)
	}
	got := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var kv []string
			for _, l := range m.GetLabel() {
				kv = append(kv, l.GetName(), l.GetValue())
			}
			got[key(name, kv...)] = m.GetGauge().GetValue()
		}
	}
	if lines := sampleLines(b); lines != len(got) {
		t.Errorf("%d sample lines for %d series: a value broke a line", lines, len(got))
	}
	return got
}

// sampleLines counts the lines that are not comments: the series.
func sampleLines(b []byte) int {
	n := 0
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}

// key names one series: key("gdrcheck_job_nodes", "node", "allocation", "status", "missing").
func key(name string, kv ...string) string {
	var pairs []string
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, kv[i]+"="+strconv.Quote(kv[i+1]))
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

func allocationTextfile(t *testing.T, r *results.Results, job PromJob) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteAllocationPrometheus(&buf, r, job); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPromAllocationTextfileCountsTheJobNotItsNodes(t *testing.T) {
	b := allocationTextfile(t, promJob(8), PromJob{ID: "4711", Nodes: 8})
	golden := "testdata/prom-allocation.golden.prom"
	if *update {
		os.WriteFile(golden, b, 0o644)
	}
	if want, err := os.ReadFile(golden); err != nil || string(want) != string(b) {
		t.Errorf("%s differs (go test ./reports -update rewrites it): %v\n%s", golden, err, b)
	}
	checkPromLinters(t, b)
	got := samples(t, b)
	a := func(name string, kv ...string) string {
		return key(name, append([]string{"node", "allocation"}, kv...)...)
	}
	want := map[string]float64{
		a("gdrcheck_build_info", "version", "v1.2.3"):                                                          1,
		a("gdrcheck_job_exit_code"):                                                                            2,
		a("gdrcheck_job_verdict_info", "job_id", "4711", "verdict", "unevaluable"):                             1,
		a("gdrcheck_job_allocated_nodes"):                                                                      8,
		a("gdrcheck_job_nodes", "status", "evaluated"):                                                         6,
		a("gdrcheck_job_nodes", "status", "missing"):                                                           1,
		a("gdrcheck_job_nodes", "status", "unevaluable"):                                                       1,
		a("gdrcheck_job_nodes", "status", "interrupted"):                                                       0,
		a("gdrcheck_job_failed_nodes", "suite", "kernel"):                                                      1,
		a("gdrcheck_job_failed_nodes", "suite", "topology"):                                                    0,
		a("gdrcheck_job_specs", "suite", "topology", "state", "passed"):                                        12,
		a("gdrcheck_job_specs", "suite", "topology", "state", "skipped"):                                       6,
		a("gdrcheck_job_specs", "suite", "kernel", "state", "failed"):                                          1,
		a("gdrcheck_job_peer_memory_nodes", "mechanism", "dmabuf", "peermem", "absent"):                        5,
		a("gdrcheck_job_peer_memory_nodes", "mechanism", "none", "peermem", "absent"):                          1,
		a("gdrcheck_job_peer_memory_nodes", "mechanism", "unknown", "peermem", "unknown"):                      2,
		a("gdrcheck_job_profile_nodes", "profile", "h100x8-ndr"):                                               6,
		a("gdrcheck_job_driver_nodes", "driver", "580.95.05"):                                                  6,
		a("gdrcheck_job_driver_nodes", "driver", "unknown"):                                                    2,
		a("gdrcheck_scaling_busbw_bytes_per_second", "op", "all_reduce", "nodes", "8"):                         392e9,
		a("gdrcheck_scaling_busbw_baseline_ratio", "op", "all_reduce", "nodes", "1"):                           0.9975,
		a("gdrcheck_specs", "suite", "scaling", "state", "failed"):                                             2,
		a("gdrcheck_spec_failures", "suite", "scaling"):                                                        2,
		a("gdrcheck_scaling_outlier", "outlier", "gpu0003", "metric", "busbw_robust_z", "verdict", "fail"):     -7.5,
		a("gdrcheck_scaling_outlier", "outlier", "gpu0003", "metric", "slow_in_every_pair", "verdict", "fail"): 1,
		a("gdrcheck_scaling_outlier", "outlier", "gpu0004", "metric", "busbw_robust_z", "verdict", "suspect"):  -3.1,
		a("gdrcheck_scaling_outlier", "outlier", "gpu0006", "metric", "busbw_robust_z", "verdict", "suspect"):  -2.5,
		a("gdrcheck_scaling_outliers_omitted"):                                                                 0,
	}
	for s, v := range want {
		if g, ok := got[s]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", s, g, ok, v)
		}
	}
	for s := range got {
		if !strings.Contains(s, `node="allocation"`) {
			t.Errorf("a node's own series in the allocation file: %s", s)
		}
		if strings.Contains(s, "not-a-node") || strings.Contains(s, "over 2 nodes") {
			t.Errorf("an outlier that is not a node of the job: %s", s)
		}
		for _, own := range []string{"gdrcheck_gpu_", "gdrcheck_node_info", "gdrcheck_busbw_", "gdrcheck_peer_memory_info", "gdrcheck_last_run_"} {
			if strings.HasPrefix(s, own) {
				t.Errorf("a per-node family in the allocation file: %s", s)
			}
		}
	}
}

// Worst first, and capped: of 16,384 nodes all named outliers only the 50
// worst have a series, the rest are counted.
func TestPromAllocationTextfileKeepsTheWorstOutliers(t *testing.T) {
	r := promJob(16384)
	alloc := &r.Nodes[len(r.Nodes)-1]
	var ms []results.Metric
	for i := 1; i <= 16384; i++ {
		v := "info"
		if i%1000 == 0 {
			v = "fail"
		}
		ms = append(ms, results.Metric{Name: "busbw_robust_z", Value: -2 - float64(i%977)/100, Subject: fmt.Sprintf("gpu%04d", i), Verdict: v})
	}
	alloc.Suites[0].Specs = append(alloc.Suites[0].Specs, results.Spec{Name: "all", State: results.StateFailed, Metrics: ms})
	out := outliers(r, *alloc)
	if len(out) != 16385 { // gpu0003 is named twice, by two metrics
		t.Fatalf("%d outliers", len(out))
	}
	for i := 1; i < len(out); i++ {
		if compareOutliers(out[i-1], out[i]) > 0 {
			t.Fatalf("outlier %d %+v before %+v", i, out[i-1], out[i])
		}
	}
	// The 16 fails and gpu0003's slow_in_every_pair come first.
	if out[0].verdict != "fail" || out[17].verdict != "fail" || out[18].verdict != "suspect" {
		t.Errorf("not fails first: %+v %+v %+v", out[0], out[17], out[18])
	}
	got := samples(t, allocationTextfile(t, r, PromJob{ID: "1", Nodes: 16384}))
	n := 0
	for s := range got {
		if strings.HasPrefix(s, "gdrcheck_scaling_outlier{") {
			n++
		}
	}
	if n != maxOutliers || got[key("gdrcheck_scaling_outliers_omitted", "node", "allocation")] != 16385-maxOutliers {
		t.Errorf("%d outlier series, %v omitted", n, got[key("gdrcheck_scaling_outliers_omitted", "node", "allocation")])
	}
}

// hostileJob is a job of n nodes in which every string a node gives is
// its own: status, suites (three each), facts, profile, the scaling
// entry's suites and runs, and every node an outlier.
func hostileJob(n int) *results.Results {
	r := &results.Results{Schema: results.Schema, Tool: results.Tool{Version: "v"}}
	alloc := results.Node{Name: results.AllocationNode, Status: results.NodeEvaluated}
	var ms []results.Metric
	for i := range n {
		name := fmt.Sprintf("n%05d", i)
		nd := results.Node{Name: name, Status: []string{results.NodeEvaluated, "status-" + name}[i%2], Profile: "p-" + name,
			Facts: []results.Fact{{Name: "driver", Value: "d-" + name}, {Name: "mechanism", Value: "m-" + name}, {Name: "peermem", Value: "pm-" + name}}}
		for j := range 3 {
			nd.Suites = append(nd.Suites, results.Suite{Name: fmt.Sprintf("s%d-%s", j, name), Specs: []results.Spec{{Name: "x", State: results.StateFailed}}})
		}
		if i%3 == 0 {
			nd.Name += results.ContainerSuffix
		}
		r.Nodes = append(r.Nodes, nd)
		alloc.Suites = append(alloc.Suites, results.Suite{Name: "a-" + name, Specs: []results.Spec{{Name: "y", State: results.StateFailed}}})
		ms = append(ms, results.Metric{Name: "busbw_robust_z", Value: -float64(i), Subject: nd.Name, Verdict: "fail"}, results.Metric{Name: "m-" + name, Value: 1, Subject: nd.Name})
		r.Runs = append(r.Runs, results.Run{Suite: "scale", Op: "op-" + name, Nodes: []string{nd.Name}, BusBW: 1, Baseline: &results.Band{Expected: 1}})
	}
	alloc.Suites[0].Specs[0].Metrics = ms
	r.Nodes = append(r.Nodes, alloc)
	return r
}

// At 16,384 nodes the file stays far from the 1,000 series one target is
// commonly allowed, for a job of alike nodes and for one in which every
// node gives its own strings; the capped counts still add up to the nodes.
func TestPromAllocationTextfileStaysBoundedAt16384Nodes(t *testing.T) {
	for _, c := range []struct {
		name string
		r    *results.Results
	}{{"alike nodes", promJob(16384)}, {"every string its own", hostileJob(16384)}} {
		t.Run(c.name, func(t *testing.T) {
			b := allocationTextfile(t, c.r, PromJob{ID: "4711", Nodes: 16384})
			n := sampleLines(b)
			t.Logf("%d series, %d bytes", n, len(b))
			if n > 1000 {
				t.Fatalf("%d series for 16,384 nodes, want at most 1,000", n)
			}
			checkPromLinters(t, b)
			got := samples(t, b)
			sums := map[string]float64{}
			for s, v := range got {
				family, _, _ := strings.Cut(s, "{")
				sums[family] += v
			}
			hosts := float64(16384)
			if c.name != "alike nodes" {
				hosts = 16384 - 5462 // every third entry is a container run
			}
			for _, f := range []string{"gdrcheck_job_nodes", "gdrcheck_job_peer_memory_nodes", "gdrcheck_job_profile_nodes", "gdrcheck_job_driver_nodes"} {
				if sums[f] != hosts {
					t.Errorf("%s sums to %v, want %v", f, sums[f], hosts)
				}
			}
			// A node counts once in "other", however many of its
			// suites went there.
			if v := got[key("gdrcheck_job_failed_nodes", "node", "allocation", "suite", otherValue)]; v > hosts {
				t.Errorf("%v nodes failed an other suite, of %v", v, hosts)
			}
		})
	}
}

// Whatever a results.json holds in its strings, each series is one line
// that Prometheus' parser and promtool read, and a value is at most
// maxLabelBytes: newlines and tabs become spaces, quotes and backslashes
// are escaped, invalid UTF-8 and control characters made visible.
func TestPromAllocationTextfileKeepsHostileLabelValuesOnOneLine(t *testing.T) {
	long := strings.Repeat("é", 5000) // 10 KB, two bytes a character
	hostile := []string{"a\nb", `q"uote`, `back\slash`, "cr\rlf\r\n", "tab\there", "nul\x00", "bad\xffutf8", "esc\x1b[31m", `}{"`, "# HELP x y\nfake 1", long}
	cleaned := []string{"a b", `q"uote`, `back\slash`, "cr lf  ", "tab here", `nul\x00`, "bad\ufffdutf8", `esc\x1b[31m`, `}{"`, "# HELP x y fake 1",
		strings.Repeat("é", 62) + "..."}
	r := promJob(len(hostile) + 7) // gpu0008 on are healthy
	for i, h := range hostile {
		n := &r.Nodes[i+7]
		n.Facts[0].Value = h // driver
		n.Profile = h
	}
	r.Tool.Version = "v\n1"
	// A node named with a newline and quotes, named an outlier.
	evil := "evil\n\"node\\" + long
	r.Nodes[7].Name = evil
	alloc := &r.Nodes[len(r.Nodes)-1]
	alloc.Suites[0].Specs[2].Metrics = append(alloc.Suites[0].Specs[2].Metrics, results.Metric{Name: "busbw_robust_z", Value: -6, Subject: evil, Verdict: "fail"})
	b := allocationTextfile(t, r, PromJob{ID: "47\"11\n", Nodes: len(r.Nodes)})
	checkPromLinters(t, b)
	got := samples(t, b)
	for _, l := range strings.Split(string(b), "\n") {
		if len(l) > 512 {
			t.Errorf("a line of %d bytes: %.80q...", len(l), l)
		}
	}
	for i, want := range cleaned {
		if len(want) > maxLabelBytes {
			t.Fatalf("test value %d is %d bytes", i, len(want))
		}
		s := key("gdrcheck_job_driver_nodes", "node", "allocation", "driver", want)
		if got[s] != 1 {
			t.Errorf("%q: %s = %v", hostile[i], s, got[s])
		}
	}
	outlier := `evil "node\` + strings.Repeat("é", 57) + "..." // 11 + 114 + 3 bytes
	if s := key("gdrcheck_scaling_outlier", "node", "allocation", "outlier", outlier, "metric", "busbw_robust_z", "verdict", "fail"); got[s] != -6 {
		t.Errorf("the node named with a newline: %s = %v\n%s", s, got[s], b)
	}
	if got[key("gdrcheck_job_verdict_info", "node", "allocation", "job_id", `47"11 `, "verdict", "unevaluable")] != 1 {
		t.Errorf("the job id is not one clean label value:\n%s", b)
	}
}

// Every count follows nodeWeight: a representative standing for 100 alike
// nodes counts as 100 of them.
func TestPromAllocationCountsFollowTheNodesWeight(t *testing.T) {
	defer func(w func(results.Node) int) { nodeWeight = w }(nodeWeight)
	nodeWeight = func(n results.Node) int {
		if n.Name == "gpu0001" || n.Name == "gpu0007" {
			return 100
		}
		return 1
	}
	got := samples(t, allocationTextfile(t, promJob(8), PromJob{ID: "4711"}))
	a := func(name string, kv ...string) string {
		return key(name, append([]string{"node", "allocation"}, kv...)...)
	}
	for s, v := range map[string]float64{
		a("gdrcheck_job_allocated_nodes"):                                             206,
		a("gdrcheck_job_nodes", "status", "evaluated"):                                204,
		a("gdrcheck_job_failed_nodes", "suite", "kernel"):                             100,
		a("gdrcheck_job_specs", "suite", "topology", "state", "passed"):               2 * 204,
		a("gdrcheck_job_peer_memory_nodes", "mechanism", "none", "peermem", "absent"): 100,
		a("gdrcheck_job_driver_nodes", "driver", "580.95.05"):                         204,
	} {
		if got[s] != v {
			t.Errorf("%s = %v, want %v", s, got[s], v)
		}
	}
}

func TestPromTallyFoldsTheRestIntoOther(t *testing.T) {
	tl := tally{}
	for i := range 30 {
		tl.add(100-i, fmt.Sprintf("v%02d", i))
	}
	tl.add(1, otherValue) // a node that says "other" itself
	rows := tl.top(20)
	if len(rows) != 21 || rows[0].values[0] != "v00" || rows[19].values[0] != "v19" {
		t.Fatalf("rows %+v", rows)
	}
	if last := rows[20]; last.values[0] != otherValue || last.n != 1+(80+71)*10/2 {
		t.Errorf("other: %+v", last)
	}
}
