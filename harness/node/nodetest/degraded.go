package nodetest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// Nodes whose libraries cannot be used: gdrcheck judges what sysfs and
// procfs answer and names the library that failed.

// NVMLVersionMismatch builds the H100 node of H100x8 the morning after a
// driver upgrade without a reboot: the user-space libraries are 580.95.05,
// the kernel module still loaded is 570.133.20. NVML's init fails with
// ERROR_LIB_RM_VERSION_MISMATCH ("Driver/library version mismatch"),
// cuInit with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH; libibverbs, which does
// not talk to the NVIDIA driver, still lists the rail NICs. sysfs and
// procfs are those of the healthy node.
func NVMLVersionMismatch(dir string) (*Tree, error) {
	t, err := H100x8(dir)
	if err != nil {
		return t, err
	}
	const library = "580.95.05"
	t.Driver = "570.133.20"
	t.NVML = &node.NVMLRecording{
		InitError: "ERROR_LIB_RM_VERSION_MISMATCH",
		Library:   "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + library,
	}
	verbs := t.GPUDirect.Verbs
	// The probe stops at cuInit, before any buffer to register exists.
	verbs.Registrations = nil
	t.GPUDirect = &node.GPUDirectRecording{
		CUDA: node.CUDAFacts{
			// cuDriverGetVersion answers before cuInit: it is the
			// library's own CUDA version.
			DriverVersion: 13000,
			Error:         "cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803): system has unsupported display driver / cuda driver combination",
		},
		Verbs: verbs,
	}
	// Finish again: it rewrites the driver's version files and the
	// recordings from the fields just changed.
	return t, t.Finish()
}

// SysfsOnly wraps a fixture builder to take away every answer of a
// library (the gdrcheck/ recordings: NVML, the CUDA/verbs probe, rdmamap,
// the kernel log), leaving a tree of sysfs and procfs alone, as a user may
// hand one over or a node without its driver libraries shows it.
func SysfsOnly(build func(dir string) (*Tree, error)) func(dir string) (*Tree, error) {
	return func(dir string) (*Tree, error) {
		t, err := build(dir)
		if err != nil {
			return t, err
		}
		if err := os.RemoveAll(filepath.Join(dir, "gdrcheck")); err != nil {
			return t, fmt.Errorf("removing the recordings of %q: %w", dir, err)
		}
		t.NVML, t.GPUDirect, t.Kmsg = nil, nil, nil
		return t, nil
	}
}
