package node

import (
	"bufio"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// VMFacts say the node is a virtual machine, and whose. A guest's PCI tree
// is the hypervisor's: passed-through GPUs and NICs sit on its root bus
// with no switch between them and no NUMA node, so NCCL sees PHB or SYS
// and disables GPUDirect RDMA unless NCCL_TOPO_FILE describes the host's
// real topology (NVIDIA/nccl#1464, NVIDIA/nccl#1674, NVIDIA/nccl#811).
type VMFacts struct {
	// HypervisorFlag is the "hypervisor" CPU flag of proc/cpuinfo, which
	// every x86 hypervisor sets and bare metal never does.
	HypervisorFlag bool   `json:"hypervisor_flag,omitempty"`
	Vendor         string `json:"sys_vendor,omitempty"`      // sys/class/dmi/id/sys_vendor
	Product        string `json:"product_name,omitempty"`    // sys/class/dmi/id/product_name
	Hypervisor     string `json:"hypervisor_type,omitempty"` // sys/hypervisor/type (xen)
}

// The files VM reads, relative to the root; snapshots record them.
const (
	cpuinfoFile    = "proc/cpuinfo"
	dmiDir         = "sys/class/dmi/id"
	hypervisorFile = "sys/hypervisor/type"
)

// vmProducts are DMI vendors and products that only virtual machines
// report. Cloud vendors (Amazon EC2, Google) are not among them: their
// bare-metal instances report the same; their guests set the CPU flag.
var vmProducts = []string{"QEMU", "KVM", "VMware", "VirtualBox", "innotek GmbH", "Xen", "Virtual Machine", "Bochs", "OpenStack Nova", "Parallels"}

// Guest says the facts show a virtual machine.
func (v VMFacts) Guest() bool {
	if v.HypervisorFlag || v.Hypervisor != "" {
		return true
	}
	for _, s := range []string{v.Vendor, v.Product} {
		if slices.ContainsFunc(vmProducts, func(p string) bool { return strings.Contains(s, p) }) {
			return true
		}
	}
	return false
}

// Name says which facts tell the guest, for a message: "QEMU Standard PC
// (Q35 + ICH9, 2009), hypervisor CPU flag".
func (v VMFacts) Name() string {
	var out []string
	if s := strings.TrimSpace(v.Vendor + " " + v.Product); s != "" {
		out = append(out, s)
	}
	if v.Hypervisor != "" {
		out = append(out, "hypervisor "+v.Hypervisor)
	}
	if v.HypervisorFlag {
		out = append(out, "hypervisor CPU flag")
	}
	return strings.Join(out, ", ")
}

// VM reads what tells a virtual machine; nil where nothing does (bare
// metal, or a recording made before gdrcheck read it).
func (h Host) VM() *VMFacts {
	var v VMFacts
	v.HypervisorFlag = h.hypervisorFlag()
	v.Vendor = dmiString(h.path(dmiDir, "sys_vendor"))
	v.Product = dmiString(h.path(dmiDir, "product_name"))
	v.Hypervisor = dmiString(h.path(hypervisorFile))
	if !v.Guest() {
		return nil
	}
	return &v
}

func dmiString(p string) string {
	s, err := readString(p)
	if err != nil {
		return ""
	}
	return bounded.ClipString(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s), 64)
}

// hypervisorFlag reads the first "flags" line of proc/cpuinfo: every CPU
// of a guest carries the flag, so one is enough.
func (h Host) hypervisorFlag() bool {
	f, err := os.Open(h.path(cpuinfoFile))
	if err != nil {
		return false
	}
	defer f.Close()
	return parseHypervisorFlag(f)
}

func parseHypervisorFlag(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "flags" {
			return slices.Contains(strings.Fields(v), "hypervisor")
		}
	}
	return false
}

// firstCPU is the first processor's block of a cpuinfo, up to the first
// blank line: what a snapshot keeps of it (the flags are every CPU's).
func firstCPU(b []byte) []byte {
	if i := strings.Index(string(b), "\n\n"); i >= 0 {
		return b[:i+1]
	}
	return b
}
