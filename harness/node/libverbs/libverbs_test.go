package libverbs

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// These tests use the real libibverbs.so.1 and RDMA devices. Where the
// library is missing they skip, saying so, and so do the registration tests
// where there is no RDMA device.

// open loads the library or skips the test when it is absent.
func open(t *testing.T) *Lib {
	t.Helper()
	l, err := Open()
	if errors.Is(err, ErrNotFound) {
		t.Skipf("no rdma-core here: %v", err)
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

// Open's library wraps this package's ErrNotFound where the loader finds
// no file of its name (internal/dl classifies the dlerror texts).
func TestOpenOfAMissingLibraryIsErrNotFound(t *testing.T) {
	l := library
	l.Name = "libgdrcheck-no-such-library.so.1"
	if _, err := l.Open(); !errors.Is(err, ErrNotFound) {
		t.Errorf("opening %q = %v, want an error wrapping ErrNotFound", l.Name, err)
	}
}

var upstreamName = regexp.MustCompile(`^libibverbs\.so\.[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$`)

func TestPathAndVersion(t *testing.T) {
	l := open(t)
	p := l.Path()
	if !filepath.IsAbs(p) || !strings.HasPrefix(filepath.Base(p), "libibverbs.so") {
		t.Fatalf("Path() = %q, want the absolute path of a libibverbs.so* file", p)
	}
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("Path() = %q is not a regular file (symlinks resolved): %v", p, err)
	}
	if m := mappedPath("/proc/self/maps", "libibverbs.so"); m != p {
		t.Errorf("Path() = %q but /proc/self/maps maps %q", p, m)
	}
	v, ok := l.RDMACoreVersion()
	if upstreamName.MatchString(filepath.Base(p)) && !ok {
		t.Errorf("RDMACoreVersion() of %q = %d, %v; want a release", p, v, ok)
	}
	if ok && v >= 34 && !l.HasRegDMABufMR() {
		t.Errorf("rdma-core %d has no ibv_reg_dmabuf_mr", v)
	}
	t.Logf("%s: rdma-core %d (known: %v), ibv_reg_dmabuf_mr: %v", p, v, ok, l.HasRegDMABufMR())
}

// sysfsDevices are the names under /sys/class/infiniband.
func sysfsDevices(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir("/sys/class/infiniband")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reading /sys/class/infiniband: %v", err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

func TestDevices(t *testing.T) {
	l := open(t)
	got, err := l.Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if got == nil {
		t.Error("Devices() = nil, want a list (empty when there are no devices)")
	}
	inSysfs := sysfsDevices(t)
	if len(inSysfs) == 0 && len(got) != 0 {
		t.Errorf("Devices() = %q with /sys/class/infiniband empty, want none", got)
	}
	for _, name := range got {
		if !inSysfs[name] {
			t.Errorf("device %q is not in /sys/class/infiniband", name)
		}
	}
	t.Logf("RDMA devices: %q", got)
}

func TestOpenDeviceThatDoesNotExist(t *testing.T) {
	l := open(t)
	d, err := l.OpenDevice("gdrcheck_no_such_device")
	if !errors.Is(err, ErrNoDevice) {
		t.Errorf("OpenDevice of a missing device = %v, %v; want ErrNoDevice", d, err)
	}
}

// firstDevice opens the first RDMA device or skips the test.
func firstDevice(t *testing.T, l *Lib) *Device {
	t.Helper()
	names, err := l.Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if len(names) == 0 {
		t.Skip("no RDMA device here")
	}
	d, err := l.OpenDevice(names[0])
	if err != nil {
		t.Fatalf("OpenDevice(%q): %v", names[0], err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

func TestRegMRHostMemory(t *testing.T) {
	l := open(t)
	d := firstDevice(t, l)
	const size = 2 << 20
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	mem[0], mem[size-1] = 1, 1 // fault the pages in
	if err := d.RegMR(uint64(uintptr(unsafe.Pointer(&mem[0]))), size); err != nil {
		t.Errorf("%s: RegMR of %d bytes of host memory: %v", d.Name(), size, err)
	}
}

func TestRegDMABufWithABadFD(t *testing.T) {
	l := open(t)
	d := firstDevice(t, l)
	err := d.RegDMABuf(-1, 0, 4096, 0)
	if !l.HasRegDMABufMR() {
		if !errors.Is(err, ErrMissingSymbol) {
			t.Errorf("RegDMABuf without ibv_reg_dmabuf_mr = %v, want ErrMissingSymbol", err)
		}
		return
	}
	// As NCCL probes it: EBADF means the kernel path exists,
	// EOPNOTSUPP/EPROTONOSUPPORT that it does not.
	var e *Error
	if !errors.As(err, &e) || e.Call != "ibv_reg_dmabuf_mr" {
		t.Fatalf("RegDMABuf(fd -1) = %v, want an *Error from ibv_reg_dmabuf_mr", err)
	}
	t.Logf("%s: RegDMABuf(fd -1): %v", d.Name(), err)
}

func TestClosed(t *testing.T) {
	l := open(t)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := l.Devices(); !errors.Is(err, ErrClosed) {
		t.Errorf("Devices after Close = %v, want ErrClosed", err)
	}
}
