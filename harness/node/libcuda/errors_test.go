package libcuda

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"a code the driver names reads as name, number and text",
			&Error{Call: "cuMemGetHandleForAddressRange", Code: 801, Name: "CUDA_ERROR_NOT_SUPPORTED", Text: "operation not supported"},
			"cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED (801): operation not supported"},
		{"a code without text keeps the name",
			&Error{Call: "cuInit", Code: 100, Name: "CUDA_ERROR_NO_DEVICE"},
			"cuInit: CUDA_ERROR_NO_DEVICE (100)"},
		{"a code the driver does not know shows the number",
			&Error{Call: "cuMemAlloc_v2", Code: 12345},
			"cuMemAlloc_v2: CUresult 12345"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsCode(t *testing.T) {
	err := fmt.Errorf("GPU 1: %w", &Error{Call: "cuDeviceGet", Code: CodeInvalidDevice})
	if !IsCode(err, CodeInvalidDevice) {
		t.Errorf("IsCode(%v, %d) = false, want true", err, CodeInvalidDevice)
	}
	if IsCode(err, CodeNoDevice) {
		t.Errorf("IsCode(%v, %d) = true, want false", err, CodeNoDevice)
	}
	if IsCode(errors.New("plain"), CodeInvalidDevice) {
		t.Error("IsCode of a plain error = true, want false")
	}
}

func TestNormalizeBusID(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"the CUDA form is kept", "0000:18:00.0", "0000:18:00.0"},
		{"upper-case hex becomes lower-case", "0000:1A:00.0", "0000:1a:00.0"},
		{"the NVML 8-digit domain becomes 4 digits", "00000000:1A:00.0", "0000:1a:00.0"},
		{"a missing domain is domain 0", "c1:00.1", "0000:c1:00.1"},
		{"a domain above 0xffff keeps all its digits", "10000:01:00.0", "10000:01:00.0"},
		{"surrounding blanks are dropped", " 0000:00:06.0\n", "0000:00:06.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeBusID(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("NormalizeBusID(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	for _, bad := range []string{"", "18:00", "0000:18:00", "0000:18:00.8", "0000:100:00.0", "0000:18:20.0", "x:18:00.0", "0000::00.0", "0000:18:00.0.1"} {
		if got, err := NormalizeBusID(bad); err == nil {
			t.Errorf("NormalizeBusID(%q) = %q, want an error", bad, got)
		}
	}
}

func TestRoundUp(t *testing.T) {
	tests := []struct{ n, to, want int }{
		{1, 4096, 4096}, {4096, 4096, 4096}, {4097, 4096, 8192}, {2 << 20, 4096, 2 << 20},
	}
	for _, tt := range tests {
		if got := roundUp(tt.n, tt.to); got != tt.want {
			t.Errorf("roundUp(%d, %d) = %d, want %d", tt.n, tt.to, got, tt.want)
		}
	}
}

func TestAttributeString(t *testing.T) {
	for a, want := range map[Attribute]string{
		AttrGPUDirectRDMASupported:          "GPU_DIRECT_RDMA_SUPPORTED",
		AttrGPUDirectRDMAFlushWritesOptions: "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS",
		AttrGPUDirectRDMAWritesOrdering:     "GPU_DIRECT_RDMA_WRITES_ORDERING",
		AttrDMABufSupported:                 "DMA_BUF_SUPPORTED",
		Attribute(1):                        "Attribute(1)",
	} {
		if got := a.String(); got != want {
			t.Errorf("Attribute(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}

func TestParseCodeReadsTheCUresultBackFromAnErrorsText(t *testing.T) {
	tests := []struct {
		text string
		code int
		ok   bool
	}{
		{(&Error{Call: "cuInit", Code: CodeSystemDriverMismatch, Name: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", Text: "system has unsupported display driver / cuda driver combination"}).Error(), CodeSystemDriverMismatch, true},
		{(&Error{Call: "cuInit", Code: CodeNoDevice, Name: "CUDA_ERROR_NO_DEVICE"}).Error(), CodeNoDevice, true},
		{(&Error{Call: "cuInit", Code: CodeUnknown}).Error(), CodeUnknown, true},
		{"libcuda.so.1 not found: libcuda.so.1: cannot open shared object file: No such file or directory", 0, false},
	}
	for _, tt := range tests {
		if code, ok := ParseCode(tt.text); code != tt.code || ok != tt.ok {
			t.Errorf("ParseCode(%q) = %d, %t; want %d, %t", tt.text, code, ok, tt.code, tt.ok)
		}
	}
}
