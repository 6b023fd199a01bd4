package results

import "runtime"

// ReadAhead reads results.json files (a job's nodes') on every CPU ahead
// of their reader (a merge, the scaling suite), which takes them in order
// with next(i), 0, 1, 2 ...: decoding JSON is most of a merge's time. At
// most a few files are decoded and waiting at once, so memory stays that
// of a few nodes. stop ends the readers when the reader gives up early.
func ReadAhead(paths []string) (next func(i int) (*Results, error), stop func()) {
	return ReadAheadFunc(len(paths), func(i int) (*Results, error) { return Read(paths[i]) })
}

// ReadAheadFunc is ReadAhead over n values that readOne(i) reads: a job
// directory's documents through its root, or the nodes a comparison reads
// and judges.
func ReadAheadFunc[T any](n int, readOne func(i int) (T, error)) (next func(i int) (T, error), stop func()) {
	type read struct {
		v   T
		err error
	}
	slots := make([]chan read, n)
	for i := range slots {
		slots[i] = make(chan read, 1)
	}
	window := make(chan struct{}, 2*runtime.GOMAXPROCS(0)+1)
	done := make(chan struct{})
	go func() {
		for i := range n {
			select {
			case window <- struct{}{}:
			case <-done:
				return
			}
			go func() {
				v, err := readOne(i)
				slots[i] <- read{v, err} // buffered: never blocks
			}()
		}
	}()
	next = func(i int) (T, error) {
		x := <-slots[i]
		<-window
		return x.v, x.err
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			close(done)
		}
	}
	return next, stop
}
