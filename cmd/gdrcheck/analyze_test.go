package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

const (
	corpusDebug   = "../../fixtures/corpus/nccl-debug/"
	corpusTests   = "../../fixtures/corpus/nccl-tests/"
	ncclTestdata  = "../../harness/nccl/testdata/"
	directRun     = recorded + "/all_reduce_perf-h200x2-nv18-direct-p2p.txt"
	dmabufRun     = perftestCorpus + "gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt"
	noModuleLog   = ncclTestdata + "ib-2node-nccl2.12-gdr-disabled-no-module-synthetic.txt"
	regMRLog      = ncclTestdata + "ib-nccl2.12-ibv_reg_mr-enomem-subsys-env-synthetic.txt"
	wrongElements = corpusTests + "all_reduce_perf-nccltests369-gh200-2node-slingshot-cxi-wrong-96-FAILED.txt"
	rerunHint     = "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM"
)

// cutAfterLine returns file up to and including the line of the n-th
// occurrence of s: a run killed between two lines.
func cutAfterLine(t *testing.T, file, s string, n int) string {
	t.Helper()
	cut := cutAfter(t, file, s, n)
	b, _ := os.ReadFile(file)
	return cut + strings.SplitAfter(string(b[len(cut):]), "\n")[0]
}

// cutAfter returns file up to and including the n-th occurrence of s: a
// recording truncated the way a killed run or a trimmed paste leaves it.
func cutAfter(t *testing.T, file, s string, n int) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data, off := string(b), 0
	for ; n > 0; n-- {
		i := strings.Index(data[off:], s)
		if i < 0 {
			t.Fatalf("%s has fewer than n %q", file, s)
		}
		off += i + len(s)
	}
	return data[:off]
}

type analyzeCase struct {
	name   string
	cmd    func() *cobra.Command
	stdin  string   // read as "-" when file is empty
	file   string   // a fixture, or a name in the case's temporary folder holding stdin
	args   []string // more flags
	code   int
	stdout []string // substrings
	stderr []string
}

func runAnalyzeCases(t *testing.T, cases []analyzeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file, stdin := c.file, ""
			switch {
			case file == "":
				file, stdin = "-", c.stdin
			case c.stdin != "":
				file = filepath.Join(t.TempDir(), file)
				if err := os.WriteFile(file, []byte(c.stdin), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, stderr, code := analyzeIn(t, c.cmd(), stdin, append([]string{file}, c.args...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr: %s", code, c.code, out, stderr)
			}
			for _, want := range c.stdout {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, want := range c.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("standard error lacks %q: %s", want, stderr)
				}
			}
			if c.code != 2 && stderr != "" {
				t.Errorf("standard error %q for exit %d", stderr, c.code)
			}
		})
	}
}

func TestAnalyzeNCCLLogExitCodes(t *testing.T) {
	t.Parallel()
	log := newAnalyzeNCCLLogCmd
	runAnalyzeCases(t, []analyzeCase{
		{
			name: "0: a whole recorded run whose every connection is P2P", cmd: log, file: directRun,
			stdout: []string{"result: pass: every channel connection took the direct path"},
		},
		{
			name: "1: the recorded forced fallback to SHM", cmd: log, file: recorded + "/all_reduce_perf-h200x2-nv18-p2p-disabled-shm.txt", code: 1,
			stdout: []string{"result: failure: NCCL fell back: 8 of 8 connections used SHM"},
		},
		{
			name: "1: a NET/IB fallback shows NCCL's (no module) hint with its nudge", cmd: log, file: noModuleLog, code: 1,
			stdout: []string{
				"hint (line 11, 2 NICs): NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)",
				"load nvidia_peermem", "DMA-BUF, which needs NCCL 2.13+", "open GPU kernel modules R515+, kernel 5.12+ and rdma-core 34+",
				"result: failure: NCCL fell back: 8 of 8 connections used NET/IB without GDRDMA",
			},
		},
		{
			name: "1: a failed registration shows its WARN and error trace with their lines", cmd: log, file: regMRLog, code: 1,
			stdout: []string{
				"warning (line 6): misc/ibvwrap.cc:262: Call to ibv_reg_mr failed with error Cannot allocate memory",
				"error (line 7): transport/net_ib.cc:710 -> 2",
				"result: failure: NCCL failed: a libibverbs call failed (a registration, QP or device call the NIC refused): line 6: Call to ibv_reg_mr failed with error Cannot allocate memory (misc/ibvwrap.cc:262), then 4 error traces from line 7",
			},
		},
		{
			name: "1: the published IB completion error", cmd: log, file: corpusDebug + "mlengineering-azure-2node-net-ib-ib+roce-completion-error12-vendor129.txt", code: 1,
			stdout: []string{"warning (line 2): transport/net_ib.cc:1296: NET/IB : Got completion from peer 10.2.0.5<33092> with error 12", "error (line 6): proxy.cc:858 -> 6 [Proxy Thread]"},
		},
		{
			name: "1: a warning in a log without a direct connection", cmd: log, file: corpusDebug + "azure-ndh100v5-net-ib-9hca-ib+roce-gdr-enabled-xml-busid-warn.txt", code: 1,
			stdout: []string{"warning (line 6): graph/xml.h:85: Attribute busid of node nic not found", "partial: no communicator reached Init COMPLETE"},
		},
		{
			name: "2: nccl-tests output without NCCL debug lines says how to rerun", cmd: log, file: corpusTests + "all_reduce_perf-gcp-a3mega-h100-2node-16rank.txt", code: 2,
			stderr: []string{"no recognisable output: no NCCL debug line; rerun with " + rerunHint},
		},
		{
			name: "2: nccl-tests output with only NCCL's version line says how to rerun", cmd: log, file: corpusTests + "all_gather_perf-gke-a4-b200-2node-16rank.txt", code: 2,
			stdout: []string{"result: cannot judge: no channel connection line to judge; rerun with " + rerunHint},
			stderr: []string{"no channel connection line to judge; rerun with " + rerunHint},
		},
		{
			// Direct so far, but a later connection could still fall back.
			name: "2: a recorded run killed in its table", cmd: log, file: "killed.txt", stdin: cutAfterLine(t, directRun, "    float     sum", 12), code: 2,
			stdout: []string{"- 48 of 48 connections used P2P/direct"},
			stderr: []string{"the log does not cover a whole run: 2 of 2 communicators that reached Init COMPLETE were not destroyed", rerunHint},
		},
		{
			name: "2: a published excerpt, direct as far as it goes", cmd: log, file: corpusDebug + "a100pcie-2node-cx5-cx6-gdr-enabled-dmabuf-netgdrlevel-sys.txt", code: 2,
			stderr: []string{"the log does not cover a whole run"},
		},
		{name: "2: empty input", cmd: log, code: 2, stderr: []string{"no NCCL debug line; rerun with " + rerunHint}},
	})
}

func TestAnalyzeNCCLTestsExitCodes(t *testing.T) {
	t.Parallel()
	tests := newAnalyzeNCCLTestsCmd
	runAnalyzeCases(t, []analyzeCase{
		{name: "0: a whole recorded run", cmd: tests, file: directRun, stdout: []string{"average busbw: 93.843 GB/s", "result: pass: 29 sizes without a failure"}},
		{name: "0: its -J JSON", cmd: tests, file: recorded + "/all_reduce_perf-h200x2-nv18-direct-p2p.json", stdout: []string{"result: pass: 29 sizes"}},
		{
			name: "1: wrong elements and their test failures, with their lines", cmd: tests, file: wrongElements, code: 1,
			stdout: []string{"failure on line 43: gpu-1-1 pid 662195: Test failure common.cu:1189", "result: failure: nccl-tests reported a failure on line 43"},
		},
		{
			name: "1: CUDA failures and no table", cmd: tests, file: corpusTests + "all_reduce_perf-nccltests369-gh200-2node-test-cuda-failure-device-busy.txt", code: 1,
			stdout: []string{"failure on line 14: gpu-1-1: Test CUDA failure common.cu:1304 CUDA-capable device(s) is/are busy or unavailable"},
		},
		{
			name: "1: wrong elements in an output cut after them", cmd: tests, file: "cut.txt", stdin: cutAfterLine(t, wrongElements, "     1048576", 1), code: 1,
			stdout: []string{
				`partial: the table stops after the 1 MiB row (18 rows) without the "# Out of bounds values"`,
				"result: failure: nccl-tests found 128 wrong elements at 1 MiB",
			},
		},
		{
			name: "2: a file with no result table", cmd: tests, file: corpusDebug + "a100pcie-2node-cx5-cx6-gdr-enabled-dmabuf-netgdrlevel-sys.txt", code: 2,
			stderr: []string{"partial nccl-tests output: no result row and no failure line", `a whole run ends with its "# Avg bus bandwidth" line`},
		},
		{
			name: "2: a run killed in its table names the last size read", cmd: tests, file: "killed.txt", stdin: cutAfterLine(t, directRun, "    float     sum", 12), code: 2,
			stdout: []string{"| 16 KiB |"},
			stderr: []string{`the table stops after the 16 KiB row (12 rows) without the "# Out of bounds values" and "# Avg bus bandwidth" footer`},
		},
		{
			name: "2: a run cut inside a row does not read it", cmd: tests, file: "cut.txt", stdin: cutAfter(t, directRun, "       32768          8192     float     sum      -1", 1), code: 2,
			stderr: []string{"the output ends mid-line after the 16 KiB row; the cut line (line "},
		},
		{
			name: "2: a run killed before its table", cmd: tests, file: "init.txt", stdin: cutAfter(t, directRun, "Init COMPLETE", 2), code: 2,
			stderr: []string{"no result row and no failure line"},
		},
		{
			name: "2: a -J JSON cut in a row", cmd: tests, file: "cut.json", code: 2,
			stdin:  cutAfter(t, recorded+"/all_reduce_perf-h200x2-nv18-direct-p2p.json", `{"size":2048,`, 1),
			stderr: []string{"the JSON document stops or is damaged after 8 results (the last at 1 KiB)"},
		},
		{
			name: "2: an NCCL log snippet is not nccl-tests output", cmd: tests, file: corpusDebug + "azure-ndh100v5-net-ib-9hca-ib+roce-gdr-enabled-xml-busid-warn.txt", code: 2,
			stderr: []string{"no recognisable output: expected what all_reduce_perf and the other nccl-tests binaries print"},
		},
		{name: "2: empty input", cmd: tests, code: 2, stderr: []string{"no recognisable output"}},
	})
}

func TestAnalyzePerftestExitCodes(t *testing.T) {
	t.Parallel()
	pt := newAnalyzePerftestCmd
	failedRun := perftestCorpus + "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt"
	cutRow := cutAfter(t, dmabufRun, "52.45", 1)
	runAnalyzeCases(t, []analyzeCase{
		{name: "0: a whole DMA-BUF run", cmd: pt, file: dmabufRun, stdout: []string{"result: pass: 23 sizes, no failure"}},
		{name: "1: a completion error", cmd: pt, file: failedRun, code: 1, stdout: []string{"cause (completion, line 43)"}},
		{
			name: "1: a completion error in an output cut after it", cmd: pt, stdin: cutAfter(t, failedRun, "Failed status 10: wr_id 0 syndrom 0x88\n", 1), code: 1,
			stdout: []string{"result: failure: perftest failed (completion) on line 43"},
		},
		{
			// The issue: "bandwidth at 2 KiB: 52 Gb/s", exit 0, no partial flag.
			name: "2: a run cut inside the 2 KiB row", cmd: pt, stdin: cutRow, code: 2,
			stdout: []string{"bandwidth at the largest size read, 1 KiB: peak 28.62 Gb/s"},
			stderr: []string{"partial perftest output: the output ends mid-line after the 1 KiB row; the cut line (line 48) was not read"},
		},
		{
			name: "2: a run killed after its header", cmd: pt, stdin: cutAfter(t, dmabufRun, "MsgRate[Mpps]\n", 1), code: 2,
			stderr: []string{"the table stops after its header without a row"},
		},
		{name: "2: an NCCL log", cmd: pt, file: corpusDebug + "nccl2345-h200-roce-2rail-mixed-gdrdma-and-hostmem-far-nic.txt", code: 2, stderr: []string{"no perftest output found: expected what ib_write_bw"}},
		{name: "2: an nccl-tests run with NCCL lines", cmd: pt, file: directRun, code: 2, stderr: []string{"no perftest output found"}},
		{name: "2: a line that only says failed", cmd: pt, stdin: "hello\nfailed to register memory\n", code: 2, stderr: []string{"no perftest output found"}},
		{name: "2: empty input", cmd: pt, code: 2, stderr: []string{"no perftest output found"}},
	})
	// The cut row is not a result in the JSON either.
	out, _, code := analyzePerftest(t, cutRow, "-", "--format", "json")
	var got struct {
		Rows    []any   `json:"rows"`
		Peak    float64 `json:"bw_peak_gbps"`
		Partial bool    `json:"partial"`
		Reason  string  `json:"partial_reason"`
		Error   *string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if code != 2 || len(got.Rows) != 10 || got.Peak != 28.62 || !got.Partial || got.Reason == "" || got.Error == nil || *got.Error != "" {
		t.Errorf("exit %d, %+v", code, got)
	}
}

func TestAnalyzeHelpSaysWhatTheExitCodesMean(t *testing.T) {
	t.Parallel()
	for _, cmd := range []*cobra.Command{newAnalyzeCmd(), newAnalyzeNCCLLogCmd(), newAnalyzeNCCLTestsCmd(), newAnalyzePerftestCmd()} {
		for _, want := range []string{"Exit codes:", "0  what it judged passed", "1  it judged a failure", "2  nothing it can judge", "partial"} {
			if !strings.Contains(cmd.Long, want) {
				t.Errorf("%s --help lacks %q", cmd.Name(), want)
			}
		}
	}
}
