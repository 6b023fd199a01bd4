// Package libverbs loads rdma-core's libibverbs.so.1 at run time with dlopen
// and uses the few verbs gdrcheck needs to prove that a NIC can register
// memory: list and open devices, allocate a protection domain, register a
// memory region (ibv_reg_mr, the peermem path for GPU memory) or a DMA-BUF
// (ibv_reg_dmabuf_mr, rdma-core 34 and later) and deregister it at once.
//
// No rdma-core header is needed to build it: the verbs objects are opaque
// pointers here, internal/dl loads the library and only -ldl is linked.
// Where libibverbs.so.1 cannot be found, Open returns an error wrapping
// ErrNotFound.
package libverbs

/*
#include <stdint.h>
#include <stdlib.h>

// Calls through the resolved function pointers. struct ibv_device, ibv_context,
// ibv_pd and ibv_mr are only ever handled as opaque pointers.

static void **gdr_ibv_get_device_list(void *f, int *n) {
	return ((void **(*)(int *))f)(n);
}
static void gdr_ibv_free_device_list(void *f, void **list) {
	((void (*)(void **))f)(list);
}
static void *gdr_device_at(void **list, int i) {
	return list[i];
}
static const char *gdr_ibv_get_device_name(void *f, void *dev) {
	return ((const char *(*)(void *))f)(dev);
}
static void *gdr_ibv_open_device(void *f, void *dev) {
	return ((void *(*)(void *))f)(dev);
}
static int gdr_ibv_close_device(void *f, void *ctx) {
	return ((int (*)(void *))f)(ctx);
}
static void *gdr_ibv_alloc_pd(void *f, void *ctx) {
	return ((void *(*)(void *))f)(ctx);
}
static int gdr_ibv_dealloc_pd(void *f, void *pd) {
	return ((int (*)(void *))f)(pd);
}
static void *gdr_ibv_reg_mr(void *f, void *pd, uint64_t addr, size_t length, int access) {
	return ((void *(*)(void *, void *, size_t, int))f)(pd, (void *)(uintptr_t)addr, length, access);
}
static void *gdr_ibv_reg_dmabuf_mr(void *f, void *pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
	return ((void *(*)(void *, uint64_t, size_t, uint64_t, int, int))f)(pd, offset, length, iova, fd, access);
}
static int gdr_ibv_dereg_mr(void *f, void *mr) {
	return ((int (*)(void *))f)(mr);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"

	"github.com/gdrcheck/gdrcheck/internal/dl"
)

// Name is the file name Open asks the dynamic loader for.
const Name = "libibverbs.so.1"

// library is how Open loads it, and the errors it wraps.
var library = dl.Library{Name: Name, NotFound: ErrNotFound, MissingSymbol: ErrMissingSymbol}

// Access flags of every registration: IBV_ACCESS_LOCAL_WRITE |
// IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, what a GPUDirect RDMA
// target needs.
const accessFlags = 1 | 2 | 4

// Lib is libibverbs.so.1 loaded into this process. Its methods may be called
// from several goroutines at once, except Close.
type Lib struct {
	handle *dl.Handle // nil once closed
	path   string
	fn     functions
}

// functions holds the resolved entry points: addresses in libibverbs, never
// Go pointers.
type functions struct {
	getDeviceList, freeDeviceList, getDeviceName, openDevice, closeDevice,
	allocPD, deallocPD, regMR, deregMR unsafe.Pointer
	regDMABufMR unsafe.Pointer // nil before rdma-core 34
}

// Open loads libibverbs.so.1 and resolves the verbs this package uses. It
// returns an error wrapping ErrNotFound when the loader cannot find the
// library, and one wrapping ErrMissingSymbol when a required verb is
// missing. ibv_reg_dmabuf_mr is optional: see HasRegDMABufMR.
func Open() (*Lib, error) {
	h, err := library.Open()
	if err != nil {
		return nil, err
	}
	l := &Lib{handle: h}
	f := &l.fn
	for _, r := range []struct {
		dst  *unsafe.Pointer
		name string
	}{
		{&f.getDeviceList, "ibv_get_device_list"},
		{&f.freeDeviceList, "ibv_free_device_list"},
		{&f.getDeviceName, "ibv_get_device_name"},
		{&f.openDevice, "ibv_open_device"},
		{&f.closeDevice, "ibv_close_device"},
		{&f.allocPD, "ibv_alloc_pd"},
		{&f.deallocPD, "ibv_dealloc_pd"},
		{&f.regMR, "ibv_reg_mr"},
		{&f.deregMR, "ibv_dereg_mr"},
	} {
		p, err := h.Sym(r.name)
		if err != nil {
			_ = h.Close() // the error that matters is err
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		*r.dst = p
	}
	if p, err := h.Sym("ibv_reg_dmabuf_mr"); err == nil {
		f.regDMABufMR = p
	}
	l.path = loadedPath(h)
	return l, nil
}

// loadedPath is the real file behind h: the loader's link map entry with
// symlinks resolved, or else the mapping of libibverbs.so* in
// /proc/self/maps. It is "" when neither says.
func loadedPath(h *dl.Handle) string {
	if name := h.LinkMapName(); name != "" {
		if p, err := filepath.EvalSymlinks(name); err == nil {
			return p
		}
	}
	return mappedPath("/proc/self/maps", "libibverbs.so")
}

// Close releases the library handle; afterwards the methods of l return
// ErrClosed. The code stays mapped (it is opened with RTLD_NODELETE), so
// Devices opened before keep working and must still be closed. Close should
// not run while another method of l is running.
func (l *Lib) Close() error {
	if l.handle == nil {
		return nil
	}
	h := l.handle
	l.handle = nil
	return h.Close()
}

// Path is the real file the library was loaded from, e.g.
// "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0"; "" if unknown.
func (l *Lib) Path() string { return l.path }

// RDMACoreVersion is the rdma-core release the library comes from, read from
// the name of the file it was loaded from (libibverbs.so.1.14.50.0 is
// rdma-core 50). ok is false when the name does not carry it.
func (l *Lib) RDMACoreVersion() (version int, ok bool) {
	return ParseRDMACoreVersion(filepath.Base(l.path))
}

// HasRegDMABufMR reports whether the library exports ibv_reg_dmabuf_mr
// (rdma-core 34 and later).
func (l *Lib) HasRegDMABufMR() bool { return l.fn.regDMABufMR != nil }

// Devices lists the names of the RDMA devices, e.g. "mlx5_0". With no RDMA
// device, or no RDMA support in the kernel (ENOSYS), the list is empty and
// the error nil.
func (l *Lib) Devices() ([]string, error) {
	if l.handle == nil {
		return nil, ErrClosed
	}
	var names []string
	err := l.withDeviceList(func(dev unsafe.Pointer, name string) bool {
		names = append(names, name)
		return true
	})
	if names == nil && err == nil {
		names = []string{}
	}
	return names, err
}

// withDeviceList calls fn for each device of ibv_get_device_list until fn
// returns false, then frees the list.
func (l *Lib) withDeviceList(fn func(dev unsafe.Pointer, name string) bool) error {
	var n C.int
	list, errno := C.gdr_ibv_get_device_list(l.fn.getDeviceList, &n)
	if list == nil {
		if errno == syscall.ENOSYS {
			return nil
		}
		return newError("ibv_get_device_list", errno)
	}
	defer C.gdr_ibv_free_device_list(l.fn.freeDeviceList, list)
	for i := 0; i < int(n); i++ {
		dev := C.gdr_device_at(list, C.int(i))
		if dev == nil {
			break
		}
		if !fn(dev, C.GoString(C.gdr_ibv_get_device_name(l.fn.getDeviceName, dev))) {
			break
		}
	}
	return nil
}

// Device is an RDMA device opened with ibv_open_device. Its methods may be
// called from several goroutines at once.
type Device struct {
	lib  *Lib
	name string

	mu  sync.Mutex
	ctx unsafe.Pointer // struct ibv_context *; nil once closed
	pd  unsafe.Pointer // struct ibv_pd *, allocated on first registration
}

// OpenDevice opens the RDMA device with this name. A name not in Devices
// gives an error wrapping ErrNoDevice.
func (l *Lib) OpenDevice(name string) (*Device, error) {
	if l.handle == nil {
		return nil, ErrClosed
	}
	var ctx unsafe.Pointer
	var openErr error
	found := false
	err := l.withDeviceList(func(dev unsafe.Pointer, n string) bool {
		if n != name {
			return true
		}
		found = true
		var errno error
		ctx, errno = C.gdr_ibv_open_device(l.fn.openDevice, dev)
		if ctx == nil {
			openErr = newError("ibv_open_device", errno)
		}
		return false
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("RDMA device %q: %w", name, err)
	case !found:
		return nil, fmt.Errorf("RDMA device %q: %w", name, ErrNoDevice)
	case openErr != nil:
		return nil, fmt.Errorf("RDMA device %q: %w", name, openErr)
	}
	// The context stays valid after ibv_free_device_list.
	return &Device{lib: l, name: name, ctx: ctx}, nil
}

// Name is the device's name, e.g. "mlx5_0".
func (d *Device) Name() string { return d.name }

// RegMR registers size bytes at addr (host memory, or GPU memory where
// nvidia-peermem is loaded) with ibv_reg_mr and deregisters them at once.
// A failure is an *Error naming the verb.
func (d *Device) RegMR(addr, size uint64) error {
	return d.register("ibv_reg_mr", func(pd unsafe.Pointer) (unsafe.Pointer, error) {
		mr, errno := C.gdr_ibv_reg_mr(d.lib.fn.regMR, pd, C.uint64_t(addr), C.size_t(size), accessFlags)
		return mr, errno
	})
}

// RegDMABuf registers size bytes at offset in the DMA-BUF fd, mapped at
// iova, with ibv_reg_dmabuf_mr and deregisters them at once. Without
// ibv_reg_dmabuf_mr in the library it returns an error wrapping
// ErrMissingSymbol; a failure of the verb is an *Error, e.g.
// "ibv_reg_dmabuf_mr: Operation not supported (errno 95)".
func (d *Device) RegDMABuf(fd int, offset, size, iova uint64) error {
	if d.lib.fn.regDMABufMR == nil {
		return fmt.Errorf("RDMA device %q: ibv_reg_dmabuf_mr: %w (rdma-core older than 34)", d.name, ErrMissingSymbol)
	}
	return d.register("ibv_reg_dmabuf_mr", func(pd unsafe.Pointer) (unsafe.Pointer, error) {
		mr, errno := C.gdr_ibv_reg_dmabuf_mr(d.lib.fn.regDMABufMR, pd, C.uint64_t(offset), C.size_t(size), C.uint64_t(iova), C.int(fd), accessFlags)
		return mr, errno
	})
}

// register allocates the protection domain if needed, calls reg and
// deregisters what it registered.
func (d *Device) register(call string, reg func(pd unsafe.Pointer) (unsafe.Pointer, error)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil {
		return fmt.Errorf("RDMA device %q: %w", d.name, ErrClosed)
	}
	if d.pd == nil {
		pd, errno := C.gdr_ibv_alloc_pd(d.lib.fn.allocPD, d.ctx)
		if pd == nil {
			return fmt.Errorf("RDMA device %q: %w", d.name, newError("ibv_alloc_pd", errno))
		}
		d.pd = pd
	}
	mr, errno := reg(d.pd)
	if mr == nil {
		return fmt.Errorf("RDMA device %q: %w", d.name, newError(call, errno))
	}
	if rc, errno := C.gdr_ibv_dereg_mr(d.lib.fn.deregMR, mr); rc != 0 {
		return fmt.Errorf("RDMA device %q: %w", d.name, newError("ibv_dereg_mr", returnedErrno(rc, errno)))
	}
	return nil
}

// Close deallocates the protection domain and closes the device.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil {
		return nil
	}
	var errs []error
	if d.pd != nil {
		if rc, errno := C.gdr_ibv_dealloc_pd(d.lib.fn.deallocPD, d.pd); rc != 0 {
			errs = append(errs, newError("ibv_dealloc_pd", returnedErrno(rc, errno)))
		}
		d.pd = nil
	}
	if rc, errno := C.gdr_ibv_close_device(d.lib.fn.closeDevice, d.ctx); rc != 0 {
		errs = append(errs, newError("ibv_close_device", returnedErrno(rc, errno)))
	}
	d.ctx = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("RDMA device %q: %w", d.name, err)
	}
	return nil
}

// returnedErrno is the errno of a verb that returns an int: ibv_dereg_mr and
// ibv_dealloc_pd return the errno value itself, others -1 with errno set.
func returnedErrno(rc C.int, errno error) error {
	if rc > 0 {
		return syscall.Errno(rc)
	}
	return errno
}
