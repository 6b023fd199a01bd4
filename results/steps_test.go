package results

import (
	"math"
	"strings"
	"testing"
)

func TestCheckStepsRefusesADurationNoClockGives(t *testing.T) {
	for _, d := range []float64{-0.001, math.NaN(), math.Inf(1)} {
		err := checkSteps([]Step{{Name: "suites", Duration: 0.1}, {Name: "nvml", Duration: d}}, "nodes[0]")
		if err == nil || !strings.Contains(err.Error(), `steps[1] ("nvml")`) {
			t.Errorf("duration %v: error %v, want one naming steps[1]", d, err)
		}
	}
	if err := checkSteps([]Step{{Name: "suites", Duration: 0}}, "nodes[0]"); err != nil {
		t.Errorf("a zero duration: %v", err)
	}
}
