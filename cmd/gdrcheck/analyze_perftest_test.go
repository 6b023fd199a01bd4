package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

const perftestCorpus = "../../fixtures/corpus/perftest/"

// analyzePerftest runs `gdrcheck analyze perftest` in process and returns
// its output and exit code.
func analyzePerftest(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return analyzeIn(t, newAnalyzePerftestCmd(), stdin, args...)
}

// analyzeIn runs an analyze subcommand in process and returns its output,
// standard error and exit code, as main would exit.
func analyzeIn(t *testing.T, cmd *cobra.Command, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	code := 0
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.err != nil {
			errOut.WriteString(ee.err.Error())
		}
	case err != nil:
		code = 2 // main's answer to a plain error: nothing was evaluated
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

func TestAnalyzePerftestClassifiesEveryCorpusOutput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		file  string
		args  []string
		code  int
		peak  float64
		avg   float64
		size  float64
		mem   string
		error string // substring; "" wants an empty error
	}{
		{
			name: "the DMA-BUF run on an H200 with a CX-7 RoCE NIC",
			file: perftestCorpus + "gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt",
			peak: 140.55, avg: 140.40, size: 8388608, mem: "cuda-dmabuf",
		},
		{
			name: "host memory failing with a remote access error after 64 KiB",
			file: perftestCorpus + "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt",
			code: 1, peak: 381.50, avg: 381.41, size: 65536, mem: "host",
			error: "Completion with error at client; Failed status 10: wr_id 0 syndrom 0x88 (IBV_WC_REM_ACCESS_ERR); Failed to complete run_iter_bw function successfully",
		},
		{
			name: "the GPU Operator excerpt, which does not say where its buffers were",
			file: perftestCorpus + "nvidia-cloudnativedocs-gpuop-ib_write_bw-use_cuda_dmabuf-roce-92gbps-rst-indented.txt",
			peak: 92.39, avg: 92.39, size: 8388608, mem: "",
		},
		{
			name: "the same excerpt, with --mem saying what ran",
			file: perftestCorpus + "nvidia-cloudnativedocs-gpuop-ib_write_bw-use_cuda_dmabuf-roce-92gbps-rst-indented.txt",
			args: []string{"--mem", "cuda-dmabuf"},
			peak: 92.39, avg: 92.39, size: 8388608, mem: "cuda-dmabuf",
		},
		{
			name: "an --out_json file",
			file: "../../harness/perftest/testdata/perftest_out-write_bw-cuda-synthetic.json",
			peak: 140.55, avg: 140.40, size: 8388608, mem: "cuda",
		},
		{
			name: "peermem missing: the MR cannot be registered",
			file: "../../harness/perftest/testdata/ib_write_bw-cuda-peermem-missing-couldnt-allocate-mr-synthetic.txt",
			code: 1, mem: "cuda",
			error: "Couldn't allocate MR with error=14 (EFAULT)",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := analyzePerftest(t, "", append([]string{c.file, "--format", "json"}, c.args...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d; %s", code, c.code, stderr)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for k, want := range map[string]any{"bw_peak_gbps": c.peak, "bw_avg_gbps": c.avg, "msg_size": c.size, "mem": c.mem} {
				if got[k] != want {
					t.Errorf("%s = %v, want %v", k, got[k], want)
				}
			}
			e, ok := got["error"].(string)
			if !ok || (c.error == "") != (e == "") || !strings.Contains(e, c.error) {
				t.Errorf("error = %#v, want %q", got["error"], c.error)
			}
		})
	}
}

func TestAnalyzePerftestPrintsATable(t *testing.T) {
	t.Parallel()
	out, _, code := analyzePerftest(t, "", perftestCorpus+"gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"RDMA_Write BW Test on mlx5_3 (Ethernet), memory cuda-dmabuf",
		"| 8 MiB   | 5000       | 140.55       | 140.40          | 0.002092     |",
		"bandwidth at 8 MiB: peak 140.55 Gb/s, average 140.40 Gb/s",
		"memory cuda-dmabuf: using DMA-BUF for GPU buffer",
		"GPU: NVIDIA H200",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "error:") {
		t.Errorf("a successful run shows an error:\n%s", out)
	}

	b, err := os.ReadFile(perftestCorpus + "gke-a3ultra-h200-cx7-roce-hostmem-ib_write_bw-failed-status10.txt")
	if err != nil {
		t.Fatal(err)
	}
	out, _, code = analyzePerftest(t, string(b), "-")
	if code != 1 {
		t.Errorf("exit %d for the failed run read from stdin", code)
	}
	for _, want := range []string{
		"memory host",
		"| 64 KiB | 5000       | 381.50       | 381.41          | 0.727473     |",
		"error: Completion with error at client; Failed status 10",
		"cause (completion, line 43): Failed status 10: wr_id 0 syndrom 0x88",
		"result: failure: perftest failed (completion) on line 43: Failed status 10: wr_id 0 syndrom 0x88",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = analyzePerftest(t, "", "../../harness/perftest/testdata/ib_write_lat-ib-host-a-synthetic.txt")
	if code != 0 || !strings.Contains(out, "t_typical usec") {
		t.Errorf("latency run: exit %d\n%s", code, out)
	}
}

func TestAnalyzePerftestUnreadableInputsExit2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.txt")
	if err := os.WriteFile(junk, []byte("hello\nnothing to see here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyJSON := filepath.Join(dir, "out.json")
	if err := os.WriteFile(emptyJSON, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		stdin string
		args  []string
		msg   string
	}{
		{"a missing file", "", []string{filepath.Join(dir, "nope.txt")}, "no such file or directory"},
		{"a file with no perftest output", "", []string{junk}, "no perftest output found"},
		{"a JSON file without test_info or results", "", []string{emptyJSON, "--format", "json"}, "no test_info or results"},
		{"empty standard input", "", []string{"-"}, "no perftest output found"},
		{"an unknown format", "", []string{junk, "--format", "yaml"}, `--format "yaml"`},
		{"an unknown memory", "", []string{junk, "--mem", "gpu"}, `--mem "gpu"`},
	}
	for _, c := range cases {
		out, stderr, code := analyzePerftest(t, c.stdin, c.args...)
		if code != 2 || !strings.Contains(stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", c.name, code, stderr, c.msg)
		}
		if out != "" {
			t.Errorf("%s: printed %q", c.name, out)
		}
	}
}
