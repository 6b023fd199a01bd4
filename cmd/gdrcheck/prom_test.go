package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// checkPromtool runs promtool check metrics, the linter of Prometheus's
// own naming rules, over a textfile: it must have nothing to say.
func checkPromtool(t *testing.T, path string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is needed to lint the Prometheus textfile (make deps installs Debian's prometheus): %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = f
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics %s: %v\n%s", path, err, out)
	}
}

// promSeries reads a textfile as series -> value; a series is written as
// the exposition format writes it, labels sorted by name (see series).
func promSeries(t *testing.T, path string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		// No timestamps: the value is the last field, and label
		// values may hold spaces.
		j := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[j+1:], 64)
		if j < 0 || err != nil {
			t.Fatalf("%s:%d: not a sample: %q", path, i+1, line)
		}
		m[line[:j]] = v
	}
	return m
}

// series names one series: series("gdrcheck_specs", "node", "n1", "suite", "kernel").
func series(name string, kv ...string) string {
	var pairs []string
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, kv[i]+"="+strconv.Quote(kv[i+1]))
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// wantSeries checks series of a textfile against their values.
func wantSeries(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for s, v := range want {
		if g, ok := got[s]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", s, g, ok, v)
		}
	}
}

// checkPromAgrees checks that a textfile says what results.json says of
// every node: status, mechanism, each GPU's rail path and BAR1, each run's
// bandwidth and fallback verdict, each suite's failures.
func checkPromAgrees(t *testing.T, path string, res *results.Results) {
	t.Helper()
	got := promSeries(t, path)
	want := func(s string, v float64) {
		t.Helper()
		if g, ok := got[s]; !ok || g != v {
			t.Errorf("%s: %s is %v (present %v), results.json says %v", path, s, g, ok, v)
		}
	}
	for _, n := range res.Nodes {
		node := n.Name
		want(series("gdrcheck_build_info", "node", node, "version", res.Tool.Version), 1)
		want(series("gdrcheck_node_action_info", "node", node, "action", string(n.Action)), 1)
		for _, s := range n.Suites {
			for _, sp := range s.Specs {
				if sp.NeedsRemedy() {
					want(series("gdrcheck_spec_action_info", "node", node, "suite", s.Name, "spec", sp.Name, "action", string(sp.Action), "scope", string(sp.Scope), "entity", sp.Entity), 1)
				}
			}
		}
		if mech := n.Fact("mechanism"); mech != "" {
			want(series("gdrcheck_peer_memory_info", "node", node, "mechanism", mech, "peermem", n.Fact("peermem")), 1)
		}
		for _, g := range n.GPUs {
			gpu := []string{"node", node, "gpu", strconv.Itoa(g.Index), "bus_id", g.BusID}
			if g.NIC != "" {
				want(series("gdrcheck_gpu_nic_path_info", append(gpu, "nic", g.NIC, "path", g.Path)...), 1)
			}
			if g.BAR1TotalMiB != nil {
				want(series("gdrcheck_gpu_bar1_total_bytes", gpu...), float64(*g.BAR1TotalMiB)*(1<<20))
			}
			if g.PCIeWidth > 0 {
				want(series("gdrcheck_gpu_pcie_current_link_width", gpu...), float64(g.PCIeWidth))
			}
		}
		for _, r := range n.Runs {
			labels := []string{"node", node, "suite", r.Suite, "op", r.Op, "mode", r.Mode, "mem", r.Mem}
			if r.Ranks == 1 {
				// One rank moves nothing over a bus: no series.
				if g, ok := got[series("gdrcheck_busbw_bytes_per_second", labels...)]; ok {
					t.Errorf("%s: a one-rank %s run has busbw %v", path, r.Op, g)
				}
			} else if len(r.Points) > 0 {
				bps := 1e9
				if r.Unit == "Gb/s" {
					bps = 1e9 / 8
				}
				want(series("gdrcheck_busbw_bytes_per_second", labels...), r.BusBW*bps)
			}
			fallback := series("gdrcheck_fallback_detected", labels[:8]...)
			switch r.PathVerdict {
			case results.PathFallback:
				want(fallback, 1)
			case results.PathDirect:
				want(fallback, 0)
			}
		}
		for _, s := range n.Suites {
			want(series("gdrcheck_spec_failures", "node", node, "suite", s.Name), float64(s.Counts().Failed))
		}
	}
}

var timestampLine = regexp.MustCompile(`(?m)^(gdrcheck_last_run_timestamp_seconds\{[^}]*\}) .*$`)

// On the real 2 x H200 recording (dma-buf, NV18, no RDMA NIC) and the
// synthetic 8 x H100 rail node the textfile holds the node's mechanism,
// paths, BAR1 and bandwidths as those runs measured them; the H100 node's
// file is the golden one, its timestamp made stable.
func TestPromTextfileCarriesTheRecordedNodesEvidence(t *testing.T) {
	t.Parallel()
	_, res, path := runFixtureProm(t, "h200x2-nv18-vm")
	checkPromAgrees(t, path, res)
	got := promSeries(t, path)
	run := func(name, suite, op, mode string) string {
		return series(name, "node", "vm", "suite", suite, "op", op, "mode", mode, "mem", "")
	}
	socket := series("gdrcheck_nccl_transport_info", "node", "vm", "suite", "negative", "op", "all_reduce", "mode", "p2p-shm-disabled", "transport", "NET/Socket", "path_verdict", "fallback")
	wantSeries(t, got, map[string]float64{
		series("gdrcheck_peer_memory_info", "node", "vm", "mechanism", "dmabuf", "peermem", "absent"):                       1,
		series("gdrcheck_gpu_bar1_total_bytes", "node", "vm", "gpu", "1", "bus_id", "0000:00:07.0"):                         262144 << 20,
		series("gdrcheck_gpu_pcie_max_link_generation", "node", "vm", "gpu", "0", "bus_id", "0000:00:06.0"):                 5,
		run("gdrcheck_busbw_bytes_per_second", "collectives", "all_reduce", "direct"):                                       341.61e9,
		run("gdrcheck_busbw_bytes_per_second", "negative", "all_reduce", "p2p-disabled"):                                    27.79e9,
		run("gdrcheck_busbw_bytes_per_second", "negative", "all_reduce", "p2p-shm-disabled"):                                2.77e9,
		run("gdrcheck_busbw_baseline_ratio", "collectives", "sendrecv", "direct"):                                           1,
		series("gdrcheck_fallback_detected", "node", "vm", "suite", "collectives", "op", "all_reduce", "mode", "direct"):    0,
		series("gdrcheck_fallback_detected", "node", "vm", "suite", "negative", "op", "all_reduce", "mode", "p2p-disabled"): 1,
		socket: 1,
		series("gdrcheck_spec_failures", "node", "vm", "suite", "kernel"): 0,
	})
	for s := range got {
		if strings.HasPrefix(s, "gdrcheck_gpu_nic_path_info") {
			t.Errorf("a node without RDMA NICs has a GPU<->NIC path: %s", s)
		}
	}

	_, res, path = runFixtureProm(t, "h100x8-nvswitch-cx7-pix")
	checkPromAgrees(t, path, res)
	got = promSeries(t, path)
	wantSeries(t, got, map[string]float64{
		series("gdrcheck_gpu_nic_path_info", "node", "h100-node", "gpu", "0", "bus_id", "0000:18:00.0", "nic", "mlx5_0", "path", "PIX"):         1,
		series("gdrcheck_gpu_nic_path_info", "node", "h100-node", "gpu", "7", "bus_id", "0000:b9:00.0", "nic", "mlx5_7", "path", "PIX"):         1,
		series("gdrcheck_busbw_bytes_per_second", "node", "h100-node", "suite", "collectives", "op", "all_reduce", "mode", "direct", "mem", ""): 481.86e9,
		// Forced onto the network, NCCL reached GPU memory through the NICs.
		series("gdrcheck_fallback_detected", "node", "h100-node", "suite", "negative", "op", "all_reduce", "mode", "p2p-shm-disabled"): 0,
		series("gdrcheck_fallback_detected", "node", "h100-node", "suite", "negative", "op", "all_reduce", "mode", "gdr-loc"):          1,
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !timestampLine.Match(b) {
		t.Fatalf("%s has no gdrcheck_last_run_timestamp_seconds", path)
	}
	checkGolden(t, unchanged+"h100x8-nvswitch-cx7-pix.prom", timestampLine.ReplaceAllString(string(b), "$1 0"))
}

// checkAllocationAgrees checks a job's textfile against results.json,
// counted here the plain way: the verdict, the nodes by status and by
// failing suite, and that every series is the allocation's, at most
// 1,000 of them.
func checkAllocationAgrees(t *testing.T, path string, res *results.Results, jobID string) map[string]float64 {
	t.Helper()
	got := promSeries(t, path)
	a := func(name string, kv ...string) string {
		return series(name, append([]string{"node", "allocation"}, kv...)...)
	}
	code := res.ExitCode()
	want := map[string]float64{
		a("gdrcheck_job_exit_code"): float64(code),
		a("gdrcheck_job_verdict_info", "job_id", jobID, "verdict", []string{"pass", "fail", "unevaluable"}[code]): 1,
		a("gdrcheck_build_info", "version", res.Tool.Version):                                                     1,
	}
	status := map[string]float64{results.NodeEvaluated: 0, results.NodeUnevaluable: 0, results.NodeMissing: 0, results.NodeInterrupted: 0}
	failed := map[string]float64{}
	for _, n := range res.Nodes {
		if n.Name == results.AllocationNode || strings.HasSuffix(n.Name, results.ContainerSuffix) {
			continue
		}
		status[n.Status]++
		for _, s := range n.Suites {
			failed[s.Name] += 0
			if s.Counts().Failed > 0 {
				failed[s.Name]++
			}
		}
	}
	for st, k := range status {
		want[a("gdrcheck_job_nodes", "status", st)] = k
	}
	for s, k := range failed {
		want[a("gdrcheck_job_failed_nodes", "suite", s)] = k
	}
	wantSeries(t, got, want)
	for s := range got {
		if !strings.Contains(s, `node="allocation"`) {
			t.Errorf("%s: a node's own series in the job's textfile: %s", path, s)
		}
	}
	if len(got) > 1000 {
		t.Errorf("%s: %d series, want at most 1,000", path, len(got))
	}
	return got
}

// collect writes the allocation's textfile: the job's verdict and its
// nodes counted, a node that never reported among them, and none of the
// nodes' own series (their own node_exporters serve those).
func TestCollectWritesTheAllocationTextfileOfTheJob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, fixture := range map[string]string{"gpu01": "h100x8-nic-sys", "gpu02": "h100x8-proprietary-no-peermem"} {
		_, res, _ := runFixtureProm(t, fixture)
		res.Nodes[0].Name = name
		if err := os.MkdirAll(filepath.Join(dir, "nodes", name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := res.Write(filepath.Join(dir, "nodes", name, "results.json")); err != nil {
			t.Fatal(err)
		}
	}
	job := `{"id": "4711", "nodes": ["gpu01", "gpu02", "gpu03"], "started": "2026-12-01T10:00:00Z", "config": {}, "version": "test"}`
	if err := os.WriteFile(filepath.Join(dir, "job.json"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(t.TempDir(), "gdrcheck-job.prom")
	r := gdrcheck(t, "collect", dir, "--prom-textfile", prom)
	if r.code != 2 {
		t.Errorf("exit %d, want 2 (gpu03 never reported)\n%s", r.code, r.stderr)
	}
	res, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkPromtool(t, prom)
	got := checkAllocationAgrees(t, prom, res, "4711")
	a := func(name string, kv ...string) string {
		return series(name, append([]string{"node", "allocation"}, kv...)...)
	}
	wantSeries(t, got, map[string]float64{
		a("gdrcheck_job_allocated_nodes"):                                                 3,
		a("gdrcheck_job_nodes", "status", "missing"):                                      1,
		a("gdrcheck_job_nodes", "status", "evaluated"):                                    2,
		a("gdrcheck_job_failed_nodes", "suite", "topology"):                               1, // gpu01's SYS rail
		a("gdrcheck_job_peer_memory_nodes", "mechanism", "none", "peermem", "absent"):     1, // gpu02
		a("gdrcheck_job_peer_memory_nodes", "mechanism", "unknown", "peermem", "unknown"): 1, // gpu03
		a("gdrcheck_job_verdict_info", "job_id", "4711", "verdict", "unevaluable"):        1,
	})
	for s := range got {
		if strings.Contains(s, "gpu01") || strings.HasPrefix(s, "gdrcheck_gpu_") {
			t.Errorf("a node's series in the job's textfile: %s", s)
		}
	}
}

// A textfile that cannot be written fails the run like any other output
// (exit 2, naming the path) and leaves no results behind; a name the
// collector would never read is refused before anything runs.
func TestARunWhoseTextfileCannotBeWrittenFailsNamingIt(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	bad := filepath.Join(t.TempDir(), "no-such-dir", "gdrcheck.prom")
	r := gdrcheck(t, "run", "-q", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--suites", "topology", "--out", out, "--prom-textfile", bad)
	if r.code != 2 || !strings.Contains(r.stderr, fmt.Sprintf("writing %q", bad)) {
		t.Errorf("exit %d, stderr %q; want 2 naming %s", r.code, r.stderr, bad)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); !os.IsNotExist(err) {
		t.Errorf("results.json written although its set was not: %v", err)
	}
	r = gdrcheck(t, "run", "-q", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--suites", "topology", "--out", out, "--prom-textfile", filepath.Join(out, "gdrcheck.txt"))
	if r.code != 2 || !strings.Contains(r.stderr, "node_exporter's textfile collector reads only files ending in .prom") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// The shipped alert rules are rules Prometheus loads.
func TestTheShippedAlertRulesAreValid(t *testing.T) {
	t.Parallel()
	shippedRules(t)
	if out, err := exec.Command("promtool", "check", "rules", rulesFile).CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}
