package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// writeScaling writes what the scaling suite leaves in a job directory:
// the runs across 1, 2, 4 ... n nodes and the allocation's entry, whose
// outlier spec names outlier as a severe outlier.
func writeScaling(t *testing.T, dir string, n int, outlier string) {
	t.Helper()
	var all []string
	for i := 1; i <= n; i++ {
		all = append(all, nodeName(i))
	}
	s := &results.Results{Schema: results.Schema, Tool: results.Tool{Version: "bench"}, Nodes: []results.Node{{
		Name: results.AllocationNode, Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "scaling", Specs: []results.Spec{
			{Name: "has no node whose own bus bandwidth is far below the job's", State: results.StateFailed,
				Metrics: []results.Metric{{Name: "busbw_robust_z", Value: -8, Subject: outlier, Verdict: "fail"}}},
		}}},
	}}}
	for k := 1; k <= n; k *= 2 {
		s.Runs = append(s.Runs, results.Run{Suite: "scale", Op: "all_reduce", Mode: "direct", Nodes: all[:k], BusBW: 380,
			Points: []results.Point{{Size: 1 << 30, BusBW: 380}}})
	}
	if err := os.MkdirAll(filepath.Join(dir, "scale"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(filepath.Join(dir, "scale", "results.json")); err != nil {
		t.Fatal(err)
	}
}

// A job of 1,024 nodes (the 8 x H100 fixture node's results under 1,024
// names; 146 series each in the per-node form, 149,504 together), three
// of which fail a kernel spec and one of them named a severe outlier by
// the scaling suite. collect --prom-textfile writes the allocation's file:
// promtool reads it, it holds at most 1,000 series, the failing nodes are
// counted and the verdict is fail. Then two nodes lose their results: the
// verdict is unevaluable and both are counted missing.
func TestCollect1024NodesWritesABoundedAllocationTextfile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes and merges a job of 1,024 nodes (about 90 MB)")
	}
	failing := map[int]bool{100: true, 200: true, 300: true}
	dir := editedJobOf(t, 1024, func(i int, n *results.Node) bool {
		if !failing[i] {
			return true
		}
		n.Suites = slices.Clone(n.Suites)
		for k := range n.Suites {
			if n.Suites[k].Name == "kernel" {
				n.Suites[k].Specs = slices.Clone(n.Suites[k].Specs)
				n.Suites[k].Specs[0].State, n.Suites[k].Specs[0].Message = results.StateFailed, "no peer-memory mechanism works"
			}
		}
		return true
	})
	writeScaling(t, dir, 1024, "gpu00200")
	a := func(name string, kv ...string) string {
		return series(name, append([]string{"node", "allocation"}, kv...)...)
	}
	collect := func(wantCode int) map[string]float64 {
		t.Helper()
		prom := filepath.Join(t.TempDir(), "gdrcheck-job.prom")
		if r := gdrcheck(t, "collect", dir, "--prom-textfile", prom); r.code != wantCode {
			t.Fatalf("collect: exit %d, want %d\n%s", r.code, wantCode, r.stderr)
		}
		res, err := results.Read(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		checkPromtool(t, prom)
		got := checkAllocationAgrees(t, prom, res, "4711")
		fi, _ := os.Stat(prom)
		t.Logf("%d series, %d bytes for 1,024 nodes", len(got), fi.Size())
		if len(got) > 1000 {
			t.Errorf("%d series for 1,024 nodes, want at most 1,000", len(got))
		}
		wantSeries(t, got, map[string]float64{
			a("gdrcheck_job_allocated_nodes"):                                                                   1024,
			a("gdrcheck_job_failed_nodes", "suite", "kernel"):                                                   3,
			a("gdrcheck_job_failed_nodes", "suite", "topology"):                                                 0,
			a("gdrcheck_job_peer_memory_nodes", "mechanism", "dmabuf", "peermem", "absent"):                     float64(countStatus(res, results.NodeEvaluated)),
			a("gdrcheck_job_driver_nodes", "driver", "580.95.05"):                                               float64(countStatus(res, results.NodeEvaluated)),
			a("gdrcheck_job_profile_nodes", "profile", "h100x8-ndr"):                                            float64(countStatus(res, results.NodeEvaluated)),
			a("gdrcheck_scaling_outlier", "outlier", "gpu00200", "metric", "busbw_robust_z", "verdict", "fail"): -8,
			a("gdrcheck_scaling_outliers_omitted"):                                                              0,
			a("gdrcheck_scaling_busbw_bytes_per_second", "op", "all_reduce", "nodes", "1024"):                   380e9,
			a("gdrcheck_spec_failures", "suite", "scaling"):                                                     1,
		})
		return got
	}
	got := collect(results.ExitFailed)
	wantSeries(t, got, map[string]float64{
		a("gdrcheck_job_exit_code"):                                         1,
		a("gdrcheck_job_verdict_info", "job_id", "4711", "verdict", "fail"): 1,
		a("gdrcheck_job_nodes", "status", "evaluated"):                      1024,
		a("gdrcheck_job_nodes", "status", "missing"):                        0,
	})

	for _, n := range []string{"gpu00500", "gpu00600"} {
		if err := os.Remove(filepath.Join(dir, "nodes", n, "results.json")); err != nil {
			t.Fatal(err)
		}
	}
	got = collect(results.ExitUnevaluable)
	wantSeries(t, got, map[string]float64{
		a("gdrcheck_job_exit_code"): 2,
		a("gdrcheck_job_verdict_info", "job_id", "4711", "verdict", "unevaluable"): 1,
		a("gdrcheck_job_nodes", "status", "evaluated"):                             1022,
		a("gdrcheck_job_nodes", "status", "missing"):                               2,
		a("gdrcheck_job_driver_nodes", "driver", "unknown"):                        2,
	})
}

func countStatus(res *results.Results, status string) int {
	n := 0
	for _, nd := range res.Nodes {
		if nd.Name != results.AllocationNode && nd.Status == status {
			n++
		}
	}
	return n
}

// The job alert, run by promtool test rules: a job's file stays on the
// node that led it, so a failed job is alerted on until a newer job, led
// from another node, passes; a newer one that cannot be evaluated is
// alerted on again, by its own id.
func TestTheJobAlertJudgesTheNewestJob(t *testing.T) {
	t.Parallel()
	rules := onlyRule(shippedRules(t), "GdrcheckJobFailed")
	leader := func(instance, id, verdict, from string, end int) string {
		labels := fmt.Sprintf(`instance="%s:9100",job="node",node="allocation"`, instance)
		return fmt.Sprintf(`      - series: 'gdrcheck_job_verdict_info{%s,job_id="%s",verdict="%s"}'
        values: '%s1x80'
      - series: 'gdrcheck_job_end_timestamp_seconds{%s}'
        values: '%s%dx80'
`, labels, id, verdict, from, labels, from, end)
	}
	failed := func(instance, id, verdict string) []alert {
		return []alert{{"GdrcheckJobFailed", map[string]string{"instance": instance + ":9100", "job": "node", "node": "allocation", "job_id": id, "verdict": verdict}}}
	}
	test := "  - interval: 1m\n    input_series:\n" +
		leader("gpu01", "100", "fail", "", 1000) + leader("gpu05", "101", "pass", "_x30 ", 2000) + leader("gpu09", "102", "unevaluable", "_x50 ", 3000) +
		"    alert_rule_test:\n" +
		expAlerts(rules, "5m", nil) + // pending: for 10m
		expAlerts(rules, "20m", failed("gpu01", "100", "fail")) +
		expAlerts(rules, "40m", nil) +
		expAlerts(rules, "70m", failed("gpu09", "102", "unevaluable"))
	promtoolTest(t, test)
}
