package nodetest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

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

// HeldByNouveau builds the H100 node with GPU i taken by nouveau, as when
// nouveau loads before nvidia can claim it (kubernetes-sigs/image-builder#1468):
// its driver link names nouveau, the nouveau module is loaded, and
// neither NVML nor libcuda lists it; nvidia drives the others.
func HeldByNouveau(i int) func(dir string) (*Tree, error) {
	return func(dir string) (*Tree, error) {
		t, err := H100x8(dir)
		if err != nil {
			return t, err
		}
		bus := t.NVML.GPUs[i].BusID
		var gpus []node.GPU
		for _, g := range t.NVML.GPUs {
			if g.BusID != bus {
				g.Index = len(gpus)
				gpus = append(gpus, g)
			}
		}
		t.NVML.GPUs = gpus
		t.NVML.Pairs = slices.DeleteFunc(t.NVML.Pairs, func(p node.GPUPair) bool { return p.A == bus || p.B == bus })
		gd := t.GPUDirect
		gd.CUDA.GPUs = slices.DeleteFunc(gd.CUDA.GPUs, func(g node.CUDAGPU) bool { return g.BusID == bus })
		gd.Verbs.Registrations = slices.DeleteFunc(gd.Verbs.Registrations, func(r node.Registration) bool { return r.GPU == bus })
		t.write("sys/module/nouveau/parameters/modeset", "-1\n")
		rel := "sys/devices/" + t.devs[bus] + "/driver"
		t.link(rel, relTo(rel, "sys/bus/pci/drivers/nouveau"))
		if err := t.Finish(); err != nil {
			return t, err
		}
		// nvidia does not drive it: no proc/driver/nvidia/gpus entry.
		return t, os.RemoveAll(filepath.Join(dir, "proc/driver/nvidia/gpus", bus))
	}
}
