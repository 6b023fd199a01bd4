package stopwatch

import (
	"testing"
	"time"
)

func TestLapsAreConsecutiveAndAddedStepsStandApart(t *testing.T) {
	w := Start()
	time.Sleep(2 * time.Millisecond)
	w.Lap("first")
	w.Add("beside", time.Second)
	w.Lap("second")
	if len(w.Laps) != 3 {
		t.Fatalf("laps %v, want 3", w.Laps)
	}
	if w.Laps[0].Name != "first" || w.Laps[0].Took < 2*time.Millisecond {
		t.Errorf("first lap %v, want at least the 2 ms slept", w.Laps[0])
	}
	if w.Laps[1] != (Lap{"beside", time.Second}) {
		t.Errorf("added lap %v", w.Laps[1])
	}
	// The second lap began where the first ended, not at the added one.
	if w.Laps[2].Took >= time.Second {
		t.Errorf("second lap %v took the added step's time", w.Laps[2])
	}
}
