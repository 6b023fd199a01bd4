package nccl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/fuzzseed"
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
		files = append(files, m...)
	}
	return files
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

func TestParseTestsReadsEveryRecordedOutput(t *testing.T) {
	tests := []struct {
		name string
		file string
		want testsWant
	}{
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
				devices: 8, rows: 0, failureCount: 12,
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

func checkTests(t *testing.T, got *TestsResult, w testsWant) {
	t.Helper()
	if got.Collective != w.collective || got.TestsVersion != w.tests || got.NCCLVersion != w.nccl || got.CUDAVersion != w.cuda {
		t.Errorf("collective, tests, NCCL, CUDA = %q %q %q %q, want %q %q %q %q",
			got.Collective, got.TestsVersion, got.NCCLVersion, got.CUDAVersion, w.collective, w.tests, w.nccl, w.cuda)
	}
	if len(got.Devices) != w.devices {
		t.Errorf("%d devices, want %d", len(got.Devices), w.devices)
	}
	if w.firstDevice != nil && len(got.Devices) > 0 {
		if d := diff(*w.firstDevice, got.Devices[0]); d != "" {
			t.Errorf("first device :\n%s", d)
		}
	}
	if len(got.Rows) != w.rows {
		t.Errorf("%d rows, want %d", len(got.Rows), w.rows)
	}
	if len(got.Unparsed) != w.unparsed {
		t.Errorf("unparsed lines %q, want %d", got.Unparsed, w.unparsed)
	}
	for size, want := range w.busbw {
		row, ok := rowAt(got, size)
		if !ok {
			t.Errorf("no row of %d bytes", size)
			continue
		}
		if row.BusBWOOP != want.oop || row.BusBWIP != want.ip {
			t.Errorf("busbw at %d = %v/%v, want %v/%v", size, row.BusBWOOP, row.BusBWIP, want.oop, want.ip)
		}
	}
	for size, want := range w.wrongAt {
		row, _ := rowAt(got, size)
		if d := diff(want, [2]*int64{row.WrongOOP, row.WrongIP}); d != "" {
			t.Errorf("wrong at %d :\n%s", size, d)
		}
	}
	if w.rows > 0 {
		first := got.Rows[0]
		if first.Type != w.firstRowType || first.RedOp != w.firstRedOp || first.Root != w.firstRoot {
			t.Errorf("first row type/redop/root = %q %q %d, want %q %q %d",
				first.Type, first.RedOp, first.Root, w.firstRowType, w.firstRedOp, w.firstRoot)
		}
	}
	if d := diff(w.avg, got.AvgBusBW); d != "" {
		t.Errorf("avg busbw :\n%s", d)
	}
	if d := diff(w.outOfBounds, got.OutOfBounds); d != "" {
		t.Errorf("out of bounds :\n%s", d)
	}
	wantFailures := w.failureCount
	if wantFailures == 0 {
		wantFailures = len(w.failures)
	}
	if len(got.Failures) != wantFailures {
		t.Errorf("%d failures, want %d: %+v", len(got.Failures), wantFailures, got.Failures)
	} else if d := diff(w.failures, got.Failures[:len(w.failures)]); len(w.failures) > 0 && d != "" {
		t.Errorf("failures :\n%s", d)
	}
	if peak, size := got.PeakBusBW(); peak != w.peak || size != w.peakSize {
		t.Errorf("PeakBusBW = %v at %d, want %v at %d", peak, size, w.peak, w.peakSize)
	}
	if got.Failed() != w.failed {
		t.Errorf("Failed() = %v, want %v", got.Failed(), w.failed)
	}
	if w.largeSizeMin > 0 {
		mean, ok := got.LargeSizeBusBW(w.largeSizeMin)
		if !ok || !near(mean, w.largeSizeMean) {
			t.Errorf("LargeSizeBusBW(%d) = %v %v, want %v", w.largeSizeMin, mean, ok, w.largeSizeMean)
		}
	}
	if got.PartialReason != w.partial || got.Partial != (w.partial != "") {
		t.Errorf("partial %v %q, want %q", got.Partial, got.PartialReason, w.partial)
	}
}

const noTable = "no result row and no failure line: the run stopped before its table or the output is an excerpt"

func rowAt(r *TestsResult, size int64) (Row, bool) {
	for _, row := range r.Rows {
		if row.Size == size {
			return row, true
		}
	}
	return Row{}, false
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestBusBWAtReturnsTheBetterPlacementAtAnExactSize(t *testing.T) {
	got, err := ParseTests(openFixture(t, recorded+"all_reduce_perf-h200x2-nv18-direct-p2p.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if bw, ok := got.BusBWAt(1048576); !ok || bw != 38.58 {
		t.Errorf("BusBWAt(1 MiB) = %v %v, want 38.58 true", bw, ok)
	}
	if bw, ok := got.BusBWAt(3); ok {
		t.Errorf("BusBWAt(3) = %v, want no row", bw)
	}
	if _, ok := got.LargeSizeBusBW(1 << 40); ok {
		t.Error("LargeSizeBusBW above every size found rows")
	}
}

func TestParseTestsReadsOtherHeaderVariants(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []Row
		unparsed int
		failures []Failure
		avg      *float64
	}{
		{
			name: "a pre-2.13 header without redop and root and with an error column",
			in: `#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float    24.38   43.00   43.00  0e+00    23.93   43.82   43.82  0e+00
`,
			want: []Row{{Size: 1048576, Count: 262144, Type: "float", Root: -1,
				TimeOOP: 24.38, AlgBWOOP: 43, BusBWOOP: 43, TimeIP: 23.93, AlgBWIP: 43.82, BusBWIP: 43.82}},
		},
		{
			name: "a per-iteration header from -R with a timestamp column",
			in: `#                                               out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp
     1048576        262144     float     sum      -1    27.18   38.58   38.58       0    26.00    29.00    28.90     2.10    33.62   31.19   31.19       0    32.00    35.00    34.90     1.50 2026-11-30 14:55:29
`,
			want: []Row{{Size: 1048576, Count: 262144, Type: "float", RedOp: "sum", Root: -1,
				TimeOOP: 27.18, AlgBWOOP: 38.58, BusBWOOP: 38.58, WrongOOP: ptr[int64](0),
				TimeIP: 33.62, AlgBWIP: 31.19, BusBWIP: 31.19, WrongIP: ptr[int64](0)}},
		},
		{
			name: "a wrong count printed with %g in exponent form",
			in: `     2048   512   float   sum   -1   19.27   0.11   0.11   1e+06   19.32   0.11   0.11   0
`,
			want: []Row{{Size: 2048, Count: 512, Type: "float", RedOp: "sum", Root: -1,
				TimeOOP: 19.27, AlgBWOOP: 0.11, BusBWOOP: 0.11, WrongOOP: ptr[int64](1000000),
				TimeIP: 19.32, AlgBWIP: 0.11, BusBWIP: 0.11, WrongIP: ptr[int64](0), Wrong: 1000000}},
		},
		{
			name:     "a row cut short by copy-paste is kept as unparsed",
			in:       "# Collective test starting: all_reduce_perf\n     4096   1024   float   sum   -1   19.79   0.21\n",
			want:     []Row{},
			unparsed: 1,
		},
		{
			name: "an NCCL failure and the library's last error are failures",
			in: `node1: Test NCCL failure common.cu:1095 'unhandled system error (run with NCCL_DEBUG=INFO for details) / socketProgress: Connection closed by remote peer'
# error: socketProgress: Connection closed by remote peer
`,
			want: []Row{},
			failures: []Failure{
				{Kind: "NCCL", Host: "node1", Where: "common.cu:1095",
					Message: "unhandled system error (run with NCCL_DEBUG=INFO for details) / socketProgress: Connection closed by remote peer", Line: 1},
				{Kind: "error", Message: "socketProgress: Connection closed by remote peer", Line: 2},
			},
		},
		{
			name: "an average of nan from a run with no sizes is no average",
			in:   "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : nan \n",
			want: []Row{},
		},
		{
			name: "a check against NCCL_TESTS_MIN_BW keeps the average",
			in:   "# Avg bus bandwidth    : 93.8432 FAILED\n",
			want: []Row{},
			avg:  ptr(93.8432),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTests(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(tt.want, got.Rows); d != "" {
				t.Errorf("rows :\n%s", d)
			}
			if len(got.Unparsed) != tt.unparsed {
				t.Errorf("unparsed = %q, want %d lines", got.Unparsed, tt.unparsed)
			}
			if d := diff(tt.failures, got.Failures); d != "" && len(tt.failures)+len(got.Failures) > 0 {
				t.Errorf("failures :\n%s", d)
			}
			if d := diff(tt.avg, got.AvgBusBW); d != "" {
				t.Errorf("avg :\n%s", d)
			}
		})
	}
}

func TestParseTestsRejectsInputWithoutNCCLTestsOutput(t *testing.T) {
	for _, in := range []string{"", "hello\nworld\n", "```\n...\n```\n"} {
		if _, err := ParseTests(strings.NewReader(in)); !errors.Is(err, ErrNoData) {
			t.Errorf("ParseTests(%q) error = %v, want ErrNoData", in, err)
		}
	}
}

func TestTestsResultMarshalsTheNamesTheCLIReads(t *testing.T) {
	got, err := ParseTests(openFixture(t, recorded+"sendrecv_perf-h200x2-nv18-direct-p2p.txt"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var view struct {
		Rows []struct {
			Size     int64   `json:"size"`
			BusBWOOP float64 `json:"busbw_oop"`
			BusBWIP  float64 `json:"busbw_ip"`
			Wrong    *int64  `json:"wrong"`
		} `json:"rows"`
		AvgBusBW *float64 `json:"avg_busbw"`
	}
	if err := json.Unmarshal(b, &view); err != nil {
		t.Fatal(err)
	}
	last := view.Rows[len(view.Rows)-1]
	if len(view.Rows) != 6 || last.Size != 1073741824 || last.BusBWOOP != 361.05 || last.BusBWIP != 360.25 ||
		last.Wrong == nil || *last.Wrong != 0 || view.AvgBusBW == nil || *view.AvgBusBW != 219.324 {
		t.Errorf("JSON view = %s", b)
	}
}

func TestVersionFromCodeReadsBothCodeSchemes(t *testing.T) {
	for code, want := range map[string]string{"22803": "2.28.3", "22902": "2.29.2", "21805": "2.18.5", "2708": "2.7.8", "x": "", "0": ""} {
		if got := versionFromCode(code); got != want {
			t.Errorf("versionFromCode(%q) = %q, want %q", code, got, want)
		}
	}
}

// addFixtureSeeds seeds a fuzz test with every file of the three fixture
// folders (fixtures/nccl-tests, fixtures/corpus/nccl-tests and
// fixtures/corpus/nccl-debug), whole and cut in the middle of a line, in
// slices of a few KiB (fuzzseed says why).
func addFixtureSeeds(f *testing.F) {
	var files []string
	// Files only: the fixture folders also hold subfolders (synthetic/,
	// the fuzz corpus).
	for _, dir := range []string{recorded + "*.*", corpusTests + "*.*", corpusDebug + "*.*", synthetic + "*.txt"} {
		m, err := filepath.Glob(dir)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		f.Fatalf("only %d fixture files", len(files))
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, seed := range fuzzseed.Ends(b) {
			f.Add(string(seed))
		}
		for _, off := range midLineCuts(b) {
			f.Add(string(fuzzseed.Before(b, off)))
		}
	}
}

func FuzzParseTests(f *testing.F) {
	addFixtureSeeds(f)
	f.Add("#       size         count      type     time   algbw   busbw  error     time\n 1 2 float 3")
	f.Add("# size count time time\n1 2 3 4 5 6 7 8 9 10 11 12\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseTests(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				t.Errorf("error %v does not wrap ErrNoData", err)
			}
			return
		}
		if got.Partial != (got.PartialReason != "") || len(got.Unparsed) > maxUnparsed || len(got.Failures) > maxFailures {
			t.Errorf("partial %v %q, %d unparsed, %d failures", got.Partial, got.PartialReason, len(got.Unparsed), len(got.Failures))
		}
		if _, err := json.Marshal(got); err != nil {
			t.Errorf("result does not marshal: %v", err)
		}
		// Concatenated runs repeat sizes, so the peak need only be one of the rows.
		if peak, size := got.PeakBusBW(); size != 0 && !slices.ContainsFunc(got.Rows, func(r Row) bool { return r.Size == size && r.BusBW() == peak }) {
			t.Errorf("PeakBusBW = %v at %d, which no row has", peak, size)
		}
		got.LargeSizeBusBW(0)
		got.Failed()
	})
}

// largestFixture is the biggest recorded output, the worst case a runner
// parses after every collective.
func largestFixture(b *testing.B) []byte {
	var largest []byte
	for _, f := range fixtureFiles(b, ".txt") {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		if len(data) > len(largest) {
			largest = data
		}
	}
	return largest
}

func BenchmarkParseTests(b *testing.B) {
	data := largestFixture(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseTests(strings.NewReader(string(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTests1GiB streams 1 GiB of nccl-tests output through
// ParseTests: the header of the recorded all_reduce run, the NCCL lines of
// every fixture over and over (a long NCCL_DEBUG=INFO run), then the
// table. It reports the peak memory as BenchmarkParseLog1GiB does; rows
// are the result and do not grow here, so the rest must stay bounded.
func BenchmarkParseTests1GiB(b *testing.B) {
	data, err := os.ReadFile(recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt")
	if err != nil {
		b.Fatal(err)
	}
	at := bytes.Index(data, []byte("\n           8 ")) + 1
	head, tail := data[:at], data[at:]
	body, hostAt := streamBody(b, fixtureFiles(b, ".txt"), true)
	b.SetBytes(newLogStream(head, body, tail, hostAt, streamSize).size())
	b.ReportAllocs()
	stop := peakMemory(b)
	for b.Loop() {
		got, err := ParseTests(newLogStream(head, body, tail, hostAt, streamSize))
		if err != nil {
			b.Fatal(err)
		}
		if len(got.Rows) != 29 || got.Partial || got.AvgBusBW == nil {
			b.Fatalf("%d rows, partial %q, average %v", len(got.Rows), got.PartialReason, got.AvgBusBW)
		}
	}
	heap, rss := stop()
	b.ReportMetric(heap, "peak-heap-MiB")
	b.ReportMetric(rss, "peak-rss-MiB")
}

// parsers are the three entry points as the damage tests call them.
var parsers = []struct {
	name  string
	parse func(io.Reader) (partial bool, reason string, err error)
}{
	{"ParseLog", func(r io.Reader) (bool, string, error) {
		s, err := ParseLog(r)
		if err != nil {
			return false, "", err
		}
		return s.Partial, s.PartialReason, nil
	}},
	{"ParseTests", func(r io.Reader) (bool, string, error) {
		t, err := ParseTests(r)
		if err != nil {
			return false, "", err
		}
		return t.Partial, t.PartialReason, nil
	}},
	{"ParseTestsJSON", func(r io.Reader) (bool, string, error) {
		t, err := ParseTestsJSON(r)
		if err != nil {
			return false, "", err
		}
		return t.Partial, t.PartialReason, nil
	}},
}

// allFixtures is every file of the three fixture folders the parsers read.
func allFixtures(tb testing.TB) []string {
	return append(fixtureFiles(tb, ".txt"), fixtureFiles(tb, ".json")...)
}

// midLineCuts returns named offsets that cut data inside a line: at tenths
// of its length, in the middle of its first, middle and last table rows
// and of its first connection line, and one byte before the end.
func midLineCuts(data []byte) map[string]int {
	cuts := map[string]int{}
	add := func(name string, off int) {
		for off > 0 && off < len(data) && data[off-1] == '\n' {
			off++ // a cut right after a newline is a line boundary
		}
		if off > 0 && off < len(data) {
			cuts[name] = off
		}
	}
	for i := 1; i < 10; i++ {
		add(fmt.Sprintf("at %d0%%", i), len(data)*i/10)
	}
	add("one byte before the end", len(data)-1)
	var rows []int
	via := -1
	start := 0
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 10 && !isLogLine([]byte(line)) {
			if _, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				rows = append(rows, start+len(line)/2)
			}
		}
		if i := strings.Index(line, " via "); i >= 0 && via < 0 {
			via = start + i + len(" via ") + 1
		}
		start += len(line)
	}
	if via >= 0 {
		add("in the first connection line", via)
	}
	if len(rows) > 0 {
		add("in the first table row", rows[0])
		add("mid-table", rows[len(rows)/2])
		add("in the last table row", rows[len(rows)-1])
	}
	return cuts
}

func TestEveryParserMarksAFixtureCutMidLineAsPartialOrFindsNoData(t *testing.T) {
	partials := map[string]int{}
	for _, file := range allFixtures(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for cut, off := range midLineCuts(data) {
			for _, p := range parsers {
				partial, reason, err := p.parse(bytes.NewReader(data[:off]))
				switch {
				case err != nil && !errors.Is(err, ErrNoData):
					t.Errorf("%s of %s cut %s (byte %d): error %v does not wrap ErrNoData", p.name, filepath.Base(file), cut, off, err)
				case err == nil && (!partial || reason == ""):
					t.Errorf("%s of %s cut %s (byte %d): not marked partial (%q)", p.name, filepath.Base(file), cut, off, reason)
				case err == nil:
					partials[p.name]++
				}
			}
		}
	}
	// Most cuts leave something to read: the test must not pass on errors alone.
	for _, p := range parsers {
		if partials[p.name] < 8 {
			t.Errorf("%s returned only %d partial results", p.name, partials[p.name])
		}
	}
}

func TestARunKilledBetweenLinesIsPartialWithTheReason(t *testing.T) {
	data, err := os.ReadFile(recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt")
	if err != nil {
		t.Fatal(err)
	}
	// upTo cuts after the n-th line that contains s, keeping that line.
	upTo := func(s string, n int) []byte {
		end := 0
		for line := range strings.Lines(string(data)) {
			end += len(line)
			if strings.Contains(line, s) {
				if n--; n == 0 {
					return data[:end]
				}
			}
		}
		t.Fatalf("no %d-th line with %q", n, s)
		return nil
	}
	const notDestroyed = "2 of 2 communicators that reached Init COMPLETE were not destroyed: the log stops while NCCL was running"
	tests := []struct {
		name            string
		in              []byte
		log, tests      string
		rows, transport int
	}{
		{
			name: "killed while one of two communicators is in init",
			in:   upTo("Init START", 2),
			log:  noInitComplete, tests: noTable,
		},
		{
			name:  "killed after the first communicator completed init",
			in:    upTo("Init COMPLETE", 1),
			log:   "1 of 2 communicators logged Init START without Init COMPLETE: the log stops during NCCL init; " + "1 of 1 communicators that reached Init COMPLETE were not destroyed: the log stops while NCCL was running",
			tests: noTable, // NCCL 2.28 connects channels at the first collective, after init
		},
		{
			name: "killed in the middle of the table",
			in:   upTo("    float     sum", 12),
			log:  notDestroyed, rows: 12, transport: 48,
			tests: `the table stops after the 16 KiB row (12 rows) without the "# Out of bounds values" and "# Avg bus bandwidth" footer: the run stopped or the output was trimmed`,
		},
		{
			name: "killed between the out-of-bounds line and the average",
			in:   upTo("# Out of bounds values", 1),
			rows: 29, transport: 48,
			tests: `the table stops after the 2 GiB row (29 rows) without the "# Out of bounds values" and "# Avg bus bandwidth" footer: the run stopped or the output was trimmed`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseLog(bytes.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if s.PartialReason != tt.log || s.Partial != (tt.log != "") || s.Transports[ClassP2PDirect] != tt.transport {
				t.Errorf("ParseLog: partial %v %q, %v; want %q and %d P2P/direct", s.Partial, s.PartialReason, s.Transports, tt.log, tt.transport)
			}
			r, err := ParseTests(bytes.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if r.PartialReason != tt.tests || !r.Partial || len(r.Rows) != tt.rows {
				t.Errorf("ParseTests: partial %v %q, %d rows; want %q, %d rows", r.Partial, r.PartialReason, len(r.Rows), tt.tests, tt.rows)
			}
		})
	}
}

func TestGarbageAndEmptyInputGiveErrNoDataOrAPartialResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	garbage := func(n int, newlines bool) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
			if !newlines && b[i] == '\n' {
				b[i] = 0
			}
		}
		return b
	}
	fixture, err := os.ReadFile(recorded + "all_reduce_perf-h200x2-nv18-p2p-disabled-shm.txt")
	if err != nil {
		t.Fatal(err)
	}
	withGarbage := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	const cutLog, cutOutput = "the log ends mid-line; the cut line (line 222) was not read", "the output ends mid-line after the 1 GiB row; the cut line (line 222) was not read"
	const skipped = "1 line longer than 1 MiB was skipped"
	tests := []struct {
		name       string
		in         []byte
		log, tests string // the partial reasons; "" where the parser finds no data
	}{
		{name: "an empty input", in: nil},
		{name: "a lone newline", in: []byte("\n")},
		{name: "64 KiB of binary garbage with newlines", in: garbage(64<<10, true)},
		{name: "3 MiB of binary garbage without a newline", in: garbage(3<<20, false)},
		{name: "NUL bytes", in: make([]byte, 4096)},
		{
			name: "a whole run followed by binary garbage without a newline",
			in:   withGarbage(fixture, garbage(1000, false)),
			log:  cutLog, tests: cutOutput,
		},
		{
			name: "a whole run with a 2 MiB garbage line in the middle of the table",
			in:   withGarbage(fixture[:bytes.Index(fixture, []byte("    268435456"))], garbage(2<<20, false), []byte("\n"), fixture[bytes.Index(fixture, []byte("    268435456")):]),
			log:  skipped, tests: skipped,
		},
		{
			name: "a whole run cut in the middle of the garbage that follows it",
			in:   withGarbage(fixture, garbage(100, true)[:50], []byte("\x00\xff")),
			log:  cutLog, tests: cutOutput,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range parsers {
				want := map[string]string{"ParseLog": tt.log, "ParseTests": tt.tests}[p.name]
				partial, reason, err := p.parse(bytes.NewReader(tt.in))
				switch {
				case want == "" && !errors.Is(err, ErrNoData):
					t.Errorf("%s: error %v, partial %q; want ErrNoData", p.name, err, reason)
				case want != "" && (err != nil || !partial || !strings.Contains(reason, want)):
					t.Errorf("%s: error %v, partial %v %q; want a reason with %q", p.name, err, partial, reason, want)
				}
			}
		})
	}
}
