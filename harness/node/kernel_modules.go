package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// ModuleLoad is what keeps NVIDIA's kernel modules from loading or from
// driving the GPUs: module signing that refuses them (kernel lockdown,
// Secure Boot: bottlerocket-os/bottlerocket#4218,
// NVIDIA/gpu-driver-container#44) and the in-tree drivers that claim
// the GPUs first (nouveau, nova_core on 7.x kernels: beclab/Olares#3963,
// kubernetes-sigs/image-builder#1468).
type ModuleLoad struct {
	// NVIDIA says the nvidia module is loaded (sys/module/nvidia or
	// proc/driver/nvidia/version).
	NVIDIA   bool `json:"nvidia_loaded"`              // sys/module/nvidia, proc/driver/nvidia/version
	Nouveau  bool `json:"nouveau_loaded,omitempty"`   // sys/module/nouveau
	NovaCore bool `json:"nova_core_loaded,omitempty"` // sys/module/nova_core
	// Lockdown is the active mode of sys/kernel/security/lockdown
	// ("none [integrity] confidentiality" gives integrity); "" where
	// the kernel has no lockdown LSM or the file was not readable.
	Lockdown string `json:"lockdown,omitempty"` // sys/kernel/security/lockdown; optional
	// SigEnforce is sys/module/module/parameters/sig_enforce: the
	// kernel refuses modules without a trusted signature, lockdown or
	// not; nil where the kernel signs no modules.
	SigEnforce *bool `json:"sig_enforce,omitempty"` // sys/module/module/parameters/sig_enforce; optional
	// SecureBoot is the EFI variable SecureBoot (sys/firmware/efi/efivars/
	// SecureBoot-8be4df61-...): on, it puts the kernel in lockdown and
	// makes the shim trust only enrolled keys; nil where not readable.
	SecureBoot *bool `json:"secure_boot,omitempty"` // sys/firmware/efi/efivars/SecureBoot-*; optional
	// Refused are the kernel log's lines of module signing refusing a
	// module ("Lockdown: modprobe: unsigned module loading is
	// restricted", "Loading of unsigned module is rejected"). The kernel
	// names the program, not the module.
	Refused []string `json:"refused,omitempty"` // /dev/kmsg or gdrcheck/kmsg.txt
	// Bound are the nvidia driver's lines about a GPU another driver
	// holds: "NVRM: GPU 0000:01:00.0 is already bound to NovaCore.".
	Bound []string `json:"bound,omitempty"` // /dev/kmsg or gdrcheck/kmsg.txt
}

// The files ModuleLoad reads, relative to the root; snapshots record them.
const (
	lockdownFile   = "sys/kernel/security/lockdown"
	sigEnforceFile = "sys/module/module/parameters/sig_enforce"
	secureBootVar  = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-aae5-0e8d8c6c8c6c"
)

// conflictingModules are the in-tree drivers that claim NVIDIA GPUs.
var conflictingModules = []string{"nouveau", "nova_core"}

// moduleRefusal matches module signing refusing a module at load: the
// lockdown LSM ("Lockdown: %s: unsigned module loading is restricted;
// see man kernel_lockdown.7"), sig_enforce ("Loading of unsigned module
// is rejected", kernel/module/signing.c) and modprobe's EKEYREJECTED
// ("Key was rejected by service") where a log carries it. "module
// verification failed: ... tainting kernel" is not one: the module loaded.
var moduleRefusal = regexp.MustCompile(`Lockdown: [^;]{0,64}: unsigned module loading is restricted|Loading of (?:unsigned module|module with unavailable key|module with unsupported crypto) is rejected|Key was rejected by service`)

// boundElsewhere matches the nvidia driver's probe finding a GPU another
// driver holds (beclab/Olares#3963: "NVRM: GPU 0000:01:00.0 is already
// bound to NovaCore.").
var boundElsewhere = regexp.MustCompile(`NVRM: GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]) is already bound to ([A-Za-z0-9_-]{1,32})`)

// taintOnly is the kernel's note that an unsigned module loaded anyway
// (no lockdown, no sig_enforce): not a failure of the module.
var taintOnly = regexp.MustCompile(`module verification failed: signature and/or required key missing - tainting kernel`)

// moduleLoad reads the module-loading facts; the kernel log's lines are
// added by Kernel.
func (h Host) moduleLoad(driverVersion bool) (ModuleLoad, error) {
	var m ModuleLoad
	var err error
	if m.NVIDIA, err = h.moduleLoaded("nvidia"); err != nil {
		return m, err
	}
	m.NVIDIA = m.NVIDIA || driverVersion
	if m.Nouveau, err = h.moduleLoaded("nouveau"); err != nil {
		return m, err
	}
	if m.NovaCore, err = h.moduleLoaded("nova_core"); err != nil {
		return m, err
	}
	if s, err := readString(h.path(lockdownFile)); err == nil {
		m.Lockdown = parseLockdown(s)
	}
	if s, err := readString(h.path(sigEnforceFile)); err == nil {
		on := s == "Y" || s == "1"
		m.SigEnforce = &on
	}
	m.SecureBoot = h.secureBoot()
	return m, nil
}

// moduleLoaded says whether sys/module/<name> exists: every loaded module
// and every built-in one with parameters has that directory.
func (h Host) moduleLoaded(name string) (bool, error) {
	p := h.sys("module", name)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("reading %q: %w", p, err)
	}
	return true, nil
}

// parseLockdown picks the active mode, the bracketed word of
// sys/kernel/security/lockdown ("none [integrity] confidentiality").
func parseLockdown(s string) string {
	for _, w := range strings.Fields(s) {
		if m, ok := strings.CutPrefix(w, "["); ok {
			return bounded.ClipString(strings.TrimSuffix(m, "]"), 32)
		}
	}
	return ""
}

// secureBoot reads the EFI SecureBoot variable: 4 bytes of attributes,
// then 1 for on.
func (h Host) secureBoot() *bool {
	b, err := bounded.ReadFile(h.path(secureBootVar), bounded.Limit{Bytes: 64, What: "the EFI SecureBoot variable"})
	if err != nil || len(b) < 5 {
		return nil
	}
	on := b[4] == 1
	return &on
}

// LockedDown says the kernel refuses unsigned modules: lockdown in
// integrity or confidentiality mode, or sig_enforce.
func (m ModuleLoad) LockedDown() bool {
	return m.Lockdown == "integrity" || m.Lockdown == "confidentiality" || m.SigEnforce != nil && *m.SigEnforce
}

// SigningState says what makes the kernel refuse unsigned modules, for a
// message: "lockdown integrity, Secure Boot on".
func (m ModuleLoad) SigningState() string {
	var out []string
	if m.Lockdown != "" && m.Lockdown != "none" {
		out = append(out, "lockdown "+m.Lockdown)
	}
	if m.SigEnforce != nil && *m.SigEnforce {
		out = append(out, "module.sig_enforce")
	}
	if m.SecureBoot != nil && *m.SecureBoot {
		out = append(out, "Secure Boot on")
	}
	if len(out) == 0 {
		return "no lockdown, no sig_enforce"
	}
	return strings.Join(out, ", ")
}

// Holder is the in-tree driver that claims NVIDIA GPUs among the loaded
// modules, "" where none is loaded.
func (m ModuleLoad) Holder() string {
	switch {
	case m.Nouveau:
		return "nouveau"
	case m.NovaCore:
		return "nova_core"
	}
	return ""
}

// IsConflictingDriver says a PCI driver name is one of the in-tree
// drivers that take NVIDIA GPUs from nvidia: nouveau, or nova_core,
// which registers its PCI driver as NovaCore.
func IsConflictingDriver(name string) bool {
	n := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	return n == "nouveau" || n == "nova_core" || n == "novacore" || n == "nova"
}

// BlacklistFix is what an admin does about an in-tree driver holding the
// GPUs: keep it from loading, in the initramfs too, and reboot.
func BlacklistFix(driver string) string {
	mods := "nouveau (blacklist nouveau and options nouveau modeset=0"
	if n := strings.ToLower(driver); strings.HasPrefix(n, "nova") {
		mods = "nova_core and nova_drm (blacklist nova_core and blacklist nova_drm"
	}
	return "blacklist " + mods + " in /etc/modprobe.d/), rebuild the initramfs (update-initramfs -u, or dracut -f) and reboot"
}

// SigningFix is what an admin does about module signing refusing the
// NVIDIA modules.
const SigningFix = "sign the NVIDIA modules with a key the kernel trusts (a Machine Owner Key enrolled with mokutil --import, as DKMS's signing key is), use the distribution's signed NVIDIA modules, or disable Secure Boot"

// driverName is what a PCI driver's name may hold: a recording's link
// could point anywhere.
var driverName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// pciDriver names the driver a PCI function is bound to, the last element
// of its sys/bus/pci/devices/<address>/driver link; "" where unbound or
// not recorded.
func (h Host) pciDriver(addr string) string {
	t, err := os.Readlink(h.sys("bus", "pci", "devices", addr, "driver"))
	if err != nil {
		return ""
	}
	name := filepath.Base(filepath.ToSlash(t))
	if !driverName.MatchString(name) {
		return ""
	}
	return name
}

// ParseBound reads a line Bound keeps: the GPU and the driver holding it.
func ParseBound(line string) (gpu, driver string, ok bool) {
	m := boundElsewhere.FindStringSubmatch(line)
	if m == nil {
		return "", "", false
	}
	return NormalizeBusID(m[1]), m[2], true
}
