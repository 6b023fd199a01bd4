package libverbs

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"an errno reads as strerror does, with its number",
			&Error{Call: "ibv_reg_dmabuf_mr", Errno: syscall.EOPNOTSUPP},
			"ibv_reg_dmabuf_mr: Operation not supported (errno 95)"},
		{"a peermem failure names the address fault",
			&Error{Call: "ibv_reg_mr", Errno: syscall.EFAULT},
			"ibv_reg_mr: Bad address (errno 14)"},
		{"a verb that set no errno says so",
			&Error{Call: "ibv_alloc_pd"},
			"ibv_alloc_pd: failed without setting errno"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestErrorUnwrapsToErrno(t *testing.T) {
	err := fmt.Errorf("RDMA device %q: %w", "mlx5_0", newError("ibv_reg_dmabuf_mr", syscall.EOPNOTSUPP))
	if !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("errors.Is(%v, EOPNOTSUPP) = false, want true", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Call != "ibv_reg_dmabuf_mr" || e.Errno != syscall.EOPNOTSUPP {
		t.Errorf("errors.As(%v) = %+v, want ibv_reg_dmabuf_mr with EOPNOTSUPP", err, e)
	}
	if got := newError("ibv_open_device", nil); got.Errno != 0 || got.Unwrap() != nil {
		t.Errorf("newError without errno = %+v, want Errno 0 and nothing to unwrap", got)
	}
}
