package dl

import (
	"errors"
	"strings"
	"testing"
)

var (
	errNotFound = errors.New("libtest.so.1 not found")
	errMissing  = errors.New("symbol missing")
)

// The dlerror texts glibc and musl write for libcuda and libibverbs: only
// the library itself missing is "not found", and each error reads as the
// packages have always written it.
func TestOpenErrorClassification(t *testing.T) {
	tests := []struct {
		name, lib, dlerr string
		notFound         bool
	}{
		{"glibc: libcuda itself is missing", "libcuda.so.1",
			"libcuda.so.1: cannot open shared object file: No such file or directory", true},
		{"musl: libcuda itself is missing", "libcuda.so.1",
			"Error loading shared library libcuda.so.1: No such file or directory", true},
		{"glibc: a dependency of libcuda is missing", "libcuda.so.1",
			"libfoo.so.2: cannot open shared object file: No such file or directory", false},
		{"musl: a dependency of libcuda is missing", "libcuda.so.1",
			"Error loading shared library libfoo.so.2: No such file or directory (needed by /usr/lib/libcuda.so.1)", false},
		{"libcuda is for another architecture", "libcuda.so.1",
			"/usr/lib/libcuda.so.1: wrong ELF class: ELFCLASS32", false},
		{"libcuda cannot be read", "libcuda.so.1",
			"libcuda.so.1: cannot open shared object file: Permission denied", false},
		{"glibc: libibverbs itself is missing", "libibverbs.so.1",
			"libibverbs.so.1: cannot open shared object file: No such file or directory", true},
		{"musl: libibverbs itself is missing", "libibverbs.so.1",
			"Error loading shared library libibverbs.so.1: No such file or directory", true},
		{"glibc: libnl, which libibverbs needs, is missing", "libibverbs.so.1",
			"libnl-3.so.200: cannot open shared object file: No such file or directory", false},
		{"musl: libnl, which libibverbs needs, is missing", "libibverbs.so.1",
			"Error loading shared library libnl-3.so.200: No such file or directory (needed by /usr/lib/libibverbs.so.1)", false},
		{"libibverbs is for another architecture", "libibverbs.so.1",
			"/usr/lib/libibverbs.so.1: wrong ELF class: ELFCLASS32", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := openError(tt.lib, tt.dlerr, errNotFound)
			if got := errors.Is(err, errNotFound); got != tt.notFound {
				t.Errorf("errors.Is(%q, NotFound) = %v, want %v", err, got, tt.notFound)
			}
			want := "loading " + tt.lib + ": " + tt.dlerr
			if tt.notFound {
				want = errNotFound.Error() + ": " + tt.dlerr
			}
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}

func TestOpenOfAMissingLibraryWrapsNotFound(t *testing.T) {
	l := Library{Name: "libgdrcheck-no-such-library.so.1", NotFound: errNotFound, MissingSymbol: errMissing}
	if h, err := l.Open(); !errors.Is(err, errNotFound) || h != nil {
		t.Errorf("Open(%q) = %v, %v; want an error wrapping NotFound", l.Name, h, err)
	}
}

// libc is loaded in every cgo process: Sym finds what it exports and
// wraps MissingSymbol for what it does not.
func TestSymOfLibc(t *testing.T) {
	h, err := Library{Name: "libc.so.6", NotFound: errNotFound, MissingSymbol: errMissing}.Open()
	if err != nil {
		t.Skipf("no glibc here: %v", err)
	}
	if p, err := h.Sym("strlen"); err != nil || p == nil {
		t.Errorf("Sym(strlen) = %v, %v; want its address", p, err)
	}
	if _, err := h.Sym("gdrcheck_no_such_symbol"); !errors.Is(err, errMissing) || !strings.Contains(err.Error(), "gdrcheck_no_such_symbol") {
		t.Errorf("Sym of a missing symbol = %v, want MissingSymbol naming it", err)
	}
	if name := h.LinkMapName(); !strings.Contains(name, "libc.so") {
		t.Errorf("LinkMapName() = %q, want libc's file", name)
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
