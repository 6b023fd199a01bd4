package libcuda

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
)

// These tests use the real libcuda.so.1 and GPUs. Where the library is
// missing they skip, saying so; where it is present every failure is real.

// open loads the library or skips the test when it is absent.
func open(t *testing.T) *Lib {
	t.Helper()
	l, err := Open()
	if errors.Is(err, ErrNotFound) {
		t.Skipf("no CUDA driver library here: %v", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// openInit is open, cuInit and the device count; it skips where the driver
// library is installed but sees no GPU.
func openInit(t *testing.T) (*Lib, int) {
	t.Helper()
	l := open(t)
	if err := l.Init(); err != nil {
		if IsCode(err, CodeNoDevice) {
			t.Skipf("CUDA driver library but no GPU here: %v", err)
		}
		t.Fatalf("Init: %v", err)
	}
	n, err := l.DeviceCount()
	if err != nil {
		t.Fatalf("DeviceCount: %v", err)
	}
	if n == 0 {
		t.Skip("CUDA driver reports 0 devices")
	}
	return l, n
}

// Open's library wraps this package's ErrNotFound where the loader finds
// no file of its name (internal/dl classifies the dlerror texts).
func TestOpenOfAMissingLibraryIsErrNotFound(t *testing.T) {
	l := library
	l.Name = "libgdrcheck-no-such-library.so.1"
	if _, err := l.Open(); !errors.Is(err, ErrNotFound) {
		t.Errorf("opening %q = %v, want an error wrapping ErrNotFound", l.Name, err)
	}
}

func TestOpen(t *testing.T) {
	l := open(t)
	t.Logf("cuMemGetHandleForAddressRange exported: %v", l.HasDMABufExport())
}

func TestDriverVersion(t *testing.T) {
	l := open(t)
	v, err := l.DriverVersion()
	if err != nil {
		t.Fatalf("DriverVersion: %v", err)
	}
	if v <= 0 {
		t.Errorf("DriverVersion = %d, want > 0", v)
	}
	if v >= 11070 && !l.HasDMABufExport() {
		t.Errorf("driver supports CUDA %d.%d but does not export cuMemGetHandleForAddressRange", v/1000, v%1000/10)
	}
	t.Logf("driver supports CUDA %d.%d", v/1000, v%1000/10)
}

var sysfsBusID = regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

func TestDevices(t *testing.T) {
	l, n := openInit(t)
	for i := 0; i < n; i++ {
		name, err := l.DeviceName(i)
		if err != nil || name == "" {
			t.Errorf("DeviceName(%d) = %q, %v; want a name", i, name, err)
		}
		id, err := l.PCIBusID(i)
		if err != nil {
			t.Errorf("PCIBusID(%d): %v", i, err)
			continue
		}
		if !sysfsBusID.MatchString(id) {
			t.Errorf("PCIBusID(%d) = %q, want the sysfs form like 0000:18:00.0", i, id)
		}
		if _, err := os.Stat("/sys/bus/pci/devices"); err == nil {
			if _, err := os.Stat(filepath.Join("/sys/bus/pci/devices", id)); err != nil {
				t.Errorf("PCIBusID(%d) = %q, not in sysfs: %v", i, id, err)
			}
		}
		attrs := map[Attribute]int{}
		for _, a := range []Attribute{AttrGPUDirectRDMASupported, AttrGPUDirectRDMAFlushWritesOptions, AttrGPUDirectRDMAWritesOrdering, AttrDMABufSupported} {
			v, err := l.Attribute(i, a)
			if err != nil {
				t.Errorf("Attribute(%d, %s): %v", i, a, err)
				continue
			}
			attrs[a] = v
		}
		for _, a := range []Attribute{AttrGPUDirectRDMASupported, AttrDMABufSupported} {
			if v, ok := attrs[a]; ok && v != 0 && v != 1 {
				t.Errorf("Attribute(%d, %s) = %d, want 0 or 1", i, a, v)
			}
		}
		t.Logf("GPU %d %s %s: %v", i, id, name, attrs)
	}
	if _, err := l.Attribute(n, AttrDMABufSupported); !IsCode(err, CodeInvalidDevice) {
		t.Errorf("Attribute(%d) past the last GPU: %v, want CUDA_ERROR_INVALID_DEVICE", n, err)
	}
}

// fdIdentity is what fstat says about an fd; ok is false when it is closed.
type fdIdentity struct {
	dev, ino uint64
	ok       bool
}

func fstat(fd int) (fdIdentity, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fdIdentity{}, err
	}
	return fdIdentity{dev: uint64(st.Dev), ino: st.Ino, ok: true}, nil
}

func TestWithBuffer(t *testing.T) {
	l, n := openInit(t)
	exported := 0
	for i := 0; i < n; i++ {
		dmabuf, err := l.Attribute(i, AttrDMABufSupported)
		if err != nil {
			t.Fatalf("Attribute(%d, %s): %v", i, AttrDMABufSupported, err)
		}
		var got Buffer
		var inside fdIdentity
		called := false
		err = l.WithBuffer(i, 0, func(b Buffer) {
			called, got = true, b
			if b.DMABufFD >= 0 {
				var e error
				if inside, e = fstat(b.DMABufFD); e != nil {
					t.Errorf("GPU %d: fstat of DMA-BUF fd %d inside fn: %v", i, b.DMABufFD, e)
				}
				flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(b.DMABufFD), syscall.F_GETFD, 0)
				if errno != 0 || flags&syscall.FD_CLOEXEC == 0 {
					t.Errorf("GPU %d: DMA-BUF fd %d flags %#x, %v: want FD_CLOEXEC", i, b.DMABufFD, flags, errno)
				}
				link, _ := os.Readlink(filepath.Join("/proc/self/fd", strconv.Itoa(b.DMABufFD)))
				t.Logf("GPU %d: DMA-BUF fd %d -> %q", i, b.DMABufFD, link)
			}
		})
		if err != nil {
			t.Errorf("GPU %d: WithBuffer: %v", i, err)
		}
		if !called {
			t.Errorf("GPU %d: WithBuffer did not call fn", i)
			continue
		}
		if got.Ptr == 0 || got.Size != DefaultBufferSize {
			t.Errorf("GPU %d: buffer %#x of %d bytes, want a pointer and %d bytes", i, got.Ptr, got.Size, DefaultBufferSize)
		}
		if (got.DMABufFD < 0) != (got.ExportErr != nil) {
			t.Errorf("GPU %d: DMABufFD %d with ExportErr %v: want exactly one of them", i, got.DMABufFD, got.ExportErr)
		}
		if dmabuf != 1 {
			t.Logf("GPU %d: DMA_BUF_SUPPORTED = %d, export: fd %d, %v", i, dmabuf, got.DMABufFD, got.ExportErr)
			continue
		}
		exported++
		if got.DMABufFD <= 2 || got.ExportErr != nil {
			t.Errorf("GPU %d has DMA_BUF_SUPPORTED = 1 but the export gave fd %d, %v; want an fd > 2", i, got.DMABufFD, got.ExportErr)
			continue
		}
		// Closed afterwards: fstat fails, or the number now names another file.
		if after, err := fstat(got.DMABufFD); err == nil && after == inside {
			t.Errorf("GPU %d: DMA-BUF fd %d still open after WithBuffer", i, got.DMABufFD)
		}
	}
	if exported == 0 {
		t.Log("no GPU here has DMA_BUF_SUPPORTED = 1; the DMA-BUF export was not checked")
	}
}

func TestWithBufferRoundsSizeToPages(t *testing.T) {
	l, _ := openInit(t)
	var size int
	if err := l.WithBuffer(0, 1, func(b Buffer) { size = b.Size }); err != nil {
		t.Fatalf("WithBuffer(0, 1): %v", err)
	}
	if size != os.Getpagesize() {
		t.Errorf("WithBuffer(0, 1) gave %d bytes, want one page (%d)", size, os.Getpagesize())
	}
}

func TestWithBufferPastTheLastGPU(t *testing.T) {
	l, n := openInit(t)
	called := false
	err := l.WithBuffer(n, 0, func(Buffer) { called = true })
	if !IsCode(err, CodeInvalidDevice) {
		t.Errorf("WithBuffer(%d) = %v, want CUDA_ERROR_INVALID_DEVICE", n, err)
	}
	if called {
		t.Error("WithBuffer called fn for a GPU that does not exist")
	}
}

func TestWithBufferPanicCleansUpAndPanicsInCaller(t *testing.T) {
	l, _ := openInit(t)
	fd := -1
	var inside fdIdentity
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want the panic of fn", v)
			}
		}()
		_ = l.WithBuffer(0, 0, func(b Buffer) {
			fd = b.DMABufFD
			if fd >= 0 {
				inside, _ = fstat(fd)
			}
			panic("boom")
		})
		t.Error("WithBuffer returned after fn panicked")
	}()
	if fd >= 0 {
		if after, err := fstat(fd); err == nil && after == inside {
			t.Errorf("DMA-BUF fd %d still open after fn panicked", fd)
		}
	}
	if err := l.WithBuffer(0, 0, func(Buffer) {}); err != nil {
		t.Errorf("WithBuffer after a panic: %v", err)
	}
}

func TestClosedLib(t *testing.T) {
	l := open(t)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Init(); !errors.Is(err, ErrClosed) {
		t.Errorf("Init after Close = %v, want ErrClosed", err)
	}
	if err := l.WithBuffer(0, 0, func(Buffer) { t.Error("fn called on a closed Lib") }); !errors.Is(err, ErrClosed) {
		t.Errorf("WithBuffer after Close = %v, want ErrClosed", err)
	}
}
