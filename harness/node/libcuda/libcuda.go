// Package libcuda loads NVIDIA's CUDA driver library (libcuda.so.1) at run
// time with dlopen and calls the few entry points gdrcheck needs: the driver
// version, the devices with their PCI bus ids and GPUDirect attributes, and a
// device buffer exported as a DMA-BUF file descriptor
// (cuMemGetHandleForAddressRange), which is what the DMA-BUF GPUDirect RDMA
// path rests on.
//
// No CUDA header is needed to build it: the few types are declared here,
// internal/dl loads the library and only -ldl is linked. Where
// libcuda.so.1 cannot be found, Open returns an error wrapping ErrNotFound.
package libcuda

/*
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;

// Calls through the resolved function pointers. Out parameters point to Go
// memory that holds no Go pointers and is not kept after the call.

static CUresult gdr_cuInit(void *f, unsigned int flags) {
	return ((CUresult (*)(unsigned int))f)(flags);
}
static CUresult gdr_cuDriverGetVersion(void *f, int *v) {
	return ((CUresult (*)(int *))f)(v);
}
static CUresult gdr_cuDeviceGetCount(void *f, int *n) {
	return ((CUresult (*)(int *))f)(n);
}
static CUresult gdr_cuDeviceGet(void *f, CUdevice *d, int ordinal) {
	return ((CUresult (*)(CUdevice *, int))f)(d, ordinal);
}
static CUresult gdr_cuDeviceGetName(void *f, char *buf, int len, CUdevice d) {
	return ((CUresult (*)(char *, int, CUdevice))f)(buf, len, d);
}
static CUresult gdr_cuDeviceGetAttribute(void *f, int *v, int attr, CUdevice d) {
	return ((CUresult (*)(int *, int, CUdevice))f)(v, attr, d);
}
static CUresult gdr_cuDeviceGetPCIBusId(void *f, char *buf, int len, CUdevice d) {
	return ((CUresult (*)(char *, int, CUdevice))f)(buf, len, d);
}
static CUresult gdr_cuDevicePrimaryCtxRetain(void *f, CUcontext *ctx, CUdevice d) {
	return ((CUresult (*)(CUcontext *, CUdevice))f)(ctx, d);
}
static CUresult gdr_cuDevicePrimaryCtxRelease(void *f, CUdevice d) {
	return ((CUresult (*)(CUdevice))f)(d);
}
static CUresult gdr_cuCtxSetCurrent(void *f, CUcontext ctx) {
	return ((CUresult (*)(CUcontext))f)(ctx);
}
static CUresult gdr_cuMemAlloc(void *f, CUdeviceptr *p, size_t size) {
	return ((CUresult (*)(CUdeviceptr *, size_t))f)(p, size);
}
static CUresult gdr_cuMemFree(void *f, CUdeviceptr p) {
	return ((CUresult (*)(CUdeviceptr))f)(p);
}
// handleType 1 is CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, for which the handle
// is an int file descriptor.
static CUresult gdr_cuMemGetHandleForAddressRange(void *f, int *fd, CUdeviceptr p, size_t size) {
	return ((CUresult (*)(void *, CUdeviceptr, size_t, int, unsigned long long))f)(fd, p, size, 1, 0);
}
// The strings returned by cuGetErrorName/String are static in libcuda.
static CUresult gdr_cuGetErrorName(void *f, CUresult code, const char **s) {
	return ((CUresult (*)(CUresult, const char **))f)(code, s);
}
static CUresult gdr_cuGetErrorString(void *f, CUresult code, const char **s) {
	return ((CUresult (*)(CUresult, const char **))f)(code, s);
}
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/gdrcheck/gdrcheck/internal/dl"
)

// Name is the file name Open asks the dynamic loader for.
const Name = "libcuda.so.1"

// library is how Open loads it, and the errors it wraps.
var library = dl.Library{Name: Name, NotFound: ErrNotFound, MissingSymbol: ErrMissingSymbol}

// Attribute is a CUdevice_attribute value from cuda.h.
type Attribute int

// The device attributes gdrcheck reads.
const (
	AttrGPUDirectRDMASupported          Attribute = 116 // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
	AttrGPUDirectRDMAFlushWritesOptions Attribute = 117 // ..._GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS (bit mask)
	AttrGPUDirectRDMAWritesOrdering     Attribute = 118 // ..._GPU_DIRECT_RDMA_WRITES_ORDERING (0, 100, 200)
	AttrDMABufSupported                 Attribute = 124 // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
)

func (a Attribute) String() string {
	switch a {
	case AttrGPUDirectRDMASupported:
		return "GPU_DIRECT_RDMA_SUPPORTED"
	case AttrGPUDirectRDMAFlushWritesOptions:
		return "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS"
	case AttrGPUDirectRDMAWritesOrdering:
		return "GPU_DIRECT_RDMA_WRITES_ORDERING"
	case AttrDMABufSupported:
		return "DMA_BUF_SUPPORTED"
	}
	return fmt.Sprintf("Attribute(%d)", int(a))
}

// Lib is libcuda.so.1 loaded into this process. Its methods may be called
// from several goroutines at once, except Close. Call Init before the device
// methods.
type Lib struct {
	handle *dl.Handle // nil once closed
	fn     functions
	// Names of the versioned entry points actually resolved, used in errors.
	ctxReleaseName string
}

// functions holds the resolved entry points: addresses in libcuda, never Go
// pointers.
type functions struct {
	cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet,
	cuDeviceGetName, cuDeviceGetAttribute, cuDeviceGetPCIBusId,
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuCtxSetCurrent,
	cuMemAlloc, cuMemFree, cuGetErrorName, cuGetErrorString unsafe.Pointer
	cuMemGetHandleForAddressRange unsafe.Pointer // nil before CUDA 11.7
}

// Open loads libcuda.so.1 and resolves the entry points this package uses.
// It returns an error wrapping ErrNotFound when the loader cannot find the
// library, and one wrapping ErrMissingSymbol when a required entry point is
// missing. cuMemGetHandleForAddressRange is optional: see HasDMABufExport.
func Open() (*Lib, error) {
	h, err := library.Open()
	if err != nil {
		return nil, err
	}
	l := &Lib{handle: h}
	f := &l.fn
	required := []struct {
		dst   *unsafe.Pointer
		names []string // tried in order
	}{
		{&f.cuInit, []string{"cuInit"}},
		{&f.cuDriverGetVersion, []string{"cuDriverGetVersion"}},
		{&f.cuDeviceGetCount, []string{"cuDeviceGetCount"}},
		{&f.cuDeviceGet, []string{"cuDeviceGet"}},
		{&f.cuDeviceGetName, []string{"cuDeviceGetName"}},
		{&f.cuDeviceGetAttribute, []string{"cuDeviceGetAttribute"}},
		{&f.cuDeviceGetPCIBusId, []string{"cuDeviceGetPCIBusId"}},
		{&f.cuDevicePrimaryCtxRetain, []string{"cuDevicePrimaryCtxRetain"}},
		{&f.cuDevicePrimaryCtxRelease, []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{&f.cuCtxSetCurrent, []string{"cuCtxSetCurrent"}},
		{&f.cuMemAlloc, []string{"cuMemAlloc_v2"}},
		{&f.cuMemFree, []string{"cuMemFree_v2"}},
		{&f.cuGetErrorName, []string{"cuGetErrorName"}},
		{&f.cuGetErrorString, []string{"cuGetErrorString"}},
	}
	for _, r := range required {
		var firstErr error
		for _, name := range r.names {
			p, err := h.Sym(name)
			if err == nil {
				*r.dst = p
				if r.dst == &f.cuDevicePrimaryCtxRelease {
					l.ctxReleaseName = name
				}
				break
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if *r.dst == nil {
			_ = h.Close() // the error that matters is firstErr
			return nil, fmt.Errorf("%s: %w", Name, firstErr)
		}
	}
	if p, err := h.Sym("cuMemGetHandleForAddressRange"); err == nil {
		f.cuMemGetHandleForAddressRange = p
	}
	return l, nil
}

// Close releases the library handle; afterwards the methods of l return
// ErrClosed. The code stays mapped (libcuda is opened with RTLD_NODELETE, as
// its own threads may still run), so a call racing with Close cannot jump
// into unmapped memory, but Close should not run while another method of l
// is running.
func (l *Lib) Close() error {
	if l.handle == nil {
		return nil
	}
	h := l.handle
	l.handle = nil
	return h.Close()
}

// HasDMABufExport reports whether the driver exports
// cuMemGetHandleForAddressRange (CUDA 11.7 and later).
func (l *Lib) HasDMABufExport() bool { return l.fn.cuMemGetHandleForAddressRange != nil }

// Init calls cuInit(0). It may be called more than once.
func (l *Lib) Init() error {
	if l.handle == nil {
		return ErrClosed
	}
	return l.check("cuInit", C.gdr_cuInit(l.fn.cuInit, 0))
}

// DriverVersion is cuDriverGetVersion: the CUDA version the driver supports,
// 1000*major + 10*minor (13000 for CUDA 13.0). It works before Init.
func (l *Lib) DriverVersion() (int, error) {
	if l.handle == nil {
		return 0, ErrClosed
	}
	var v C.int
	if err := l.check("cuDriverGetVersion", C.gdr_cuDriverGetVersion(l.fn.cuDriverGetVersion, &v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount is cuDeviceGetCount.
func (l *Lib) DeviceCount() (int, error) {
	if l.handle == nil {
		return 0, ErrClosed
	}
	var n C.int
	if err := l.check("cuDeviceGetCount", C.gdr_cuDeviceGetCount(l.fn.cuDeviceGetCount, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// DeviceName is cuDeviceGetName for the device with this CUDA ordinal.
func (l *Lib) DeviceName(ordinal int) (string, error) {
	dev, err := l.device(ordinal)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 256)
	res := C.gdr_cuDeviceGetName(l.fn.cuDeviceGetName, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)), dev)
	if err := l.check("cuDeviceGetName", res); err != nil {
		return "", fmt.Errorf("GPU %d: %w", ordinal, err)
	}
	return cstring(buf), nil
}

// PCIBusID is cuDeviceGetPCIBusId normalised to the sysfs form,
// lower-case with a 4-digit domain: "0000:18:00.0".
func (l *Lib) PCIBusID(ordinal int) (string, error) {
	dev, err := l.device(ordinal)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 64)
	res := C.gdr_cuDeviceGetPCIBusId(l.fn.cuDeviceGetPCIBusId, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)), dev)
	if err := l.check("cuDeviceGetPCIBusId", res); err != nil {
		return "", fmt.Errorf("GPU %d: %w", ordinal, err)
	}
	id, err := NormalizeBusID(cstring(buf))
	if err != nil {
		return "", fmt.Errorf("GPU %d: %w", ordinal, err)
	}
	return id, nil
}

// Attribute is cuDeviceGetAttribute.
func (l *Lib) Attribute(ordinal int, attr Attribute) (int, error) {
	dev, err := l.device(ordinal)
	if err != nil {
		return 0, err
	}
	var v C.int
	res := C.gdr_cuDeviceGetAttribute(l.fn.cuDeviceGetAttribute, &v, C.int(attr), dev)
	if err := l.check("cuDeviceGetAttribute", res); err != nil {
		return 0, fmt.Errorf("GPU %d attribute %s (%d): %w", ordinal, attr, int(attr), err)
	}
	return int(v), nil
}

// device is cuDeviceGet; errors name the ordinal.
func (l *Lib) device(ordinal int) (C.CUdevice, error) {
	if l.handle == nil {
		return 0, ErrClosed
	}
	var d C.CUdevice
	if err := l.check("cuDeviceGet", C.gdr_cuDeviceGet(l.fn.cuDeviceGet, &d, C.int(ordinal))); err != nil {
		return 0, fmt.Errorf("GPU %d: %w", ordinal, err)
	}
	return d, nil
}

// The steps of WithBuffer. They must run on one locked OS thread, as the
// current context belongs to the thread.

func (l *Lib) primaryCtxRetain(d C.CUdevice) (C.CUcontext, error) {
	var ctx C.CUcontext
	if err := l.check("cuDevicePrimaryCtxRetain", C.gdr_cuDevicePrimaryCtxRetain(l.fn.cuDevicePrimaryCtxRetain, &ctx, d)); err != nil {
		return nil, err
	}
	return ctx, nil
}

func (l *Lib) primaryCtxRelease(d C.CUdevice) error {
	return l.check(l.ctxReleaseName, C.gdr_cuDevicePrimaryCtxRelease(l.fn.cuDevicePrimaryCtxRelease, d))
}

func (l *Lib) ctxSetCurrent(ctx C.CUcontext) error {
	return l.check("cuCtxSetCurrent", C.gdr_cuCtxSetCurrent(l.fn.cuCtxSetCurrent, ctx))
}

func (l *Lib) memAlloc(size int) (uint64, error) {
	var p C.CUdeviceptr
	if err := l.check("cuMemAlloc_v2", C.gdr_cuMemAlloc(l.fn.cuMemAlloc, &p, C.size_t(size))); err != nil {
		return 0, err
	}
	return uint64(p), nil
}

func (l *Lib) memFree(p uint64) error {
	return l.check("cuMemFree_v2", C.gdr_cuMemFree(l.fn.cuMemFree, C.CUdeviceptr(p)))
}

// exportDMABuf is cuMemGetHandleForAddressRange(&fd, p, size,
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0). The caller owns the fd.
func (l *Lib) exportDMABuf(p uint64, size int) (int, error) {
	const call = "cuMemGetHandleForAddressRange"
	if l.fn.cuMemGetHandleForAddressRange == nil {
		return -1, fmt.Errorf("%s: %w (driver older than CUDA 11.7)", call, ErrMissingSymbol)
	}
	fd := C.int(-1)
	res := C.gdr_cuMemGetHandleForAddressRange(l.fn.cuMemGetHandleForAddressRange, &fd, C.CUdeviceptr(p), C.size_t(size))
	if err := l.check(call, res); err != nil {
		return -1, err
	}
	if fd < 0 {
		return -1, fmt.Errorf("%s: succeeded but returned fd %d", call, int(fd))
	}
	// Keep it out of programs this process starts meanwhile (os/exec): a
	// leaked fd would pin the GPU memory for the child's lifetime.
	syscall.CloseOnExec(int(fd))
	return int(fd), nil
}

// check turns a CUresult into nil or an *Error named by cuGetErrorName and
// cuGetErrorString.
func (l *Lib) check(call string, res C.CUresult) error {
	if res == 0 {
		return nil
	}
	e := &Error{Call: call, Code: int(res)}
	var s *C.char
	if C.gdr_cuGetErrorName(l.fn.cuGetErrorName, res, &s) == 0 && s != nil {
		e.Name = C.GoString(s)
	}
	s = nil
	if C.gdr_cuGetErrorString(l.fn.cuGetErrorString, res, &s) == 0 && s != nil {
		e.Text = C.GoString(s)
	}
	return e
}

// cstring is buf up to its first NUL.
func cstring(buf []byte) string {
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf)
}

// RetainPrimaryContexts retains the primary context of devices 0..n-1,
// each on its own goroutine: creating a context is most of what probing a
// GPU costs (a tenth of a second or more each), so a probe that starts it
// early, beside other work, and on every GPU at once, then finds its
// WithBuffer cheap. Failures are left for WithBuffer to meet and report.
// The returned release drops what was retained; it may be called more than
// once, and must be before the benchmarks: a context held here would keep
// memory on every GPU, and in EXCLUSIVE_PROCESS compute mode lock the
// benchmarks out. Init must have been called.
func (l *Lib) RetainPrimaryContexts(n int) (release func() error) {
	retained := make([]bool, n)
	devs := make([]C.CUdevice, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := l.device(i)
			if err != nil {
				return
			}
			if _, err := l.primaryCtxRetain(d); err == nil {
				devs[i], retained[i] = d, true
			}
		}()
	}
	wg.Wait()
	return sync.OnceValue(func() error {
		var errs []error
		for i, ok := range retained {
			if ok {
				if err := l.primaryCtxRelease(devs[i]); err != nil {
					errs = append(errs, fmt.Errorf("GPU %d: %w", i, err))
				}
			}
		}
		return errors.Join(errs...)
	})
}
