package libcuda

import (
	"errors"
	"regexp"
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
	CodeInvalidValue               = 1   // CUDA_ERROR_INVALID_VALUE
	CodeOutOfMemory                = 2   // CUDA_ERROR_OUT_OF_MEMORY
	CodeNotInitialized             = 3   // CUDA_ERROR_NOT_INITIALIZED
	CodeInsufficientDriver         = 35  // CUDA_ERROR_INSUFFICIENT_DRIVER
	CodeNoDevice                   = 100 // CUDA_ERROR_NO_DEVICE
	CodeInvalidDevice              = 101 // CUDA_ERROR_INVALID_DEVICE
	CodeOperatingSystem            = 304 // CUDA_ERROR_OPERATING_SYSTEM
	CodeNotSupported               = 801 // CUDA_ERROR_NOT_SUPPORTED
	CodeSystemNotReady             = 802 // CUDA_ERROR_SYSTEM_NOT_READY
	CodeSystemDriverMismatch       = 803 // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
	CodeCompatNotSupportedOnDevice = 804 // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
	CodeUnknown                    = 999 // CUDA_ERROR_UNKNOWN
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

// codeInText finds the CUresult in an Error's text: "NAME (803)" or
// "CUresult 803".
var codeInText = regexp.MustCompile(`(?:CUDA_[A-Z_]+ \((\d+)\)|CUresult (\d+))`)

// ParseCode reads the CUresult back from the text of an *Error, as
// recordings keep it ("cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803):
// ..."); false when the text holds none.
func ParseCode(text string) (int, bool) {
	m := codeInText.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1] + m[2])
	return n, err == nil
}

// IsCode reports whether err holds an *Error with this CUresult code.
func IsCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
