package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs/sysfs"
)

// PCI class codes that matter here (the upper 16 bits of sysfs "class").
const (
	pciClassDisplayVGA = 0x0300
	pciClass3D         = 0x0302
	pciClassBridge     = 0x0604
	pciVendorNVIDIA    = 0x10de
)

// PCIDevice is one function under /sys/bus/pci/devices with the parts of its
// sysfs directory that topology needs.
type PCIDevice struct {
	Address string    `json:"address"`            // the sys/bus/pci/devices/<address> entry, e.g. 0000:18:00.0
	Vendor  uint32    `json:"vendor"`             // sys/bus/pci/devices/<address>/vendor
	Device  uint32    `json:"device"`             // sys/bus/pci/devices/<address>/device
	Class   uint32    `json:"class"`              // sys/bus/pci/devices/<address>/class
	NUMA    int       `json:"numa_node"`          // sys/bus/pci/devices/<address>/numa_node; -1 when the kernel does not know
	CPUList string    `json:"cpu_list,omitempty"` // sys/bus/pci/devices/<address>/local_cpulist; optional
	Link    *PCIeLink `json:"link,omitempty"`     // sys/bus/pci/devices/<address>/current_link_*, max_link_*; optional
	// Chain is the resolved bus/pci/devices symlink: the host bridge
	// ("pci0000:00") first, then every bridge down to the device's parent.
	Chain []string `json:"chain"` // the sys/bus/pci/devices/<address> link's target
}

// PCIeLink is a link's speed and width, current against maximum.
type PCIeLink struct {
	CurSpeedGTs float64 `json:"cur_speed_gts,omitempty"` // sys/bus/pci/devices/<address>/current_link_speed
	MaxSpeedGTs float64 `json:"max_speed_gts,omitempty"` // sys/bus/pci/devices/<address>/max_link_speed
	CurWidth    int     `json:"cur_width,omitempty"`     // sys/bus/pci/devices/<address>/current_link_width
	MaxWidth    int     `json:"max_width,omitempty"`     // sys/bus/pci/devices/<address>/max_link_width
}

// HostBridge is the root complex the device hangs off.
func (d PCIDevice) HostBridge() string {
	if len(d.Chain) == 0 {
		return ""
	}
	return d.Chain[0]
}

// Bridges are the PCI bridges between the host bridge and the device.
func (d PCIDevice) Bridges() []string {
	if len(d.Chain) < 2 {
		return nil
	}
	return d.Chain[1:]
}

// IsNVIDIAGPU reports a display or 3D controller from NVIDIA.
func (d PCIDevice) IsNVIDIAGPU() bool {
	c := d.Class >> 8
	return d.Vendor == pciVendorNVIDIA && (c == pciClassDisplayVGA || c == pciClass3D)
}

// PCIDevices reads every device under bus/pci/devices, through procfs for the
// attributes and the symlink itself for the full bridge chain (procfs keeps
// only the parent).
func (h Host) PCIDevices() (map[string]PCIDevice, error) {
	dir := h.sys("bus", "pci", "devices")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading %q: %w", dir, ErrAbsent)
	}
	pds, err := h.Sys.PciDevices()
	if err != nil {
		// procfs names the file that failed.
		return nil, fmt.Errorf("reading PCI devices under %q: %w", dir, err)
	}
	out := make(map[string]PCIDevice, len(pds))
	for _, pd := range pds {
		// procfs's own key and Name() print the function after a colon
		// ("0000:18:00:0"); sysfs names it after a dot.
		l := pd.Location
		name := fmt.Sprintf("%04x:%02x:%02x.%x", l.Segment, l.Bus, l.Device, l.Function)
		d, err := h.pciDevice(name, pd)
		if err != nil {
			return nil, err
		}
		out[d.Address] = d
	}
	return out, nil
}

func (h Host) pciDevice(name string, pd sysfs.PciDevice) (PCIDevice, error) {
	link := h.sys("bus", "pci", "devices", name)
	target, err := os.Readlink(link)
	if err != nil {
		return PCIDevice{}, fmt.Errorf("reading link %q: %w", link, err)
	}
	d := PCIDevice{
		Address: name,
		Vendor:  pd.Vendor,
		Device:  pd.Device,
		Class:   pd.Class,
		NUMA:    -1,
		Chain:   parseChain(target),
	}
	if pd.NumaNode != nil {
		d.NUMA = int(*pd.NumaNode)
	}
	if pd.MaxLinkSpeed != nil || pd.CurrentLinkSpeed != nil || pd.MaxLinkWidth != nil || pd.CurrentLinkWidth != nil {
		l := &PCIeLink{}
		if pd.CurrentLinkSpeed != nil {
			l.CurSpeedGTs = *pd.CurrentLinkSpeed
		}
		if pd.MaxLinkSpeed != nil {
			l.MaxSpeedGTs = *pd.MaxLinkSpeed
		}
		if pd.CurrentLinkWidth != nil {
			l.CurWidth = int(*pd.CurrentLinkWidth)
		}
		if pd.MaxLinkWidth != nil {
			l.MaxWidth = int(*pd.MaxLinkWidth)
		}
		d.Link = l
	}
	cpus, err := readString(h.sys("bus", "pci", "devices", name, "local_cpulist"))
	switch {
	case err == nil:
		d.CPUList = cpus
	case !errors.Is(err, ErrAbsent):
		return PCIDevice{}, err
	}
	return d, nil
}

// parseChain turns "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0"
// into ["pci0000:00", "0000:00:01.0"]: the host bridge and the bridges above
// the device, without the device itself.
func parseChain(target string) []string {
	parts := strings.Split(filepath.ToSlash(target), "/")
	start := -1
	for i, p := range parts {
		if strings.HasPrefix(p, "pci") && strings.Contains(p, ":") {
			start = i
			break
		}
	}
	if start < 0 || len(parts)-start < 2 {
		return nil
	}
	return append([]string(nil), parts[start:len(parts)-1]...)
}

// NormalizeBusID turns NVML's "00000000:18:00.0" (upper case, 8-digit
// domain) into sysfs's "0000:18:00.0".
func NormalizeBusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	dom, rest, ok := strings.Cut(id, ":")
	if !ok || strings.Count(rest, ":") != 1 {
		return id
	}
	n, err := strconv.ParseUint(dom, 16, 32)
	if err != nil {
		return id
	}
	return fmt.Sprintf("%04x:%s", n, rest)
}

// sortedKeys returns a map's keys in order, so output is stable.
