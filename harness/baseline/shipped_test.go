package baseline_test

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/results"
)

const ncclTests = "../../fixtures/nccl-tests/"

// busbwTable reads the result table of a recorded nccl-tests output: size
// -> the better of out-of-place and in-place busbw, as reports.Point.BusBW.
func busbwTable(t *testing.T, file string) map[int64]float64 {
	t.Helper()
	f, err := os.Open(ncclTests + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[int64]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// size count type redop root time algbw busbw #wrong time algbw busbw #wrong
		c := strings.Fields(sc.Text())
		if len(c) != 13 || c[2] != "float" {
			continue
		}
		size, err1 := strconv.ParseInt(c[0], 10, 64)
		oop, err2 := strconv.ParseFloat(c[7], 64)
		ip, err3 := strconv.ParseFloat(c[11], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%s: bad row %q", file, sc.Text())
		}
		rows[size] = max(oop, ip)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no result rows", file)
	}
	return rows
}

func largest(rows map[int64]float64) int64 {
	var l int64
	for s := range rows {
		l = max(l, s)
	}
	return l
}

// TestH200x2BaselineIsTheRecordedMeasurements checks every shipped figure
// of h200x2-nv18 against the recorded outputs it says it came from.
func TestH200x2BaselineIsTheRecordedMeasurements(t *testing.T) {
	s, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Get("h200x2-nv18")
	for _, tc := range []struct{ metric, file string }{
		{"nccl.all_reduce.busbw", "all_reduce_perf-h200x2-nv18-direct-p2p.txt"},
		{"nccl.all_gather.busbw", "all_gather_perf-h200x2-nv18-direct-p2p.txt"},
		{"nccl.sendrecv.busbw", "sendrecv_perf-h200x2-nv18-direct-p2p.txt"},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			rows := busbwTable(t, tc.file)
			m, ok := b.Metric(tc.metric)
			if !ok {
				t.Fatal("missing")
			}
			if want := rows[largest(rows)]; m.Expected != want {
				t.Errorf("expected %v, recorded %v at the largest size", m.Expected, want)
			}
			if len(m.BySize) < 2 {
				t.Errorf("by_size has %d sizes", len(m.BySize))
			}
			for size, v := range m.BySize {
				if size < 256<<20 || rows[size] != v {
					t.Errorf("by_size %s = %v, recorded %v", results.SizeString(size), v, rows[size])
				}
			}
		})
	}
}

// TestTheMeasuredRunPassesItsBaselineAndFailsOneTwentyPercentHigher is the
// issue's acceptance case, on the recorded outputs.
func TestTheMeasuredRunPassesItsBaselineAndFailsOneTwentyPercentHigher(t *testing.T) {
	s, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Match(h200pair)
	if err != nil {
		t.Fatal(err)
	}
	direct := busbwTable(t, "all_reduce_perf-h200x2-nv18-direct-p2p.txt")
	shm := busbwTable(t, "all_reduce_perf-h200x2-nv18-p2p-disabled-shm.txt")
	socket := busbwTable(t, "all_reduce_perf-h200x2-nv18-p2p-shm-disabled-socket.txt")
	ratioAt := func(fallback map[int64]float64) float64 {
		l := largest(fallback)
		return fallback[l] / direct[l]
	}
	type measured struct {
		metric string
		value  float64
		size   int64
	}
	run := []measured{
		{"nccl.all_reduce.busbw", direct[largest(direct)], 0},
		{"nccl.fallback.p2p-disabled.ratio", ratioAt(shm), 0},
		{"nccl.fallback.p2p-shm-disabled.ratio", ratioAt(socket), 0},
	}
	for size := range direct {
		if size >= 256<<20 {
			run = append(run, measured{"nccl.all_reduce.busbw", direct[size], size})
		}
	}
	for _, m := range run {
		c, ok := b.Compare(m.metric, m.value, m.size)
		if !ok || !c.Pass {
			t.Errorf("against the shipped baseline: %v", c)
		}
	}

	higher := *b
	higher.Metrics = nil
	for _, m := range b.Metrics {
		if m.Direction == baseline.Higher {
			m.Expected *= 1.2
			by := map[int64]float64{}
			for s, v := range m.BySize {
				by[s] = v * 1.2
			}
			m.BySize = by
		}
		higher.Metrics = append(higher.Metrics, m)
	}
	c, _ := higher.Compare("nccl.all_reduce.busbw", direct[2<<30], 2<<30)
	if c.Pass || math.Abs(c.DeltaPct-(-16.67)) > 0.01 {
		t.Errorf("against a baseline 20%% higher: %v", c)
	}
	if want := "nccl.all_reduce.busbw at 2 GiB: 341.6 GB/s, expected 409.9 GB/s (fails below 368.9), -16.7%: fail"; c.String() != want {
		t.Errorf("String() = %q, want %q", c, want)
	}
}
