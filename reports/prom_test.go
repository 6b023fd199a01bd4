package reports

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/gdrcheck/gdrcheck/results"
)

func mib(v uint64) *uint64 { return &v }

// promSample is sample() with what the textfile carries besides specs: a
// GPU and its rail, NCCL runs direct and forced (one with a baseline and
// counters that grew), a perftest run in Gb/s, and the scaling runs.
func promSample() *results.Results {
	r := sample()
	r.Tool.Version = "v1.2.3"
	n := &r.Nodes[0]
	n.Profile = "h100x8-ndr"
	n.Facts = append(n.Facts, results.Fact{Name: "mechanism", Value: "dmabuf"}, results.Fact{Name: "peermem", Value: "absent"}, results.Fact{Name: "nccl", Value: "2.28.3"})
	n.GPUs = []results.GPU{
		{Index: 0, BusID: "0000:18:00.0", Name: "NVIDIA H100 80GB HBM3", NUMA: 0, NIC: "mlx5_0", Path: "PIX", PCIeGen: 5, PCIeMaxGen: 5, PCIeWidth: 8, PCIeMaxWidth: 16, BAR1TotalMiB: mib(131072), BAR1FreeMiB: mib(131071)},
		{Index: -1, BusID: "0000:19:00.0", NUMA: 1, PCIeWidth: 16, PCIeMaxWidth: 16}, // seen by sysfs alone
	}
	n.Runs = []results.Run{
		{Suite: "collectives", Op: "all_reduce", Mode: "direct", Transport: "NET/IB/GDRDMA", PathVerdict: results.PathDirect, BusBW: 360.5,
			Points:   []results.Point{{Size: 8 << 30, BusBW: 360.5}},
			Baseline: &results.Band{Profile: "h100x8-ndr", Metric: "nccl.all_reduce.busbw", Expected: 400, Low: 360, High: 440},
			Fabric: &results.Fabric{Ports: 8, NICBytes: map[string]uint64{"mlx5_0": 2000000000}, TotalBytes: 2000000000,
				Errors:        []string{"mlx5_0 port 1 symbol_error +12"},
				ErrorCounters: []results.Counter{{NIC: "mlx5_0", Port: 1, Name: "symbol_error", Delta: 12}}}},
		{Suite: "negative", Op: "all_reduce", Mode: "gdr-loc", Transport: "NET/IB", PathVerdict: results.PathFallback, BusBW: 40, RatioToDirect: f(0.111),
			Points: []results.Point{{Size: 1 << 30, BusBW: 40}}},
		{Suite: "negative", Op: "all_reduce", Mode: "ib-disabled", PathVerdict: results.PathUnknown, Error: "exit status 1"},
		{Suite: "fabric", Op: "write_bw", Mode: "loopback mlx5_0", Mem: "cuda-dmabuf", Unit: "Gb/s", BusBW: 392,
			Points: []results.Point{{Size: 65536, BusBW: 392}}, Fabric: &results.Fabric{Ports: 8, NICBytes: map[string]uint64{}}},
	}
	r.Runs = []results.Run{
		{Suite: "scale", Op: "all_reduce", Mode: "direct", Nodes: []string{"gpu01", "gpu02"}, BusBW: 351.2, Points: []results.Point{{Size: 2 << 30, BusBW: 351.2}},
			Baseline: &results.Band{Metric: "nccl.all_reduce.busbw.nodes2", Expected: 390, Low: 351, High: 429}},
		{Suite: "pairwise", Op: "all_reduce", Mode: "direct", Nodes: []string{"gpu01", "gpu02"}, BusBW: 351.2, Points: []results.Point{{Size: 2 << 30, BusBW: 351.2}}},
	}
	return r
}

func TestPrometheusTextfileMatchesGoldenAndPassesTheLinter(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePrometheus(&buf, promSample()); err != nil {
		t.Fatal(err)
	}
	golden := "testdata/prom.golden.prom"
	if *update {
		os.WriteFile(golden, buf.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("%s differs (go test ./reports -update rewrites it):\n%s", golden, buf.String())
	}
	checkPromLinters(t, buf.Bytes())
}

// checkPromLinters runs both linters over a textfile: client_golang's,
// and the promtool Debian ships, whose older rules differ (no type name
// anywhere in a name). Neither may have anything to say.
func checkPromLinters(t *testing.T, b []byte) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(b)).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %+v", err, problems)
	}
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Fatalf("promtool is needed to lint the textfile (make deps installs Debian's prometheus): %v", err)
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(b)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// The conversions a dashboard relies on: results.json's MiB and GB/s
// (Gb/s for perftest) become bytes and bytes per second.
func TestPrometheusTextfileIsInBaseUnits(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePrometheus(&buf, promSample()); err != nil {
		t.Fatal(err)
	}
	x := buf.String()
	for _, want := range []string{
		`gdrcheck_gpu_bar1_total_bytes{bus_id="0000:18:00.0",gpu="0",node="gpu01.cluster.example"} 1.37438953472e+11`,
		`gdrcheck_busbw_bytes_per_second{mem="",mode="direct",node="gpu01.cluster.example",op="all_reduce",suite="collectives"} 3.605e+11`,
		`gdrcheck_busbw_bytes_per_second{mem="cuda-dmabuf",mode="loopback mlx5_0",node="gpu01.cluster.example",op="write_bw",suite="fabric"} 4.9e+10`,
		`gdrcheck_busbw_baseline_ratio{mem="",mode="direct",node="gpu01.cluster.example",op="all_reduce",suite="collectives"} 0.90125`,
		`gdrcheck_fallback_detected{mode="gdr-loc",node="gpu01.cluster.example",op="all_reduce",suite="negative"} 1`,
		`gdrcheck_fabric_port_error_delta{counter="symbol_error",mem="",mode="direct",nic="mlx5_0",node="gpu01.cluster.example",op="all_reduce",port="1",suite="collectives"} 12`,
		`gdrcheck_scaling_busbw_bytes_per_second{node="allocation",nodes="2",op="all_reduce"} 3.512e+11`,
		`gdrcheck_node_info{cuda_driver="",driver="",driver_flavour="",gpu_model="",iommu="",kernel="",mofed="",nccl="",node="gpu02",profile="",rdma_core="",status="missing"} 1`,
	} {
		if !strings.Contains(x, want+"\n") {
			t.Errorf("textfile lacks %s", want)
		}
	}
	// Not measured is not zero: the run that failed has no bandwidth and
	// no fallback verdict, the GPU NVML missed no generation.
	for _, bad := range []string{`mode="ib-disabled"`, `gdrcheck_gpu_pcie_current_link_generation{bus_id="0000:19:00.0"`, `suite="pairwise"`} {
		if strings.Contains(x, bad) {
			t.Errorf("textfile has %s", bad)
		}
	}
}

func TestPrometheusTextfileRefusesAUnitItCannotConvert(t *testing.T) {
	r := promSample()
	r.Nodes[0].Runs[3].Unit = "MB/s"
	err := WritePrometheus(&bytes.Buffer{}, r)
	if err == nil || !strings.Contains(err.Error(), `node gpu01.cluster.example, fabric run of write_bw (loopback mlx5_0): bandwidth unit "MB/s"`) {
		t.Errorf("error %v", err)
	}
}

// The textfile is one of the set: when it cannot be written, results.json
// stays the previous run's and the error names the textfile.
func TestWriteAllWithATextfileThatCannotBeWrittenLeavesThePreviousSet(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "gdrcheck.prom")
	if err := WriteAll(dir, promSample(), WriteOptions{PromTextfile: prom}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if b, err := os.ReadFile(prom); err != nil || !bytes.Contains(b, []byte(`gdrcheck_build_info{node="gpu01.cluster.example",version="v1.2.3"} 1`)) {
		t.Fatalf("textfile %v:\n%s", err, b)
	}
	next := promSample()
	next.Finished = next.Finished.Add(time.Hour)
	bad := filepath.Join(dir, "no-such-dir", "gdrcheck.prom")
	if err := WriteAll(dir, next, WriteOptions{PromTextfile: bad}); err == nil || !strings.Contains(err.Error(), `writing "`+bad+`"`) {
		t.Fatalf("error %v, want one naming %s", err, bad)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "results.json")); !bytes.Equal(after, before) {
		t.Errorf("results.json changed although the set was not written")
	}
}

// One NCCL rank (the real one-H200 node): the reductions print busbw 0
// and sendrecv a GPU's copy to itself (874276 "GB/s"). No series says
// either is bus bandwidth.
func TestPrometheusTextfileHasNoBusBandwidthOfOneRank(t *testing.T) {
	r := &results.Results{Schema: results.Schema, Nodes: []results.Node{{Name: "vm", Status: results.NodeEvaluated, Runs: []results.Run{
		{Suite: "collectives", Tool: "sendrecv_perf", Op: "sendrecv", Mode: "direct", Ranks: 1, BusBW: 874276, Points: []results.Point{{Size: 1 << 31, BusBW: 874276}}},
		{Suite: "collectives", Tool: "all_reduce_perf", Op: "all_reduce", Mode: "direct", Ranks: 1, Points: []results.Point{{Size: 1 << 31}}},
		{Suite: "collectives", Tool: "all_reduce_perf", Op: "all_gather", Mode: "direct", Ranks: 2, BusBW: 300},
	}}}}
	var buf bytes.Buffer
	if err := WritePrometheus(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, `gdrcheck_busbw_bytes_per_second{mem="",mode="direct",node="vm",op="sendrecv"`) {
		t.Errorf("a one-rank sendrecv is reported as bus bandwidth:\n%s", out)
	}
	if strings.Contains(out, `gdrcheck_busbw_bytes_per_second{mem="",mode="direct",node="vm",op="all_reduce"`) {
		t.Errorf("a one-rank all_reduce is reported as busbw 0:\n%s", out)
	}
	if !strings.Contains(out, `gdrcheck_busbw_bytes_per_second{mem="",mode="direct",node="vm",op="all_gather",suite="collectives"} 3e+11`) {
		t.Errorf("the two-rank run is missing:\n%s", out)
	}
}

// A node's kernel string of invalid UTF-8 with a newline in it (a
// recording's): the node's textfile is still written, its label one line
// of valid UTF-8, where the registry used to refuse the whole file.
func TestPrometheusTextfileTakesAnInvalidFact(t *testing.T) {
	r := promSample()
	r.Nodes[0].Facts = append(r.Nodes[0].Facts, results.Fact{Name: "kernel", Value: "6.8\xff\nbad_metric 1"})
	var buf bytes.Buffer
	if err := WritePrometheus(&buf, r); err != nil {
		t.Fatalf("an invalid fact lost the textfile: %v", err)
	}
	if !strings.Contains(buf.String(), `kernel="6.8`+"\uFFFD"+` bad_metric 1"`) || strings.Contains(buf.String(), "\nbad_metric 1") {
		t.Errorf("kernel label not cleaned:\n%s", buf.String())
	}
}
