package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// IOMMU modes as they matter for peer DMA. A translating IOMMU (DMA domain)
// makes every peer access go through address translation in the root
// complex: GPUDirect RDMA then breaks or slows down unless the devices are
// in passthrough (identity) domains.
const (
	IOMMUOff         = "off"
	IOMMUPassthrough = "passthrough"
	IOMMUTranslating = "translating"
)

// DeviceIOMMU is one device's IOMMU group and its domain type.
type DeviceIOMMU struct {
	Group string `json:"group,omitempty"` // sys/bus/pci/devices/<addr>/iommu_group -> kernel/iommu_groups/<N>; optional
	Type  string `json:"type,omitempty"`  // sys/kernel/iommu_groups/<N>/type; optional: identity, DMA, DMA-FQ, blocked
	Mode  string `json:"mode"`            // from Type and Group: off, passthrough or translating
}

// IOMMU is the node's view: the kernel command line options and the worst
// mode among the GPUs and NICs.
type IOMMU struct {
	Mode       string   `json:"mode"`              // the worst of the GPUs' and NICs' modes: off, passthrough or translating
	Units      int      `json:"units"`             // entries in sys/class/iommu
	CmdlineOpt []string `json:"cmdline,omitempty"` // iommu=, intel_iommu=, amd_iommu= from proc/cmdline
}

// DeviceIOMMU reads the IOMMU group of a PCI device. No group link means no
// IOMMU translates for this device.
func (h Host) DeviceIOMMU(addr string) (DeviceIOMMU, error) {
	link := h.sys("bus", "pci", "devices", addr, "iommu_group")
	target, err := os.Readlink(link)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return DeviceIOMMU{Mode: IOMMUOff}, nil
		}
		return DeviceIOMMU{}, fmt.Errorf("reading link %q: %w", link, err)
	}
	group := filepath.Base(target)
	t, err := readString(h.sys("kernel", "iommu_groups", group, "type"))
	if err != nil {
		// Kernels before 5.11 have no type file: the group exists, so
		// something translates, and we cannot tell it is identity.
		if errors.Is(err, ErrAbsent) {
			return DeviceIOMMU{Group: group, Mode: IOMMUTranslating}, nil
		}
		return DeviceIOMMU{}, err
	}
	return DeviceIOMMU{Group: group, Type: t, Mode: iommuMode(t)}, nil
}

// iommuMode maps a group's domain type to a mode.
func iommuMode(t string) string {
	switch t {
	case "identity":
		return IOMMUPassthrough
	case "":
		return IOMMUOff
	default: // DMA, DMA-FQ, blocked, unmanaged
		return IOMMUTranslating
	}
}

// NodeIOMMU reads class/iommu and the IOMMU options of the kernel command
// line; the mode is filled in from the devices by Collect.
func (h Host) NodeIOMMU() (IOMMU, error) {
	var io IOMMU
	ents, err := os.ReadDir(h.sys("class", "iommu"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return io, fmt.Errorf("reading %q: %w", h.sys("class", "iommu"), err)
	}
	io.Units = len(ents)
	cmd, err := readString(h.proc("cmdline"))
	if err != nil && !errors.Is(err, ErrAbsent) {
		return io, err
	}
	for _, f := range strings.Fields(cmd) {
		if strings.HasPrefix(f, "iommu") || strings.HasPrefix(f, "intel_iommu") || strings.HasPrefix(f, "amd_iommu") {
			io.CmdlineOpt = append(io.CmdlineOpt, f)
		}
	}
	return io, nil
}

// worseIOMMU returns the mode that matters more for peer DMA.
func worseIOMMU(a, b string) string {
	rank := map[string]int{"": 0, IOMMUOff: 1, IOMMUPassthrough: 2, IOMMUTranslating: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}
