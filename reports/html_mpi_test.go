package reports

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// The mpi suite's runs on 2 x H200 (testdata/mpi-h200x2-osu.results.json,
// written by gdrcheck run --suites mpi over the composed osu_bw and
// osu_latency outputs of fixtures/mpi-bench): osu_bw's whole curve is one
// chart of GPU-to-GPU bandwidth, and osu_latency, which has no bandwidth,
// draws no chart of zeros.
func TestHTMLDrawsOSUBandwidthCurvesAndNoLatencyAsBandwidth(t *testing.T) {
	r, err := results.Read("testdata/mpi-h200x2-osu.results.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range r.Nodes[0].Runs {
		if run.Tool == "osu_bw" && len(run.Points) < 20 {
			t.Errorf("%s %s: %d points, want osu_bw's every row", run.Op, run.Mode, len(run.Points))
		}
	}
	page := renderHTML(t, r)
	checkSVGs(t, page)
	if !strings.Contains(page, "osu_bw: GPU-to-GPU bandwidth by message size") {
		t.Error("no osu_bw bandwidth chart")
	}
	if strings.Contains(page, "osu_latency: ") {
		t.Error("osu_latency is drawn as a bandwidth chart")
	}
}
