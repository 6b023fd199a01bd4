package libcuda

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

var (
	// ErrNotFound means the dynamic loader found no libcuda.so.1: no NVIDIA
	// driver is installed, or it is not visible to this process (a container
	// started without the driver libraries).
	ErrNotFound = errors.New(Name + " not found")
	// ErrMissingSymbol means an entry point is not exported by the loaded
	// library (a driver too old, or not NVIDIA's).
	ErrMissingSymbol = errors.New("symbol missing")
	// ErrClosed is returned by the methods of a closed Lib.
	ErrClosed = errors.New(Name + " closed")
)

// A few CUresult codes from cuda.h, for comparison with Error.Code.
const (
	CodeInvalidValue   = 1   // CUDA_ERROR_INVALID_VALUE
	CodeOutOfMemory    = 2   // CUDA_ERROR_OUT_OF_MEMORY
	CodeNotInitialized = 3   // CUDA_ERROR_NOT_INITIALIZED
	CodeNoDevice       = 100 // CUDA_ERROR_NO_DEVICE
	CodeInvalidDevice  = 101 // CUDA_ERROR_INVALID_DEVICE
	CodeNotSupported   = 801 // CUDA_ERROR_NOT_SUPPORTED
)

// Error is a CUresult other than CUDA_SUCCESS returned by a driver call.
type Error struct {
	Call string // the entry point, e.g. "cuMemAlloc_v2"
	Code int    // the CUresult, e.g. 801
	Name string // from cuGetErrorName, e.g. "CUDA_ERROR_NOT_SUPPORTED"; empty if unknown
	Text string // from cuGetErrorString, e.g. "operation not supported"; empty if unknown
}

// Error reads like
// "cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED (801): operation not supported".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Call)
	b.WriteString(": ")
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteString(" (")
		b.WriteString(strconv.Itoa(e.Code))
		b.WriteString(")")
	} else {
		b.WriteString("CUresult ")
		b.WriteString(strconv.Itoa(e.Code))
	}
	if e.Text != "" {
		b.WriteString(": ")
		b.WriteString(e.Text)
	}
	return b.String()
}

// IsCode reports whether err holds an *Error with this CUresult code.
func IsCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// openError classifies a dlopen failure. The library itself missing wraps
// ErrNotFound; anything else (a dependency missing, a file of the wrong
// architecture) is a broken installation and does not.
func openError(name, dlerr string) error {
	if isNotFound(name, dlerr) {
		return fmt.Errorf("%w: %s", ErrNotFound, dlerr)
	}
	return fmt.Errorf("loading %s: %s", name, dlerr)
}

// isNotFound reports whether a dlerror message says that the library name
// itself, rather than something it needs, does not exist. glibc writes
// "NAME: cannot open shared object file: No such file or directory" and
// musl "Error loading shared library NAME: No such file or directory";
// a missing dependency is named in place of NAME.
func isNotFound(name, dlerr string) bool {
	const enoent = "No such file or directory"
	if !strings.HasSuffix(dlerr, enoent) {
		return false
	}
	return strings.HasPrefix(dlerr, name+": ") ||
		dlerr == "Error loading shared library "+name+": "+enoent
}
