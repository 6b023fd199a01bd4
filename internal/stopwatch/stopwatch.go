// Package stopwatch times the consecutive steps of a run, so results.json
// can say where a run's time went: the node's reading (harness/node) and
// the runner's phases share it.
package stopwatch

import "time"

// Lap is one step and the wall time it took.
type Lap struct {
	Name string
	Took time.Duration
}

// Watch records laps: each Lap closes the step begun at the previous one
// (or at Start).
type Watch struct {
	Laps []Lap
	last time.Time
}

// Start returns a running watch.
func Start() *Watch { return &Watch{last: time.Now()} }

// Lap closes the current step under name and begins the next.
func (w *Watch) Lap(name string) {
	now := time.Now()
	w.Laps = append(w.Laps, Lap{Name: name, Took: now.Sub(w.last)})
	w.last = now
}

// Add records a step timed elsewhere (one run beside the others) without
// touching the current one.
func (w *Watch) Add(name string, took time.Duration) {
	w.Laps = append(w.Laps, Lap{Name: name, Took: took})
}
