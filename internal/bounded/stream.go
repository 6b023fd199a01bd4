package bounded

import (
	"context"
	"fmt"
	"io"
)

// MaxStream is the total a stream handed to gdrcheck (analyze's FILE, a
// pipe) is read up to by default. The largest real output in fixtures/ is
// a few MiB; a log of every rank of a 16,384-node run with NCCL_DEBUG=INFO
// is well under a GiB. Past it the input is /dev/zero, a loop, or an
// endless pipe, and what was read is judged as a partial input.
const MaxStream = 4 << 30

// StopError ends a Reader's input on purpose, before its end: at the
// total cap, or because the reader was told to stop. What came before is
// still evidence, only not all of it, so the parsers (Lines) take it as
// the input's end, marked partial, rather than as a broken read.
type StopError struct {
	Read int64 // the bytes given before the stop
	Err  error // a *TooLargeError at the cap, else the context's cause ("interrupted by SIGINT")
}

func (e *StopError) Error() string {
	return fmt.Sprintf("reading stopped after %s: %v", Size(e.Read), e.Err)
}

func (e *StopError) Unwrap() error { return e.Err }

// Reader reads a stream up to a total of lim.Bytes, and until its context
// is done. Reads go through a goroutine of its own, so that a read that
// blocks (a pipe nobody writes to) does not keep the first signal from
// ending the input: Read returns at once and the goroutine is left to its
// read. Two buffers of readBufSize bytes are all it holds.
type Reader struct {
	ctx  context.Context
	src  io.Reader
	lim  Limit
	n    int64 // bytes given
	cur  []byte
	buf  []byte // the buffer cur is in, handed back once read
	full chan chunk
	free chan []byte
	stop *StopError
	err  error // io.EOF or a read error, once the source gave it
}

type chunk struct {
	buf []byte
	n   int
	err error
}

// NewReader reads r up to lim.Bytes in all, while ctx is not done.
func NewReader(ctx context.Context, r io.Reader, lim Limit) *Reader {
	if ctx == nil {
		ctx = context.Background()
	}
	return &Reader{ctx: ctx, src: r, lim: lim}
}

// Read gives what the source gave, until the source ends (io.EOF or its
// error), a byte past lim.Bytes comes (a *StopError wrapping a
// *TooLargeError), or ctx is done (a *StopError wrapping its cause).
func (r *Reader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.stop != nil {
			return 0, r.stop
		}
		if r.err != nil {
			return 0, r.err
		}
		if err := r.next(); err != nil {
			return 0, err
		}
	}
	if left := r.lim.Bytes - r.n; int64(len(r.cur)) > left {
		if left == 0 {
			r.stop = &StopError{Read: r.n, Err: &TooLargeError{Limit: r.lim, Offset: -1}}
			return 0, r.stop
		}
		p = p[:min(len(p), int(left))]
	}
	n := copy(p, r.cur)
	r.cur, r.n = r.cur[n:], r.n+int64(n)
	return n, nil
}

// next waits for the next chunk from the pump, or for ctx.
func (r *Reader) next() error {
	if r.full == nil {
		r.full, r.free = make(chan chunk), make(chan []byte, 2)
		r.free <- make([]byte, readBufSize)
		r.free <- make([]byte, readBufSize)
		go r.pump()
	}
	if r.buf != nil {
		r.free <- r.buf
		r.buf = nil
	}
	select {
	case <-r.ctx.Done():
		r.stop = &StopError{Read: r.n, Err: context.Cause(r.ctx)}
		return r.stop
	case c := <-r.full:
		r.buf, r.cur = c.buf, c.buf[:c.n]
		if c.err != nil {
			r.err = c.err
		}
		return nil
	}
}

// pump reads the source into free buffers until it ends or ctx is done.
func (r *Reader) pump() {
	for {
		var buf []byte
		select {
		case <-r.ctx.Done():
			return
		case buf = <-r.free:
		}
		n, err := r.src.Read(buf)
		select {
		case <-r.ctx.Done():
			return
		case r.full <- chunk{buf: buf, n: n, err: err}:
		}
		if err != nil {
			return
		}
	}
}

// Stopped is why the input was stopped before its end, or nil.
func (r *Reader) Stopped() error {
	if r.stop == nil {
		return nil
	}
	return r.stop
}
