package bench_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

const recorded = "../../fixtures/nccl-tests"

func runner(t *testing.T, recs map[string]string) bench.NCCLRunner {
	dir, env := fakebin.NCCLTests(t, []string{"all_reduce_perf", "all_gather_perf", "sendrecv_perf"}, recs)
	return bench.NCCLRunner{Dir: dir, Env: env}
}

func TestRunnerParsesTheRecordedRunOfEachMode(t *testing.T) {
	samples := 0
	r := runner(t, fakebin.H200Recordings(recorded))
	r.CPU = func() (float64, float64, error) { samples++; return float64(samples), float64(4 * samples), nil }
	cases := []struct {
		mode      nccl.Mode
		transport string
		busbw     float64
	}{
		{nccl.ModeDirect, "P2P/direct", 341.61},
		{nccl.ModeP2PDisabled, "SHM", 27.79},
		{nccl.ModeP2PSHMDisabled, "NET/Socket", 2.77},
	}
	for _, c := range cases {
		res := r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf", Args: []string{"-g", "2"}, Env: c.mode.Env})
		if res.Err != nil {
			t.Fatalf("%s: %v", c.mode.Name, res.Err)
		}
		if got := res.Log.Dominant(); got != c.transport {
			t.Errorf("%s: dominant transport %s, want %s", c.mode.Name, got, c.transport)
		}
		if got := res.BusBW(); got != c.busbw {
			t.Errorf("%s: busbw at the largest size %.2f, want %.2f", c.mode.Name, got, c.busbw)
		}
		if res.CPUPct == nil || *res.CPUPct != 25 {
			t.Errorf("%s: CPU %v, want 25%% from the sampler", c.mode.Name, res.CPUPct)
		}
		if !c.mode.Landed(res.Log.Dominant()) {
			t.Errorf("%s: landed on %s, expected %s", c.mode.Name, res.Log.Dominant(), c.mode.Expect)
		}
	}
}

func TestRunnerReportsFailuresWithTheirText(t *testing.T) {
	r := runner(t, map[string]string{
		"all_reduce-direct": "../../fixtures/corpus/nccl-tests/all_reduce_perf-nccltests369-gh200-2node-test-cuda-failure-device-busy.txt",
	})
	t.Setenv("GDRCHECK_FAKE_NCCL_EXIT", "1")
	res := r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf"})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "CUDA-capable device(s) is/are busy or unavailable") {
		t.Errorf("error %v does not quote the CUDA failure", res.Err)
	}

	res = r.Run(context.Background(), nccl.Spec{Binary: "broadcast_perf"})
	if !errors.Is(res.Err, nccl.ErrNotFound) {
		t.Errorf("missing binary: %v", res.Err)
	}
}

func TestRunnerStopsAHungRun(t *testing.T) {
	r := runner(t, fakebin.H200Recordings(recorded))
	r.Timeout = 300 * time.Millisecond
	t.Setenv("GDRCHECK_FAKE_NCCL_SLEEP", "20s")
	start := time.Now()
	res := r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf"})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "timed out after 300ms") {
		t.Errorf("error %v", res.Err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the hung run was not killed promptly")
	}
}

func TestMeasureRunsThePlanAndNotesMissingCollectives(t *testing.T) {
	r := runner(t, fakebin.H200Recordings(recorded))
	p := nccl.DefaultPlan(2, false, "")
	m := bench.MeasureNCCL(context.Background(), r, p, nccl.Expectation{P2P: nccl.ExpectYes}, nil, nil)
	var got []string
	for _, run := range m.Runs {
		got = append(got, run.Op+"/"+run.Mode.Name)
	}
	want := "all_reduce/direct all_gather/direct sendrecv/direct all_reduce/p2p-disabled all_reduce/p2p-shm-disabled"
	if strings.Join(got, " ") != want {
		t.Errorf("runs %v, want %s", got, want)
	}
	if strings.Join(m.Missing, ",") != "reduce_scatter_perf" {
		t.Errorf("missing %v", m.Missing)
	}
	d, _ := m.Direct("all_reduce")
	shm, _ := m.Find("all_reduce", "p2p-disabled")
	ratio, ok := nccl.Ratio(shm.Result, d.Result)
	// SHM at 1 GiB: 27.79 of 331.46 GB/s direct.
	if !ok || ratio < 0.0838 || ratio > 0.0839 {
		t.Errorf("ratio %v %v", ratio, ok)
	}
}

// A run its timeout kills halfway through the table is partial, and the
// error names the last size read; a run that exits 0 with a table cut
// short is no pass either.
func TestARunCutShortIsPartialNamingTheLastSize(t *testing.T) {
	rec := recorded + "/all_reduce_perf-h200x2-nv18-direct-p2p.txt"
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte("\n     2097152 "))
	if at < 0 {
		t.Fatal("no 2 MiB row in the recording")
	}
	r := runner(t, map[string]string{"all_reduce-direct": rec})
	r.Timeout = time.Second
	t.Setenv("GDRCHECK_FAKE_NCCL_CUT", strconv.Itoa(at+1))
	res := r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf", Args: []string{"-g", "2"}})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "timed out after 1s; partial: ") || !strings.Contains(res.Err.Error(), "1 MiB") {
		t.Errorf("timeout: %v; want the partial output named, its last row 1 MiB", res.Err)
	}

	cut := filepath.Join(t.TempDir(), "cut.txt")
	if err := os.WriteFile(cut, b[:at+1], 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GDRCHECK_FAKE_NCCL_CUT", "")
	r = runner(t, map[string]string{"all_reduce-direct": cut})
	res = r.Run(context.Background(), nccl.Spec{Binary: "all_reduce_perf", Args: []string{"-g", "2"}})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "output is cut short or damaged; partial: ") || !strings.Contains(res.Err.Error(), "1 MiB") {
		t.Errorf("exit 0 with a cut table: %v; want it cut short, its last row 1 MiB", res.Err)
	}
}
