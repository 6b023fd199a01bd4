package node

import (
	"encoding/binary"
	"fmt"
)

// DeviceControl is how a PCIe function is set to move data, read from its
// config space: the PCI Express capability's Device Capabilities and
// Device Control registers (PCIe base spec 7.5.3.3, 7.5.3.4) and the ATS
// extended capability (10.5.1). A NIC reading GPU memory issues reads of
// at most MaxReadRequest bytes and writes payloads of at most MaxPayload;
// relaxed ordering lets the root complex reorder its writes.
type DeviceControl struct {
	MaxPayload          int  `json:"max_payload"`           // sys/bus/pci/devices/<address>/config: DevCtl bits 7:5, in bytes
	MaxPayloadSupported int  `json:"max_payload_supported"` // DevCap bits 2:0, in bytes
	MaxReadRequest      int  `json:"max_read_request"`      // DevCtl bits 14:12, in bytes
	RelaxedOrdering     bool `json:"relaxed_ordering"`      // DevCtl bit 4
	// Extended is whether config space reached past 256 bytes, where the
	// extended capabilities (ATS) live; a VM on a machine type without
	// PCIe config access (QEMU i440FX) shows only 256.
	Extended bool `json:"extended"` // config longer than 256 bytes
	// ATS is the ATS capability; nil where the function shows none.
	ATS *ATSControl `json:"ats,omitempty"` // config: ATS extended capability (0x000f); optional
}

// ATSControl is the ATS Control register: bit 15 enables translation
// requests, which GPUDirect RDMA in a VM needs (NVIDIA AI Enterprise,
// "Optimizing VM configuration", appendix "ATS and ACS configuration").
type ATSControl struct {
	Enabled bool   `json:"enabled"` // ATS Control bit 15
	Control uint16 `json:"control"` // the raw ATS Control register
}

const (
	pciStatus          = 0x06
	pciStatusCapList   = 1 << 4
	pciCapPointer      = 0x34
	pciCapIDExpress    = 0x10
	pcieExtCapATS      = 0x000f
	pcieConfigStandard = 256
)

// DeviceControlOf reads the device control of one PCI function from
// bus/pci/devices/<addr>/config. A function without a PCI Express
// capability returns ErrAbsent; config space cut at 64 bytes (a reader
// without root) returns errConfigTruncated.
func (h Host) DeviceControlOf(addr string) (DeviceControl, error) {
	b, path, err := h.configSpace(addr)
	if err != nil {
		return DeviceControl{}, err
	}
	d, err := parseDeviceControl(b)
	if err != nil {
		return DeviceControl{}, fmt.Errorf("device control of %s in %q: %w", addr, path, err)
	}
	return d, nil
}

// parseDeviceControl finds the PCI Express capability in the standard
// capability list (a chain of ID, next-pointer bytes from the pointer at
// 0x34) and ATS in the extended list.
func parseDeviceControl(config []byte) (DeviceControl, error) {
	if len(config) <= configSpaceBase {
		return DeviceControl{}, errConfigTruncated
	}
	off, ok := stdCap(config, pciCapIDExpress)
	if !ok {
		return DeviceControl{}, fmt.Errorf("PCI Express capability: %w", ErrAbsent)
	}
	devCap := binary.LittleEndian.Uint32(config[off+4:])
	devCtl := binary.LittleEndian.Uint16(config[off+8:])
	d := DeviceControl{
		MaxPayloadSupported: sizeCode(uint16(devCap & 0x7)),
		MaxPayload:          sizeCode((devCtl >> 5) & 0x7),
		MaxReadRequest:      sizeCode((devCtl >> 12) & 0x7),
		RelaxedOrdering:     devCtl&(1<<4) != 0,
		Extended:            len(config) > pcieConfigStandard,
	}
	if at, ok := extCap(config, pcieExtCapATS); ok {
		ctl := binary.LittleEndian.Uint16(config[at+6:])
		d.ATS = &ATSControl{Enabled: ctl&(1<<15) != 0, Control: ctl}
	}
	return d, nil
}

// stdCap walks the standard capability list for an ID, returning an
// offset with the 12 bytes up to Device Control inside config.
func stdCap(config []byte, id byte) (int, bool) {
	if binary.LittleEndian.Uint16(config[pciStatus:])&pciStatusCapList == 0 {
		return 0, false
	}
	off := int(config[pciCapPointer] &^ 3)
	for seen := 0; off >= 0x40 && off+12 <= len(config) && seen < 48; seen++ {
		if config[off] == id {
			return off, true
		}
		off = int(config[off+1] &^ 3)
	}
	return 0, false
}

// sizeCode decodes the 3-bit size fields of DevCap and DevCtl: 128 << n
// bytes; 6 and 7 are reserved (0, unknown).
func sizeCode(n uint16) int {
	if n > 5 {
		return 0
	}
	return 128 << n
}
