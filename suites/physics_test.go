package suites

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// A real good run holds no impossible sample; the same run with a bus
// bandwidth past what NVLink carries, or not a number, does, named.
func TestImpossibleSampleNamesABandwidthThePathCannotCarry(t *testing.T) {
	res, err := results.Read("../fixtures/results/h200x2-nv18-collectives-negative.results.json")
	if err != nil {
		t.Fatal(err)
	}
	n := res.Nodes[0]
	var ev node.Evidence
	if err := json.Unmarshal(n.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	if why := ImpossibleSample(n, &ev); why != "" {
		t.Fatalf("the real run: %s", why)
	}
	i := -1
	for j, r := range n.Runs {
		if r.Mode == "direct" && r.Op == "all_reduce" && r.Error == "" && len(r.Points) > 0 {
			i = j
		}
	}
	if i < 0 {
		t.Fatal("no direct all_reduce run")
	}
	runs := n.Runs
	n.Runs = append([]results.Run(nil), runs...)
	n.Runs[i].Points = append([]results.Point(nil), runs[i].Points...)
	n.Runs[i].Points[len(n.Runs[i].Points)-1].BusBW = 1e6
	if why := ImpossibleSample(n, &ev); !strings.Contains(why, "all_reduce_perf busbw at ") || !strings.Contains(why, "cannot be right") {
		t.Errorf("1e6 GB/s: %q", why)
	}
	// A failed run's numbers are not sampled, so not judged.
	n.Runs[i].Error = "killed"
	if why := ImpossibleSample(n, &ev); why != "" {
		t.Errorf("a failed run: %q", why)
	}
}
