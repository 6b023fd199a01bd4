// Package dl is the dlopen shim libcuda and libverbs load their library
// through: Open, Sym and Close over dlopen(3), dlsym(3) and dlclose(3),
// each error taken from dlerror(3) on the thread that made the call, and
// the classification of a failed dlopen (the library itself missing, or
// a broken installation). cgo preambles are private to their package, so
// the callers keep only their function-pointer trampolines and call
// through the pointers Sym returns.
package dl

/*
#cgo CFLAGS: -D_GNU_SOURCE
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

// gdr_dl is a dlopen or dlsym result. err is NULL or a strdup'ed copy of
// dlerror() taken on the same thread, to be freed by the caller.
typedef struct {
	void *p;
	char *err;
} gdr_dl;

static char *gdr_dlerror(const char *fallback) {
	const char *e = dlerror();
	return strdup(e ? e : fallback);
}

static gdr_dl gdr_dlopen(const char *name) {
	gdr_dl r = {NULL, NULL};
	dlerror();
	// RTLD_NODELETE: the code must stay mapped after dlclose. libcuda
	// starts threads of its own once initialised; a libibverbs Device
	// left open, or a provider library libibverbs loaded, must not
	// outlive the code it calls into.
	r.p = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (r.p == NULL)
		r.err = gdr_dlerror("dlopen failed");
	return r;
}

static gdr_dl gdr_dlsym(void *h, const char *sym) {
	gdr_dl r = {NULL, NULL};
	dlerror();
	r.p = dlsym(h, sym);
	if (r.p == NULL)
		r.err = gdr_dlerror("symbol resolves to NULL");
	return r;
}

static char *gdr_dlclose(void *h) {
	dlerror();
	if (dlclose(h) != 0)
		return gdr_dlerror("dlclose failed");
	return NULL;
}

// gdr_dlpath is the file name the loader recorded for h (strdup'ed), or NULL.
static char *gdr_dlpath(void *h) {
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL || lm->l_name == NULL)
		return NULL;
	return strdup(lm->l_name);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Library is a shared library a package loads, and the errors that
// package's callers test for.
type Library struct {
	Name string // what dlopen is asked for, e.g. "libcuda.so.1"
	// NotFound is wrapped when the loader finds no library of that name;
	// MissingSymbol when the library exports no symbol asked for.
	NotFound, MissingSymbol error
}

// Handle is a library loaded into this process.
type Handle struct {
	lib Library
	p   unsafe.Pointer // from dlopen
}

// Open loads the library, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE. Where
// the library itself is missing the error wraps l.NotFound.
func (l Library) Open() (*Handle, error) {
	cname := C.CString(l.Name)
	defer C.free(unsafe.Pointer(cname))
	r := C.gdr_dlopen(cname)
	if r.p == nil {
		return nil, openError(l.Name, takeCString(r.err), l.NotFound)
	}
	return &Handle{lib: l, p: r.p}, nil
}

// Sym is the address of sym in the library, a C function pointer to call
// through a trampoline; the error wraps MissingSymbol where there is none.
func (h *Handle) Sym(sym string) (unsafe.Pointer, error) {
	csym := C.CString(sym)
	defer C.free(unsafe.Pointer(csym))
	r := C.gdr_dlsym(h.p, csym)
	if r.p == nil {
		return nil, fmt.Errorf("%w: %s", h.lib.MissingSymbol, takeCString(r.err))
	}
	return r.p, nil
}

// Close is dlclose. The code stays mapped (RTLD_NODELETE).
func (h *Handle) Close() error {
	if e := C.gdr_dlclose(h.p); e != nil {
		return fmt.Errorf("dlclose %s: %s", h.lib.Name, takeCString(e))
	}
	return nil
}

// LinkMapName is the file name the loader recorded for the library (its
// link map entry, links not resolved); "" when it says none.
func (h *Handle) LinkMapName() string { return takeCString(C.gdr_dlpath(h.p)) }

// takeCString copies a malloc'ed C string and frees it.
func takeCString(s *C.char) string {
	if s == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s)
}
