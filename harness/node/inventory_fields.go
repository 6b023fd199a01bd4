package node

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
)

// The maps schedulers and launchers consume (gres.conf lines, the env
// fragment a rank's wrapper sources) carry the inventory's identifiers as
// words of their own, so each must have the form its source gives it;
// anything else came from a recording or a tree that is not what it
// claims, and is refused rather than written. Free text (a GPU's name)
// is never one of these words.
var (
	// Kernel device names (infiniband class, netdevs): IB_DEVICE_NAME_MAX
	// is 64.
	kernelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	// sysfs's PCI address: domain (4 hex digits, more on large
	// segments), bus, device, function.
	pciBusID = regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)
	// NVML's GPU and MIG UUIDs.
	gpuUUID = regexp.MustCompile(`^(GPU|MIG)-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$`)
	// The kernel's CPU list format, local_cpulist's.
	cpuList = regexp.MustCompile(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)
)

// maxCPU bounds the CPU numbers of a list: Linux's NR_CPUS is at most
// 8192, and a range up to 2^31 would otherwise be expanded whole.
const maxCPU = 1 << 16

// CheckFields says which identifier of the inventory is not of its
// source's form: the node's host name (a Slurm node name), and for each
// GPU its UUID, PCI bus id, local CPU list and rail NIC and port. The
// error names the field and quotes the value. Empty optional fields (no
// UUID without NVML, no NIC) are fine.
func (inv Inventory) CheckFields() error {
	if inv.Node != "" {
		if err := hostlist.Valid(inv.Node); err != nil {
			return fmt.Errorf("node (proc/sys/kernel/hostname): %w", err)
		}
	}
	for i, g := range inv.GPUs {
		bad := func(field, v, want string) error {
			return fmt.Errorf("gpus[%d]: %s %q is not %s", i, field, v, want)
		}
		if !pciBusID.MatchString(g.BusID) {
			return bad("bus_id", g.BusID, "a PCI bus id (0000:18:00.0)")
		}
		if g.UUID != "" && !gpuUUID.MatchString(g.UUID) {
			return bad("uuid", g.UUID, "an NVML GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)")
		}
		if g.CPUList != "" {
			if err := checkCPUList(g.CPUList); err != nil {
				return bad("cpu_list (local_cpulist)", g.CPUList, "a CPU list (digits, ',' and '-', CPUs below 65536)")
			}
		}
		if g.PreferredNIC != "" && !kernelName.MatchString(g.PreferredNIC) {
			return bad("preferred_nic", g.PreferredNIC, "a kernel device name (letters, digits, '_', '-', '.')")
		}
		if g.PreferredPort != "" {
			nic, port, ok := strings.Cut(g.PreferredPort, ":")
			if _, err := strconv.ParseUint(port, 10, 8); !ok || nic != g.PreferredNIC || err != nil {
				return bad("preferred_port", g.PreferredPort, "the rail NIC and a port number (mlx5_0:1)")
			}
		}
		if g.Path != "" {
			if _, err := ParsePathClass(string(g.Path)); err != nil {
				return fmt.Errorf("gpus[%d]: path: %w", i, err)
			}
		}
	}
	return nil
}

func checkCPUList(s string) error {
	if !cpuList.MatchString(s) {
		return fmt.Errorf("CPU list %q: not digits, ',' and '-'", s)
	}
	for _, n := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '-' }) {
		if v, err := strconv.Atoi(n); err != nil || v >= maxCPU {
			return fmt.Errorf("CPU list %q: CPU %s is out of range", s, n)
		}
	}
	return nil
}
