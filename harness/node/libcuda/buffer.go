package libcuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// DefaultBufferSize is the size WithBuffer allocates when asked for 0:
// 2 MiB, one large GPU page.
const DefaultBufferSize = 2 << 20

// Buffer is device memory allocated by WithBuffer, valid only while its
// function runs.
type Buffer struct {
	Ptr       uint64 // CUdeviceptr from cuMemAlloc_v2
	Size      int    // bytes allocated and exported, a multiple of the host page size
	DMABufFD  int    // DMA-BUF fd from cuMemGetHandleForAddressRange; -1 when the export failed
	ExportErr error  // why the export failed; nil when DMABufFD is valid
}

// WithBuffer allocates size bytes on the GPU with this CUDA ordinal, exports
// them as a DMA-BUF file descriptor and calls fn while both are alive. size
// <= 0 means DefaultBufferSize; other sizes are rounded up to the host page
// size, which the export requires. Init must have been called.
//
// The steps run on a new goroutine locked to its OS thread, since CUDA's
// current context belongs to the thread: retain the device's primary
// context, make it current, cuMemAlloc_v2, cuMemGetHandleForAddressRange,
// fn, then close the fd, cuMemFree_v2, unset the current context and release
// the primary context. fn runs on that same thread; it must not call
// runtime.UnlockOSThread, and may panic (the panic is raised again in the
// caller after the cleanup).
//
// A failed export is not an error of WithBuffer: fn still runs, with
// DMABufFD -1 and ExportErr saying why, so that the legacy (peermem) path
// can be tried on Ptr. The error returned joins every failed step of the
// setup and of the cleanup; cleanup always runs for what was set up.
func (l *Lib) WithBuffer(ordinal, size int, fn func(Buffer)) error {
	if l.handle == nil {
		return ErrClosed
	}
	if size <= 0 {
		size = DefaultBufferSize
	}
	size = roundUp(size, os.Getpagesize())

	type outcome struct {
		err      error
		finished bool // withBuffer returned normally
		panicked bool
		value    any
	}
	done := make(chan outcome, 1)
	go func() {
		// Never unlocked: when this goroutine ends the runtime ends its
		// thread too, so no CUDA state of ours is left on a thread that
		// other goroutines run on.
		runtime.LockOSThread()
		var o outcome
		defer func() {
			if !o.finished && !o.panicked {
				o.err = errors.New("WithBuffer: fn ended its goroutine (runtime.Goexit, t.FailNow?)")
			}
			done <- o
		}()
		defer func() {
			if v := recover(); v != nil {
				o.panicked, o.value = true, v
			}
		}()
		o.err = l.withBuffer(ordinal, size, fn)
		o.finished = true
	}()
	o := <-done
	if o.panicked {
		panic(o.value)
	}
	if o.err != nil {
		return fmt.Errorf("GPU %d buffer of %d bytes: %w", ordinal, size, o.err)
	}
	return nil
}

// withBuffer is WithBuffer on the locked thread. Each step that succeeded
// registers its undo as a defer; the first defer, run last, joins all
// errors.
func (l *Lib) withBuffer(ordinal, size int, fn func(Buffer)) (err error) {
	var errs []error
	fail := func(e error) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	defer func() { err = errors.Join(errs...) }()

	dev, e := l.device(ordinal)
	if e != nil {
		fail(e)
		return
	}
	ctx, e := l.primaryCtxRetain(dev)
	if e != nil {
		fail(e)
		return
	}
	defer func() { fail(l.primaryCtxRelease(dev)) }()
	if e := l.ctxSetCurrent(ctx); e != nil {
		fail(e)
		return
	}
	defer func() { fail(l.ctxSetCurrent(nil)) }()
	ptr, e := l.memAlloc(size)
	if e != nil {
		fail(e)
		return
	}
	defer func() { fail(l.memFree(ptr)) }()

	buf := Buffer{Ptr: ptr, Size: size, DMABufFD: -1}
	if fd, e := l.exportDMABuf(ptr, size); e != nil {
		buf.ExportErr = e
	} else {
		buf.DMABufFD = fd
		defer func() {
			if e := syscall.Close(fd); e != nil {
				fail(fmt.Errorf("closing DMA-BUF fd %d: %w", fd, e))
			}
		}()
	}
	fn(buf)
	return
}

func roundUp(n, to int) int {
	return (n + to - 1) / to * to
}
