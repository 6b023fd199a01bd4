package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// ACS is a bridge's Access Control Services control register, read from the
// ACS extended capability in its config space. With P2P request or
// completion redirect set, peer traffic below the bridge is forced up to the
// root complex: GPUDirect RDMA then crosses the CPU or fails.
type ACS struct {
	Bridge             string `json:"bridge"`                  // the sys/bus/pci/devices/<bridge> entry read
	SourceValidation   bool   `json:"source_validation"`       // ACSCtl bit 0, of sys/bus/pci/devices/<bridge>/config
	TranslationBlock   bool   `json:"translation_blocking"`    // ACSCtl bit 1
	RequestRedirect    bool   `json:"p2p_request_redirect"`    // ACSCtl bit 2
	CompletionRedirect bool   `json:"p2p_completion_redirect"` // ACSCtl bit 3
	UpstreamForwarding bool   `json:"upstream_forwarding"`     // ACSCtl bit 4
	EgressControl      bool   `json:"p2p_egress_control"`      // ACSCtl bit 5
	DirectTranslated   bool   `json:"direct_translated_p2p"`   // ACSCtl bit 6
	Control            uint16 `json:"control"`                 // the raw ACSCtl register, ACS extended capability (0x000d) + 6
}

// Redirects reports whether peer requests or completions are redirected.
func (a ACS) Redirects() bool { return a.RequestRedirect || a.CompletionRedirect }

const (
	pcieExtCapStart = 0x100
	pcieExtCapACS   = 0x000d
	configSpaceBase = 64 // what an unprivileged reader of "config" gets
)

// errConfigTruncated says config space stops before the extended
// capabilities: the kernel shows only 64 bytes to unprivileged readers.
var errConfigTruncated = errors.New("config space has no extended capabilities (reading beyond 64 bytes needs root)")

// ErrNoConfigSpace is a recording's missing config file: gdrcheck
// snapshot recorded config space only from a later release, so a tree
// without it is older, not broken. Said once, without the path of the
// archive's private unpacking, however many devices lack it.
var ErrNoConfigSpace = errors.New("this recording holds no PCI config space (made by an older gdrcheck; snapshot the node again)")

// configSpaceLimit caps a recorded config file: PCIe config space is
// 4 KiB, and sysfs shows no more.
var configSpaceLimit = bounded.Limit{Bytes: 4 << 10, What: "a PCI config space", Why: "PCIe config space is 4 KiB"}

// BridgeACS reads the ACS control of one bridge from
// bus/pci/devices/<addr>/config. A bridge without the capability returns
// ErrAbsent.
func (h Host) BridgeACS(addr string) (ACS, error) {
	b, path, err := h.configSpace(addr)
	if err != nil {
		return ACS{}, err
	}
	a, err := parseACS(b)
	if err != nil {
		return ACS{}, fmt.Errorf("ACS of %s in %q: %w", addr, path, err)
	}
	a.Bridge = addr
	return a, nil
}

// configSpace reads bus/pci/devices/<addr>/config, and says where.
func (h Host) configSpace(addr string) ([]byte, string, error) {
	path := h.sys("bus", "pci", "devices", addr, "config")
	b, err := bounded.ReadFile(path, configSpaceLimit)
	if errors.Is(err, fs.ErrNotExist) && !h.Live() {
		return nil, path, ErrNoConfigSpace
	}
	if err != nil {
		return nil, path, fmt.Errorf("reading %q: %w", path, err)
	}
	return b, path, nil
}

// parseACS finds the ACS capability; ACS control is the 16-bit word at +6.
func parseACS(config []byte) (ACS, error) {
	if len(config) <= pcieExtCapStart {
		if len(config) <= configSpaceBase {
			return ACS{}, errConfigTruncated
		}
		return ACS{}, fmt.Errorf("ACS capability: %w", ErrAbsent)
	}
	off, ok := extCap(config, pcieExtCapACS)
	if !ok {
		return ACS{}, fmt.Errorf("ACS capability: %w", ErrAbsent)
	}
	ctl := binary.LittleEndian.Uint16(config[off+6:])
	return ACS{
		SourceValidation:   ctl&(1<<0) != 0,
		TranslationBlock:   ctl&(1<<1) != 0,
		RequestRedirect:    ctl&(1<<2) != 0,
		CompletionRedirect: ctl&(1<<3) != 0,
		UpstreamForwarding: ctl&(1<<4) != 0,
		EgressControl:      ctl&(1<<5) != 0,
		DirectTranslated:   ctl&(1<<6) != 0,
		Control:            ctl,
	}, nil
}

// extCap walks the PCIe extended capability list (PCIe base spec 7.6.3)
// for a capability ID: each header holds the ID in bits 0-15 and the next
// offset in bits 20-31. It returns the header's offset, with at least 8
// bytes of the capability inside config. A hypervisor hides a capability
// by zeroing its ID and keeping the link, so a zero ID does not end the
// walk; an all-zero or all-ones header does.
func extCap(config []byte, id uint16) (int, bool) {
	off := pcieExtCapStart
	for seen := 0; off >= pcieExtCapStart && off+8 <= len(config) && seen < 256; seen++ {
		hdr := binary.LittleEndian.Uint32(config[off:])
		if hdr == 0 || hdr == 0xffffffff {
			break
		}
		if uint16(hdr&0xffff) == id {
			return off, true
		}
		off = int(hdr >> 20)
	}
	return 0, false
}
