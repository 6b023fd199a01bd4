package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

func specByName(res *results.Results, suite, name string) (results.Spec, bool) {
	for _, s := range res.Nodes[0].Suites {
		if s.Name != suite {
			continue
		}
		for _, sp := range s.Specs {
			if sp.Name == name {
				return sp, true
			}
		}
	}
	return results.Spec{}, false
}

// On the recorded H200 node (no RDMA devices) the fabric suite skips with
// the reason, and the NIC-bytes check says nothing crossed a NIC.
func TestFabricSuiteOnANodeWithoutRDMADevices(t *testing.T) {
	r, res := ncclRun(t, fakebin.H200Recordings(recorded), "--suites", "collectives,fabric")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	for _, name := range []string{"has every rail port active at its expected rate", "keeps the error counters still while the benchmarks run", "reaches with GPU memory the RDMA bandwidth it reaches with host memory"} {
		sp, _ := specByName(res, "fabric", name)
		if sp.State != results.StateSkipped || !strings.Contains(sp.Message, "no RDMA devices") {
			t.Errorf("%s: %s %q", name, sp.State, sp.Message)
		}
	}
	sp, _ := specByName(res, "fabric", "moves nothing through a NIC in a single-node run that stays on NVLink")
	if sp.State != results.StatePassed || strings.Join(sp.Notes, "\n") != "nothing crossed a NIC: the node has no RDMA NICs (0 bytes in 3 runs)" {
		t.Errorf("NIC bytes: %s %q", sp.State, sp.Notes)
	}
}

// A fixture node whose counters move while the benchmark runs: the fake
// nccl-tests writes mlx5_0's symbol_error and data counters, as a bad
// cable and a run that wrongly went through the NIC would.
func TestFabricSuiteCatchesCountersThatMoveDuringARun(t *testing.T) {
	root := t.TempDir()
	if err := extract(nodes+"h100x8-nvswitch-cx7-pix.ttar", root); err != nil {
		t.Fatal(err)
	}
	port, _ := filepath.Glob(filepath.Join(root, "sys/devices/*/*/*/*/*/infiniband/mlx5_0/ports/1"))
	if len(port) != 1 {
		t.Fatalf("mlx5_0 port 1 not found: %v", port)
	}
	counters := filepath.Join(port[0], "counters")
	// 500 M words of 4 bytes each way: 1907 MiB crossed mlx5_0.
	t.Setenv("GDRCHECK_FAKE_NCCL_WRITE", strings.Join([]string{
		counters + "/symbol_error=12",
		counters + "/port_xmit_data=250000000",
		counters + "/port_rcv_data=250000000",
	}, ";"))
	dir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf"}, map[string]string{"all_reduce-direct": recorded + "/all_reduce_perf-h200x2-nv18-direct-p2p.txt"})
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	out := t.TempDir()
	prom := filepath.Join(out, "gdrcheck.prom")
	r := gdrcheck(t, "run", "-q", "--host-root", root, "--nccl-tests-dir", dir, "--out", out, "--suites", "collectives,fabric", "--prom-textfile", prom)
	res, err := results.Read(out + "/results.json")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.stdout, r.stderr)
	}
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	sp, _ := specByName(res, "fabric", "keeps the error counters still while the benchmarks run")
	if sp.State != results.StateFailed || !strings.HasPrefix(sp.Message, "mlx5_0 port 1 symbol_error +12 grew during all_reduce_perf (direct)") {
		t.Errorf("errors: %s %q", sp.State, sp.Message)
	}
	sp, _ = specByName(res, "fabric", "moves nothing through a NIC in a single-node run that stays on NVLink")
	if sp.State != results.StateFailed || !strings.HasPrefix(sp.Message, "1907 MiB crossed mlx5_0 during all_reduce_perf") {
		t.Errorf("NIC bytes: %s %q", sp.State, sp.Message)
	}
	run := res.Nodes[0].Runs[0]
	if run.Fabric == nil || run.Fabric.NICBytes["mlx5_0"] != 2000000000 || len(run.Fabric.Errors) != 1 ||
		len(run.Fabric.ErrorCounters) != 1 || run.Fabric.ErrorCounters[0] != (results.Counter{NIC: "mlx5_0", Port: 1, Name: "symbol_error", Delta: 12}) {
		t.Fatalf("results.json fabric %+v", run.Fabric)
	}
	// The Prometheus textfile carries the same deltas as numbers.
	checkPromtool(t, prom)
	got := promSeries(t, prom)
	labels := []string{"node", "h100-node", "suite", "collectives", "op", "all_reduce", "mode", "direct", "mem", ""}
	wantSeries(t, got, map[string]float64{
		series("gdrcheck_fabric_port_error_delta", append(labels, "nic", "mlx5_0", "port", "1", "counter", "symbol_error")...): 12,
		series("gdrcheck_fabric_grown_error_counters", labels...):                                                              1,
		series("gdrcheck_fabric_traffic_bytes", labels...):                                                                     2e9,
		series("gdrcheck_spec_failures", "node", "h100-node", "suite", "fabric"):                                               2,
	})
}

// Through a rail NIC, host memory reaches 381 Gb/s up to 64 KiB and then
// fails with status 10 (a real recording): the fabric suite names it.
func TestFabricSuiteReportsAFailedRDMARunWithItsCause(t *testing.T) {
	pdir, penv := fakebin.Perftest(t, []string{"ib_write_bw"}, map[string]string{
		"ib_write_bw-host":        "../../fixtures/corpus/perftest/gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt",
		"ib_write_bw-cuda":        "../../fixtures/corpus/perftest/gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt",
		"ib_write_bw-cuda-dmabuf": "../../fixtures/corpus/perftest/gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt",
	})
	for _, e := range penv {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	out := t.TempDir()
	r := gdrcheck(t, "run", "-q", "--host-root", nodes+"h100x8-nvswitch-cx7-pix.ttar", "--perftest-dir", pdir, "--out", out, "--suites", "fabric")
	res, err := results.Read(out + "/results.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, r.stderr)
	}
	sp, _ := specByName(res, "fabric", "reaches with GPU memory the RDMA bandwidth it reaches with host memory")
	if sp.State != results.StateFailed || !strings.Contains(sp.Message, "ib_write_bw through mlx5_0 with host memory failed") || !strings.Contains(sp.Message, "status 10") {
		t.Errorf("%s %q", sp.State, sp.Message)
	}
	if n := len(res.Nodes[0].Runs); n != 24 {
		t.Errorf("%d runs, want 8 rails x 3 memories", n)
	}
}
