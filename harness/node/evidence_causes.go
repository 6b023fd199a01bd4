package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gdrcheck/gdrcheck/harness/node/libcuda"
	"github.com/gdrcheck/gdrcheck/harness/node/libverbs"
)

// The likely causes of a source that could not be used, as an admin reads
// them after a driver upgrade: what the error means and what to do. They
// are told once, in the case that names the missing source; the specs
// that skip for want of it give the error alone.

// Sources a Problem can name.
const (
	SourceNVML   = "nvml"
	SourceCUDA   = "libcuda"
	SourceVerbs  = "libibverbs"
	SourceGPUs   = "gpus" // NVML and sysfs disagree about the GPUs
	driverModule = "/proc/driver/nvidia/version"
)

// reloadModules is what to do when the loaded NVIDIA kernel modules are
// not those of the installed driver.
const reloadModules = "reload them (stop every GPU process, then rmmod nvidia_peermem nvidia_uvm nvidia_drm nvidia_modeset nvidia and modprobe nvidia) or reboot"

// driverNotLoaded is NVML's ERROR_DRIVER_NOT_LOADED where nothing on the
// node says why; notLoadedBecause names the reason where something does.
const driverNotLoaded = "the NVIDIA kernel module is not loaded: modprobe nvidia (the kernel log says why it did not load)"

// notListed is why sysfs has GPUs NVML does not list, where their driver
// links do not say.
const notListed = "not given to this container or job, bound to another driver, or failed: they are judged from sysfs alone"

// nameDriverCauses rewords the causes of an unloaded nvidia module and of
// GPUs NVML does not list where the node says why: an in-tree driver
// holding the GPUs, or module signing refusing the module. One cause,
// named once, the same the kernel specs give.
func (e *Evidence) nameDriverCauses() {
	l := e.Kernel.Load
	for i := range e.Problems {
		p := &e.Problems[i]
		switch {
		case p.Source == SourceNVML && p.Cause == driverNotLoaded:
			if held := heldGPUs(e.GPUs); held != "" {
				p.Cause = "the NVIDIA kernel module is not loaded: " + held
			} else if h := l.Holder(); h != "" {
				p.Cause = fmt.Sprintf("the NVIDIA kernel module is not loaded and %s is: it claims NVIDIA GPUs at boot, before nvidia; %s", h, BlacklistFix(h))
			} else if len(l.Refused) > 0 {
				p.Cause = fmt.Sprintf("the NVIDIA kernel module is not loaded: module signing refused a module (kernel log: %s); %s", l.Refused[0], SigningFix)
			} else if l.LockedDown() && !e.Kernel.LogReadable {
				p.Cause = fmt.Sprintf("the NVIDIA kernel module is not loaded and the kernel refuses unsigned modules (%s): if modprobe nvidia says \"Key was rejected by service\", %s", l.SigningState(), SigningFix)
			}
		case p.Source == SourceGPUs && p.Cause == notListed:
			if held := heldGPUs(sysfsOnly(e.GPUs)); held != "" {
				p.Cause = held
			}
		}
	}
}

// heldGPUs says which GPUs an in-tree driver holds and what to do, ""
// where none does.
func heldGPUs(gs []GPU) string {
	by := map[string][]string{}
	var drivers []string
	for _, g := range gs {
		if IsConflictingDriver(g.Driver) {
			if by[g.Driver] == nil {
				drivers = append(drivers, g.Driver)
			}
			by[g.Driver] = append(by[g.Driver], g.BusID)
		}
	}
	var out []string
	for _, d := range drivers {
		out = append(out, fmt.Sprintf("%s holds GPU(s) %s, so the nvidia driver cannot drive them: %s", d, strings.Join(by[d], ", "), BlacklistFix(d)))
	}
	return strings.Join(out, "; ")
}

// userSpaceMissing is why a driver library is not found.
func userSpaceMissing(lib string) string {
	return fmt.Sprintf("the NVIDIA driver's user-space libraries (%s) are missing from this environment: install them with the driver, or start the container with the NVIDIA runtime (--gpus, nvidia-container-toolkit) so they are mounted", lib)
}

// nvmlCause explains an NVML failure. kmod is the kernel module's version
// from /proc/driver/nvidia/version and lib the libnvidia-ml file loaded,
// each empty when unknown.
func nvmlCause(err error, kmod, lib string) string {
	// A recorded tree without the file: DefaultSources wraps the error
	// of reading it.
	if errors.Is(err, os.ErrNotExist) {
		return "a tree of sysfs alone, or a snapshot taken without NVML: the GPUs are judged from sysfs, and what only NVML knows is not judged"
	}
	var ne *NVMLError
	if !errors.As(err, &ne) {
		return ""
	}
	switch ne.Ret {
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return fmt.Sprintf("Driver/library version mismatch: the NVIDIA kernel module loaded is %s (%s) and the library is %s; the driver was upgraded and its kernel modules were not reloaded: %s",
			orUnknownVersion(kmod), driverModule, libraryText(lib, "libnvidia-ml.so.1"), reloadModules)
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "NVML library not found: " + userSpaceMissing("libnvidia-ml.so.1")
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return driverNotLoaded
	case nvml.ERROR_NO_PERMISSION:
		return "no permission on /dev/nvidiactl or /dev/nvidia*: run as root, or fix the device nodes' permissions"
	case nvml.ERROR_GPU_IS_LOST:
		return "a GPU fell off the bus (an Xid 79 in the kernel log): reset it or reboot"
	}
	return ""
}

// cudaCause explains a libcuda failure, as CUDAFacts.Error words it.
func cudaCause(msg, kmod string) string {
	switch {
	case strings.HasPrefix(msg, "no CUDA/verbs recording"):
		return "a tree of sysfs alone, or a snapshot taken without the CUDA probe: the dma-buf export is not proven"
	case strings.Contains(msg, libcuda.ErrNotFound.Error()):
		return "CUDA driver library not found: " + userSpaceMissing(libcuda.Name)
	case strings.Contains(msg, libcuda.ErrMissingSymbol.Error()):
		return "the " + libcuda.Name + " found is older than this check needs, or not NVIDIA's"
	}
	code, ok := libcuda.ParseCode(msg)
	if !ok {
		return ""
	}
	switch code {
	case libcuda.CodeSystemDriverMismatch:
		return fmt.Sprintf("libcuda does not match the NVIDIA kernel module loaded (%s, %s): the driver was upgraded and its kernel modules were not reloaded, or a container brings a CUDA forward-compatibility libcuda this module does not support; reload the modules or reboot",
			orUnknownVersion(kmod), driverModule)
	case libcuda.CodeSystemNotReady:
		// NVIDIA/nccl-tests#264, NVIDIA/nccl#1488: an NVSwitch system
		// whose fabric manager never registered the GPUs.
		return "on an NVSwitch system (HGX/DGX) nvidia-fabricmanager is not running, failed, or was restarted without a GPU reset, so the GPUs are not in the NVLink fabric: start it (systemctl enable --now nvidia-fabricmanager, its version the driver's), or reset the GPUs after a restart"
	case libcuda.CodeCompatNotSupportedOnDevice:
		return "the CUDA forward-compatibility libcuda in use does not support these GPUs: use the driver's own libcuda"
	case libcuda.CodeInsufficientDriver:
		return "the NVIDIA driver is older than the CUDA version this libcuda needs: upgrade the driver"
	case libcuda.CodeNoDevice:
		return "CUDA sees no GPU: CUDA_VISIBLE_DEVICES hides them, or the /dev/nvidia* nodes are missing (a container not given the GPUs)"
	case libcuda.CodeOperatingSystem, libcuda.CodeUnknown:
		return "often the nvidia_uvm module is not loaded or /dev/nvidia-uvm is missing: modprobe nvidia-uvm"
	}
	return ""
}

// verbsCause explains a libibverbs failure, as VerbsFacts.Error words it.
func verbsCause(msg string) string {
	switch {
	case strings.HasPrefix(msg, "no CUDA/verbs recording"):
		return "a tree of sysfs alone, or a snapshot taken without the verbs probe: no registration is proven"
	case strings.Contains(msg, libverbs.ErrNotFound.Error()):
		return "rdma-core's " + libverbs.Name + " is not installed in this environment or not visible to this process: install rdma-core (libibverbs1 and ibverbs-providers), or mount it into the container"
	}
	return ""
}

func orUnknownVersion(v string) string {
	if v == "" {
		return "of unknown version"
	}
	return v
}

// libraryText names a loaded library by its file (libnvidia-ml.so.580.95.05
// carries the version), or says where to look.
func libraryText(path, soname string) string {
	if path == "" {
		return "another version (see the file " + soname + " links to)"
	}
	return filepath.Base(path)
}

// loadedLibrary finds the file this process mapped for a library whose
// name starts with prefix ("libnvidia-ml.so"), in /proc/self/maps: the
// name of the real file carries the driver version.
func loadedLibrary(prefix string) string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			continue
		}
		p := f[len(f)-1]
		if strings.HasPrefix(filepath.Base(p), prefix) {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real
			}
			return p
		}
	}
	return ""
}
