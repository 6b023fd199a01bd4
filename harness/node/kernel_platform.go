package node

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// Platform is what the node runs on, as far as the PCIe checks care: the
// CPU, since where relaxed ordering matters depends on it, and whether
// the node is a virtual machine, where ATS must be on for GPUDirect RDMA.
type Platform struct {
	CPUVendor string `json:"cpu_vendor,omitempty"` // proc/cpuinfo vendor_id (first CPU): GenuineIntel, AuthenticAMD
	CPUFamily int    `json:"cpu_family,omitempty"` // proc/cpuinfo "cpu family"
	CPUModel  int    `json:"cpu_model,omitempty"`  // proc/cpuinfo "model"
	CPUName   string `json:"cpu_name,omitempty"`   // proc/cpuinfo "model name"
	// VMSigns say how the node is known to be a virtual machine: the
	// CPU's hypervisor flag, a hypervisor's DMI vendor, virtio PCI
	// functions. Empty on bare metal, or where nothing could be read.
	VMSigns []string `json:"vm_signs,omitempty"` // proc/cpuinfo flags, sys/class/dmi/id/{sys_vendor,product_name}, sys/hypervisor/type, sys/bus/pci/devices/*/vendor
	// Looked are the sources read to tell, so an empty VMSigns says what
	// it rests on.
	Looked []string `json:"looked,omitempty"` // which of those could be read
}

// VM reports a virtual machine. It is the one test of it: the ATS spec
// and the GPU<->NIC path spec (a guest's flattened PCI tree) both ask it.
func (p Platform) VM() bool { return len(p.VMSigns) > 0 }

// Name says what tells the virtual machine, for a message.
func (p Platform) Name() string { return strings.Join(p.VMSigns, ", ") }

// The files platform reads besides cpuinfo, relative to the root;
// snapshots record them (DMI's vendor and product, not its serials).
const (
	dmiDir         = "sys/class/dmi/id"
	hypervisorFile = "sys/hypervisor/type"
)

// cpuinfoPrefix is how much of /proc/cpuinfo is read: the first CPU's
// block is all the platform needs, and snapshots keep only that (a large
// node's whole file is hundreds of KiB of the same).
const cpuinfoPrefix = 64 << 10

// pciVendorVirtio is Red Hat's virtio vendor: its functions exist only
// in virtual machines.
const pciVendorVirtio = 0x1af4

// hypervisorVendors are DMI sys_vendor or product_name prefixes only
// hypervisors report (systemd-detect-virt's DMI table).
var hypervisorVendors = []string{"KVM", "QEMU", "VMware", "VMW", "innotek GmbH", "VirtualBox", "Xen", "Bochs", "Parallels", "BHYVE", "OpenStack", "KubeVirt", "Google Compute Engine", "Cloud Hypervisor"}

// platform reads the CPU identity and the signs of a hypervisor.
func (h Host) platform(pci map[string]PCIDevice) Platform {
	var p Platform
	if block, err := h.firstCPUInfo(); err == nil {
		p.Looked = append(p.Looked, "/proc/cpuinfo")
		kv := cpuinfoFields(block)
		p.CPUVendor, p.CPUName = kv["vendor_id"], kv["model name"]
		p.CPUFamily, _ = strconv.Atoi(kv["cpu family"])
		p.CPUModel, _ = strconv.Atoi(kv["model"])
		if slices.Contains(strings.Fields(kv["flags"]), "hypervisor") {
			p.VMSigns = append(p.VMSigns, "the CPU's hypervisor flag in /proc/cpuinfo")
		}
	}
	vendor, verr := readString(h.path(dmiDir, "sys_vendor"))
	product, perr := readString(h.path(dmiDir, "product_name"))
	if verr == nil || perr == nil {
		p.Looked = append(p.Looked, "DMI")
		if sign := dmiHypervisor(vendor, product); sign != "" {
			p.VMSigns = append(p.VMSigns, sign)
		}
	}
	if t, err := readString(h.path(hypervisorFile)); err == nil && t != "" {
		p.VMSigns = append(p.VMSigns, fmt.Sprintf("/sys/hypervisor/type %q", bounded.ClipString(t, 64)))
	}
	p.Looked = append(p.Looked, "PCI vendors")
	for _, addr := range slices.Sorted(maps.Keys(pci)) {
		if pci[addr].Vendor == pciVendorVirtio {
			p.VMSigns = append(p.VMSigns, "virtio PCI function "+addr)
			break
		}
	}
	return p
}

// dmiHypervisor names the hypervisor DMI shows, or "". Hyper-V and EC2
// share their vendor with bare metal: Hyper-V's product is "Virtual
// Machine", and EC2's bare-metal instances end in ".metal".
func dmiHypervisor(vendor, product string) string {
	for _, v := range hypervisorVendors {
		if strings.HasPrefix(vendor, v) || strings.HasPrefix(product, v) {
			return fmt.Sprintf("DMI %q %q", bounded.ClipString(vendor, 64), bounded.ClipString(product, 64))
		}
	}
	if (vendor == "Microsoft Corporation" && product == "Virtual Machine") || (vendor == "Amazon EC2" && product != "" && !strings.HasSuffix(product, ".metal")) {
		return fmt.Sprintf("DMI %q %q", bounded.ClipString(vendor, 64), bounded.ClipString(product, 64))
	}
	return ""
}

// firstCPUInfo reads /proc/cpuinfo up to the end of the first CPU's
// block.
func (h Host) firstCPUInfo() (string, error) {
	path := h.proc("cpuinfo")
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("reading %q: %w", path, ErrAbsent)
		}
		return "", fmt.Errorf("reading %q: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, cpuinfoPrefix))
	if err != nil {
		return "", fmt.Errorf("reading %q: %w", path, err)
	}
	s := string(b)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i+1]
	}
	return s, nil
}

// cpuinfoFields splits "key\t: value" lines.
func cpuinfoFields(block string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return kv
}
