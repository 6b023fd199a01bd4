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

// ReadAheadFunc is ReadAhead over n documents that read(i) reads (a job
// directory's, through its root).
func ReadAheadFunc(n int, readOne func(i int) (*Results, error)) (next func(i int) (*Results, error), stop func()) {
	type read struct {
		r   *Results
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
				r, err := readOne(i)
				slots[i] <- read{r, err}
			}()
		}
	}()
	next = func(i int) (*Results, error) {
		x := <-slots[i]
		<-window
		return x.r, x.err
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

// IndexAhead is an Index whose nodes are read on every CPU ahead of a
// reader that asks for them in a known order: a comparison takes the
// run after's nodes in order and, for each, its namesake in the run
// before. A node asked for out of that order is read then.
type IndexAhead struct {
	*Index
	order []int
	pos   int
	next  func(i int) (*Results, error)
	stop  func()
}

// Ahead reads x's nodes order[0], order[1] ... ahead; Stop ends it.
func (x *Index) Ahead(order []int) *IndexAhead {
	a := &IndexAhead{Index: x, order: order}
	a.next, a.stop = ReadAheadFunc(len(order), func(i int) (*Results, error) {
		n, err := x.At(order[i])
		if err != nil {
			return nil, err
		}
		return &Results{Nodes: []Node{n}}, nil
	})
	return a
}

// At is the Index's, from the read-ahead where i is the next in order.
func (a *IndexAhead) At(i int) (Node, error) {
	if a.pos < len(a.order) && a.order[a.pos] == i {
		r, err := a.next(a.pos)
		a.pos++
		if err != nil {
			return Node{}, err
		}
		return r.Nodes[0], nil
	}
	return a.Index.At(i)
}

// Node is the Index's, through At.
func (a *IndexAhead) Node(name string) (Node, bool, error) {
	i, ok := a.byName[name]
	if !ok {
		return Node{}, false, nil
	}
	n, err := a.At(i)
	return n, err == nil, err
}

// Stop ends the readers.
func (a *IndexAhead) Stop() { a.stop() }

// Order is where each of names is in x (the last of that name), in the
// order of names, leaving out those x lacks: the order x's namesakes of
// another run's nodes are asked for.
func (x *Index) Order(names []string) []int {
	var out []int
	for _, n := range names {
		if i, ok := x.byName[n]; ok {
			out = append(out, i)
		}
	}
	return out
}
