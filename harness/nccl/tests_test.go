package nccl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Fixture folders, relative to this package.
const (
	recorded     = "../../fixtures/nccl-tests/"        // 2xH200 NV18, NCCL 2.28.3, nccl-tests 2.19.6
	corpusTests  = "../../fixtures/corpus/nccl-tests/" // published nccl-tests outputs
	corpusDebug  = "../../fixtures/corpus/nccl-debug/" // published NCCL debug logs
	synthetic    = "testdata/"                         // logs written from NCCL's format strings, each saying so
	recordedNCCL = "2.28.3"
)

func openFixture(tb testing.TB, path string) *os.File {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// fixtureFiles lists every file of the fixture folders with the suffix, so
// the tables can prove they cover all of them.
func fixtureFiles(tb testing.TB, suffix string) []string {
	tb.Helper()
	var files []string
	for _, dir := range []string{recorded, corpusTests, corpusDebug, synthetic} {
		m, err := filepath.Glob(dir + "*" + suffix)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range m {
			if !hasCorpusGolden(f) {
				files = append(files, f)
			}
		}
	}
	return files
}

// hasCorpusGolden reports whether a corpus file is checked, through the
// binary, by cmd/gdrcheck's corpus test against its golden file instead.
func hasCorpusGolden(file string) bool {
	dir, name := filepath.Split(file)
	golden := filepath.Join(filepath.Dir(filepath.Clean(dir)), "golden", filepath.Base(filepath.Clean(dir)), strings.TrimSuffix(name, ".txt")+".json")
	_, err := os.Stat(golden)
	return strings.Contains(file, "corpus") && err == nil
}

func ptr[T any](v T) *T { return &v }

// diff is empty when want and got are deeply equal, and otherwise shows
// both as JSON, which prints through the pointers the results use.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	return fmt.Sprintf("\nwant %s\n got %s", w, g)
}

// bw is the out-of-place and in-place busbw expected at one size.
type bw struct{ oop, ip float64 }

type testsWant struct {
	err                      error
	collective, tests, nccl  string
	cuda                     string
	devices                  int
	firstDevice              *Device
	rows                     int
	busbw                    map[int64]bw
	wrongAt                  map[int64][2]*int64
	avg                      *float64
	outOfBounds              *int
	failures                 []Failure
	failureCount             int
	peak                     float64
	peakSize                 int64
	unparsed                 int
	failed                   bool
	largeSizeMin             int64
	largeSizeMean            float64
	firstRowType, firstRedOp string
	firstRoot                int
	partial                  string // PartialReason; empty for a whole run
}

var h200vm = Device{Rank: 0, Group: 0, PID: 1933, Host: "vm", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}

// recordedTest is one recorded nccl-tests output and what ParseTests must read from it.
type recordedTest struct {
	name string
	file string
	want testsWant
}

// recordedTests are every recorded output under the fixtures, each a case (the test fails on a fixture without one).
var recordedTests = []recordedTest{
	{
		name: "direct all_reduce on 2xH200 reaches 341 GB/s at 2 GiB",
		file: recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, firstDevice: &h200vm, rows: 29,
			busbw: map[int64]bw{
				8:          {0, 0},
				1048576:    {38.58, 31.19},
				1073741824: {328.37, 331.46},
				2147483648: {341.41, 341.61},
			},
			avg: ptr(93.8432), outOfBounds: ptr(0),
			peak: 341.61, peakSize: 2147483648,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
			largeSizeMin: 1 << 30, largeSizeMean: (331.46 + 341.61) / 2,
		},
	},
	{
		name: "all_reduce with P2P disabled falls to SHM at about 27 GB/s",
		file: recorded + "all_reduce_perf-h200x2-nv18-p2p-disabled-shm.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, rows: 6,
			busbw: map[int64]bw{
				1048576:    {16.12, 16.18},
				268435456:  {27.36, 27.10},
				1073741824: {27.13, 27.79},
			},
			avg: ptr(24.7588), outOfBounds: ptr(0),
			peak: 27.79, peakSize: 1073741824,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "all_reduce with P2P and SHM disabled falls to sockets at about 2.8 GB/s",
		file: recorded + "all_reduce_perf-h200x2-nv18-p2p-shm-disabled-socket.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, rows: 5,
			busbw: map[int64]bw{
				1048576:   {1.81, 1.96},
				16777216:  {2.82, 2.72},
				268435456: {2.77, 2.76},
			},
			avg: ptr(2.53827), outOfBounds: ptr(0),
			peak: 2.82, peakSize: 16777216,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "direct all_gather on 2xH200 reaches 294 GB/s in place at 1 GiB",
		file: recorded + "all_gather_perf-h200x2-nv18-direct-p2p.txt",
		want: testsWant{
			collective: "all_gather_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, rows: 6,
			busbw: map[int64]bw{
				1048576:    {21.08, 20.13},
				67108864:   {211.95, 220.52},
				1073741824: {271.89, 294.21},
			},
			avg: ptr(167.049), outOfBounds: ptr(0),
			peak: 294.21, peakSize: 1073741824,
			firstRowType: "float", firstRedOp: "none", firstRoot: -1,
		},
	},
	{
		name: "direct sendrecv prints N/A for in-place wrong counts and reaches 361 GB/s",
		file: recorded + "sendrecv_perf-h200x2-nv18-direct-p2p.txt",
		want: testsWant{
			collective: "sendrecv_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, rows: 6,
			busbw: map[int64]bw{
				1048576:    {43.00, 43.82},
				268435456:  {305.10, 299.85},
				1073741824: {361.05, 360.25},
			},
			wrongAt:     map[int64][2]*int64{1048576: {ptr[int64](0), nil}, 1073741824: {ptr[int64](0), nil}},
			avg:         ptr(219.324),
			outOfBounds: ptr(0),
			peak:        361.05, peakSize: 1073741824,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "the MPI direct all_reduce, one process per GPU, reaches 338.83 GB/s at 2 GiB",
		file: recorded + "all_reduce_perf-h200x2-nv18-mpi-np2-direct-cumem.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, rows: 29,
			firstDevice: &Device{Rank: 0, PID: 1787, Host: "vm", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"},
			busbw: map[int64]bw{
				8:          {0, 0},
				2147483648: {338.83, 336.79},
			},
			avg: ptr(96.2398), outOfBounds: ptr(0),
			peak: 338.83, peakSize: 2147483648,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "the MPI all_reduce with P2P disabled reaches 27.25 GB/s over SHM",
		file: recorded + "all_reduce_perf-h200x2-nv18-mpi-np2-p2p-disabled-shm.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, rows: 5,
			busbw: map[int64]bw{
				1048576:   {16.29, 16.33},
				268435456: {27.25, 27.16},
			},
			avg: ptr(24.224), outOfBounds: ptr(0),
			peak: 27.25, peakSize: 268435456,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "the MPI all_reduce with P2P and SHM disabled reaches 2.92 GB/s over sockets",
		file: recorded + "all_reduce_perf-h200x2-nv18-mpi-np2-p2p-shm-disabled-socket.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, rows: 5,
			busbw: map[int64]bw{
				1048576:   {1.80, 1.66},
				268435456: {2.90, 2.92},
			},
			avg: ptr(2.49045), outOfBounds: ptr(0),
			peak: 2.92, peakSize: 268435456,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "a GCP A3 Mega 16-rank all_reduce peaks at 338.82 GB/s at 8 GiB",
		file: corpusTests + "all_reduce_perf-gcp-a3mega-h100-2node-16rank.txt",
		want: testsWant{
			devices: 16,
			firstDevice: &Device{Rank: 0, PID: 6899, Host: "ztan-mig-235z", Device: 0,
				BusID: "0000:04:00", Name: "NVIDIA H100 80GB HBM3"},
			rows: 31,
			busbw: map[int64]bw{
				8:          {0, 0},
				134217728:  {152.32, 153.76},
				8589934592: {338.82, 337.35},
			},
			avg: ptr(70.742), outOfBounds: ptr(0),
			peak: 338.82, peakSize: 8589934592,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "a GKE A4 B200 all_gather prints the NCCL version between header and table",
		file: corpusTests + "all_gather_perf-gke-a4-b200-2node-16rank.txt",
		want: testsWant{
			nccl: "2.26.6", cuda: "12.8", devices: 16, rows: 24,
			busbw: map[int64]bw{
				1024:       {0, 0},
				2147483648: {259.66, 268.59},
				8589934592: {260.03, 259.25},
			},
			avg: ptr(59.3638), outOfBounds: ptr(0),
			peak: 268.59, peakSize: 2147483648,
			firstRowType: "float", firstRedOp: "none", firstRoot: -1,
		},
	},
	{
		name: "a single-NIC A3 Ultra all_gather stays near 32 GB/s",
		file: corpusTests + "all_gather_perf-gke-a3ultra-h200-2node-1gpu-gib.txt",
		want: testsWant{
			nccl: "2.25.1", cuda: "12.8", devices: 2,
			firstDevice: &Device{Rank: 0, PID: 85, Host: "nccl-gib-test-0", Device: 0,
				BusID: "0000:cc:00", Name: "NVIDIA H200"},
			rows: 24,
			busbw: map[int64]bw{
				1024:       {0.02, 0.02},
				1073741824: {31.10, 31.48},
				8589934592: {32.20, 33.32},
			},
			avg: ptr(15.0709), outOfBounds: ptr(0),
			peak: 33.32, peakSize: 8589934592,
			firstRowType: "float", firstRedOp: "none", firstRoot: -1,
		},
	},
	{
		name: "a trimmed NVL72 output keeps its one rank line with a graphics device name",
		file: corpusTests + "all_reduce_perf-coreweave-gb200-nvl72-1rack-72rank-graphics-device-name.txt",
		want: testsWant{
			devices: 1,
			firstDevice: &Device{Rank: 71, PID: 14840, Host: "slurm-gb200-207-171", Device: 3,
				BusID: "0x01", Name: "NVIDIA Graphics Device"},
			rows: 5,
			busbw: map[int64]bw{
				536870912:  {586.06, 576.74},
				8589934592: {834.57, 846.82},
			},
			avg: ptr(745.53), outOfBounds: ptr(0),
			peak: 846.82, peakSize: 8589934592,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "a trimmed 1440-rank GB200 output without a blank line before the header parses",
		file: corpusTests + "all_reduce_perf-coreweave-gb200-20racks-1440rank-trimmed.txt",
		want: testsWant{
			devices: 1,
			firstDevice: &Device{Rank: 1439, PID: 21082, Host: "slurm-gb200-218-073", Device: 3,
				BusID: "0x01", Name: "NVIDIA GB200"},
			rows: 6,
			busbw: map[int64]bw{
				536870912:   {150.95, 150.16},
				17179869184: {405.74, 404.77},
			},
			avg: ptr(297.808), outOfBounds: ptr(0),
			peak: 405.74, peakSize: 17179869184,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "an output elided with ... lines and an older header parses",
		file: corpusTests + "all_reduce_perf-coreweave-h100-64gpu-sharp-elided.txt",
		want: testsWant{
			rows: 5,
			busbw: map[int64]bw{
				536870912:  {356.01, 356.60},
				8589934592: {386.56, 385.56},
			},
			avg: ptr(373.187), outOfBounds: ptr(0),
			peak: 386.56, peakSize: 8589934592,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "a Slingshot run with 96 wrong elements reports FAILED and its test failures",
		file: corpusTests + "all_reduce_perf-nccltests369-gh200-2node-slingshot-cxi-wrong-96-FAILED.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.17.8", nccl: "2.29.2",
			devices: 2,
			firstDevice: &Device{Rank: 0, PID: 662195, Host: "gpu-1-1", Device: 0,
				BusID: "0009:01:00", Name: "NVIDIA GH200 120GB"},
			rows: 25,
			busbw: map[int64]bw{
				1048576:   {2.20, 2.13},
				134217728: {22.87, 22.80},
			},
			wrongAt: map[int64][2]*int64{
				1048576: {ptr[int64](96), ptr[int64](32)},
				2097152: {ptr[int64](0), ptr[int64](0)},
			},
			avg: ptr(4.79995), outOfBounds: ptr(4),
			failures: []Failure{
				{Kind: "test", Host: "gpu-1-1", PID: 662195, Where: "common.cu:1189", Line: 43},
				{Kind: "test", Host: "gpu-1-7", PID: 2448661, Where: "common.cu:1189", Line: 44},
			},
			peak: 22.87, peakSize: 134217728, failed: true,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "a run that fails on busy devices has rank lines and CUDA failures but no table",
		file: corpusTests + "all_reduce_perf-nccltests369-gh200-2node-test-cuda-failure-device-busy.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.17.8", nccl: "2.26.6",
			devices: 8, rows: 0, failureCount: 12, partial: "the run failed before its first result row",
			failures: []Failure{
				{Kind: "CUDA", Host: "gpu-1-1", Where: "common.cu:1304", Message: "CUDA-capable device(s) is/are busy or unavailable", Line: 14},
				{Kind: "test", Host: "gpu-1-1", PID: 3617715, Where: "common.cu:1189", Line: 15},
			},
			failed: true,
		},
	},
	{
		name: "a gather with NCCL lines inside the table drops from 20 to 11 GB/s at 6 GB",
		file: corpusTests + "gather_perf-a100pcie-2node-gdr-dropoff-6GB.txt",
		want: testsWant{
			collective: "gather_perf", devices: 2, rows: 53,
			busbw: map[int64]bw{
				134217728:  {20.19, 22.34},
				6308233216: {17.92, 20.57},
				6442450944: {10.51, 11.76},
				7113539584: {11.21, 11.24},
			},
			peak: 23.61, peakSize: 1610612736,
			firstRowType: "float", firstRedOp: "none", firstRoot: 0,
			largeSizeMin: 6442450944, largeSizeMean: (11.76 + 10.90 + 11.02 + 12.25 + 10.55 + 11.24) / 6,
			partial: `the table stops after the 6784 MiB row (53 rows) without the "# Out of bounds values" and "# Avg bus bandwidth" footer: the run stopped or the output was trimmed`,
		},
	},
	{
		name: "a debug log that starts with a gather_perf header yields its devices and no rows",
		file: corpusDebug + "a100pcie-2node-cx5-cx6-gdr-enabled-dmabuf-netgdrlevel-sys.txt",
		want: testsWant{
			collective: "gather_perf", nccl: "2.16.5", cuda: "11.8", devices: 2,
			firstDevice: &Device{Rank: 0, PID: 101855, Host: "n013", Device: 0,
				BusID: "0000:81:00", Name: "NVIDIA A100-PCIE-40GB"},
			partial: noTable,
		},
	},
	{
		name: "an Azure NET/IB log snippet is not nccl-tests output",
		file: corpusDebug + "azure-ndh100v5-net-ib-9hca-ib+roce-gdr-enabled-xml-busid-warn.txt",
		want: testsWant{err: ErrNoData},
	},
	{
		name: "a two-node NCCL 2.12 log without a peer-memory module has its version and no table",
		file: synthetic + "ib-2node-nccl2.12-gdr-disabled-no-module-synthetic.txt",
		want: testsWant{nccl: "2.12.12", cuda: "11.7", partial: noTable},
	},
	{
		name: "an NCCL 2.12 ENV log of a failed registration has its version and no table",
		file: synthetic + "ib-nccl2.12-ibv_reg_mr-enomem-subsys-env-synthetic.txt",
		want: testsWant{nccl: "2.12.12", cuda: "11.7", partial: noTable},
	},
	{
		name: "an IB completion error log is not nccl-tests output",
		file: corpusDebug + "mlengineering-azure-2node-net-ib-ib+roce-completion-error12-vendor129.txt",
		want: testsWant{err: ErrNoData},
	},
	{
		name: "a single comm line is not nccl-tests output",
		file: corpusDebug + "nccl2345-comm-line-nnodes4-localranks2-misdetected.txt",
		want: testsWant{err: ErrNoData},
	},
	{
		name: "a channel block is not nccl-tests output",
		file: corpusDebug + "nccl2345-h200-roce-2rail-mixed-gdrdma-and-hostmem-far-nic.txt",
		want: testsWant{err: ErrNoData},
	},
	{
		name: "one emulated node: one rank, nothing to move, busbw 0",
		file: recorded + "all_reduce_perf-h200x1-emu-n1.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 1, firstDevice: &Device{Rank: 0, PID: 1723, Host: "emu0", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}, rows: 26,
			busbw: map[int64]bw{268435456: {0, 0}},
			avg:   ptr(0.0), outOfBounds: ptr(0),
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "two emulated nodes on one H200 reach 1.86 GB/s over sockets",
		file: recorded + "all_reduce_perf-h200x1-emu-n2-socket.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, firstDevice: &Device{Rank: 0, PID: 1759, Host: "emu0", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}, rows: 26,
			busbw: map[int64]bw{8: {0, 0}, 268435456: {1.86, 1.86}},
			avg:   ptr(0.493987), outOfBounds: ptr(0),
			peak: 1.86, peakSize: 134217728,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "timestamped NCCL lines between the rows do not disturb the table",
		file: recorded + "all_reduce_perf-h200x1-emu-n2-timestamps.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, firstDevice: &Device{Rank: 0, PID: 2272, Host: "emu0", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}, rows: 11,
			busbw: map[int64]bw{8388608: {1.37, 1.42}},
			avg:   ptr(0.180762), outOfBounds: ptr(0),
			peak: 1.42, peakSize: 8388608,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "four emulated nodes reach 0.62 GB/s",
		file: recorded + "all_reduce_perf-h200x1-emu-n4-socket.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 4, rows: 26,
			busbw: map[int64]bw{268435456: {0.62, 0.62}},
			avg:   ptr(0.142873), outOfBounds: ptr(0),
			peak: 0.62, peakSize: 16777216,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "four emulated nodes with one slowed reach 0.65 GB/s",
		file: recorded + "all_reduce_perf-h200x1-emu-n4-slow-socket.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 4, rows: 26,
			busbw: map[int64]bw{268435456: {0.65, 0.65}},
			avg:   ptr(0.150255), outOfBounds: ptr(0),
			peak: 0.65, peakSize: 16777216,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "a pair with the slowed node falls to 0.63 GB/s",
		file: recorded + "all_reduce_perf-h200x1-emu-pair-slow-socket.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, firstDevice: &Device{Rank: 0, PID: 2111, Host: "emu2", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}, rows: 26,
			busbw: map[int64]bw{268435456: {0.63, 0.63}},
			avg:   ptr(0.176946), outOfBounds: ptr(0),
			peak: 0.65, peakSize: 134217728,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "the other pair with the slowed node reaches 0.66 and 0.71 GB/s",
		file: recorded + "all_reduce_perf-h200x1-emu-pair-slow2-socket.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 2, rows: 26,
			busbw: map[int64]bw{268435456: {0.66, 0.71}},
			avg:   ptr(0.181052), outOfBounds: ptr(0),
			peak: 0.71, peakSize: 268435456,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "all_gather on one H200 runs without peers: busbw 0",
		file: recorded + "all_gather_perf-h200x1-direct.txt",
		want: testsWant{
			collective: "all_gather_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 1, firstDevice: &Device{Rank: 0, PID: 1435, Host: "vm", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}, rows: 29,
			busbw: map[int64]bw{2147483648: {0, 0}},
			avg:   ptr(0.0), outOfBounds: ptr(0),
			firstRowType: "float", firstRedOp: "none", firstRoot: -1,
		},
	},
	{
		name: "all_reduce on one H200 runs without peers: busbw 0",
		file: recorded + "all_reduce_perf-h200x1-direct.txt",
		want: testsWant{
			collective: "all_reduce_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 1, firstDevice: &Device{Rank: 0, PID: 1388, Host: "vm", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}, rows: 29,
			busbw: map[int64]bw{2147483648: {0, 0}},
			avg:   ptr(0.0), outOfBounds: ptr(0),
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "reduce_scatter on one H200 runs without peers: busbw 0",
		file: recorded + "reduce_scatter_perf-h200x1-direct.txt",
		want: testsWant{
			collective: "reduce_scatter_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 1, firstDevice: &Device{Rank: 0, PID: 1479, Host: "vm", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}, rows: 29,
			busbw: map[int64]bw{2147483648: {0, 0}},
			avg:   ptr(0.0), outOfBounds: ptr(0),
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
	{
		name: "sendrecv on one H200 runs without peers: a self-copy, no bus to speak of",
		file: recorded + "sendrecv_perf-h200x1-direct.txt",
		want: testsWant{
			collective: "sendrecv_perf", tests: "2.19.6", nccl: recordedNCCL, cuda: "13.0",
			devices: 1, firstDevice: &Device{Rank: 0, PID: 1527, Host: "vm", Device: 0, BusID: "0000:00:06", Name: "NVIDIA H200"}, rows: 29,
			busbw: map[int64]bw{2147483648: {1912.9, 2e+06}},
			avg:   ptr(46026.6), outOfBounds: ptr(0),
			// The in-place copy onto itself takes no time at all.
			peak: 2e+06, peakSize: 2147483648,
			firstRowType: "float", firstRedOp: "sum", firstRoot: -1,
		},
	},
}

func TestParseTestsReadsEveryRecordedOutput(t *testing.T) {
	tests := recordedTests

	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTests(openFixture(t, tt.file))
			if tt.want.err != nil {
				if !errors.Is(err, tt.want.err) {
					t.Fatalf("ParseTests error = %v, want %v", err, tt.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkTests(t, got, tt.want)
		})
	}
	for _, f := range fixtureFiles(t, ".txt") {
		if !covered[f] {
			t.Errorf("fixture %s has no ParseTests case", f)
		}
	}
}
