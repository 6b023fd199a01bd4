package libverbs

import (
	"errors"
	"strconv"
	"syscall"
	"unicode"
	"unicode/utf8"
)

var (
	// ErrNotFound means the dynamic loader found no libibverbs.so.1:
	// rdma-core is not installed, or not visible to this process.
	ErrNotFound = errors.New(Name + " not found")
	// ErrMissingSymbol means a verb is not exported by the loaded library
	// (ibv_reg_dmabuf_mr before rdma-core 34).
	ErrMissingSymbol = errors.New("symbol missing")
	// ErrNoDevice means no RDMA device has the name asked for.
	ErrNoDevice = errors.New("no such RDMA device")
	// ErrClosed is returned by the methods of a closed Lib or Device.
	ErrClosed = errors.New("closed")
)

// Error is a verb that failed, with the errno it left.
type Error struct {
	Call  string        // the verb, e.g. "ibv_reg_dmabuf_mr"
	Errno syscall.Errno // e.g. EOPNOTSUPP; 0 if the verb set none
}

// Error reads like "ibv_reg_dmabuf_mr: Operation not supported (errno 95)",
// the text as strerror(3) writes it.
func (e *Error) Error() string {
	if e.Errno == 0 {
		return e.Call + ": failed without setting errno"
	}
	return e.Call + ": " + capitalize(e.Errno.Error()) + " (errno " + strconv.Itoa(int(e.Errno)) + ")"
}

// Unwrap gives the errno, so errors.Is(err, syscall.EOPNOTSUPP) works.
func (e *Error) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// newError builds an *Error from the errno cgo returned with a call.
func newError(call string, errno error) *Error {
	e := &Error{Call: call}
	var n syscall.Errno
	if errors.As(errno, &n) {
		e.Errno = n
	}
	return e
}

// capitalize upper-cases the first letter: Go's errno texts are strerror's
// in lower case.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
