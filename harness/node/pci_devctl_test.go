package node

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// The H200 of the recorded VM: DevCap 0x112c8021 (256-byte payloads),
// DevCtl 0x5134 (MaxPayload 256, MaxReadReq 4096, RlxdOrd+), and no ATS
// capability among the extended ones, some of which the hypervisor hid by
// zeroing their IDs.
func TestDeviceControlOfTheRecordedH200(t *testing.T) {
	h, err := Open(recordedNode(t))
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.DeviceControlOf("0000:00:06.0")
	if err != nil {
		t.Fatal(err)
	}
	want := DeviceControl{MaxPayload: 256, MaxPayloadSupported: 256, MaxReadRequest: 4096, RelaxedOrdering: true, Extended: true}
	if d != want {
		t.Errorf("got %+v, want %+v", d, want)
	}
	// A virtio function of the same VM: 256 bytes of config space, no
	// PCI Express capability.
	if _, err := h.DeviceControlOf("0000:00:01.0"); !errors.Is(err, ErrAbsent) {
		t.Errorf("virtio function: %v, want ErrAbsent", err)
	}
}

// pcieConfig builds a config space with a PCI Express capability behind
// a power-management one, and an ATS capability with atsCtl after a
// hidden (zero-ID) extended capability; atsCtl < 0 leaves ATS out.
func pcieConfig(devCap uint32, devCtl uint16, atsCtl int) []byte {
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint16(b[0x06:], 1<<4)
	b[0x34] = 0x40
	b[0x40], b[0x41] = 0x01, 0x70 // PM, next 0x70
	b[0x70], b[0x71] = 0x10, 0x00
	binary.LittleEndian.PutUint32(b[0x74:], devCap)
	binary.LittleEndian.PutUint16(b[0x78:], devCtl)
	binary.LittleEndian.PutUint32(b[0x100:], 0x0000|1<<16|0x180<<20)
	if atsCtl >= 0 {
		binary.LittleEndian.PutUint32(b[0x180:], 0x000f|1<<16)
		binary.LittleEndian.PutUint16(b[0x186:], uint16(atsCtl))
	}
	return b
}

func TestParseDeviceControlDecodesSizesOrderingAndATS(t *testing.T) {
	// ConnectX-7 as firmware leaves it untuned: 512-byte payloads
	// supported, 256 set, reads at the 512-byte reset value, relaxed
	// ordering off; ATS present and off.
	d, err := parseDeviceControl(pcieConfig(0x2, 1<<5|2<<12, 0x0000))
	if err != nil {
		t.Fatal(err)
	}
	if d.MaxPayloadSupported != 512 || d.MaxPayload != 256 || d.MaxReadRequest != 512 || d.RelaxedOrdering || d.ATS == nil || d.ATS.Enabled {
		t.Errorf("untuned NIC: %+v ATS %+v", d, d.ATS)
	}
	d, err = parseDeviceControl(pcieConfig(0x2, 1<<4|1<<5|5<<12, 0x8000))
	if err != nil || d.MaxReadRequest != 4096 || !d.RelaxedOrdering || d.ATS == nil || !d.ATS.Enabled || d.ATS.Control != 0x8000 {
		t.Errorf("tuned NIC: %+v ATS %+v, %v", d, d.ATS, err)
	}
	// Reserved size codes are unknown, not a size.
	if d, _ := parseDeviceControl(pcieConfig(0x7, 7<<5, -1)); d.MaxPayloadSupported != 0 || d.MaxPayload != 0 || d.ATS != nil {
		t.Errorf("reserved codes: %+v", d)
	}
}

func TestParseDeviceControlTellsUnreadableFromAbsent(t *testing.T) {
	if _, err := parseDeviceControl(pcieConfig(0x2, 0, -1)[:64]); !errors.Is(err, errConfigTruncated) || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("64 bytes, as a reader without root gets: %v", err)
	}
	noList := pcieConfig(0x2, 0, -1)
	noList[0x06] = 0
	if _, err := parseDeviceControl(noList); !errors.Is(err, ErrAbsent) {
		t.Errorf("no capability list: %v", err)
	}
	// A loop in the standard list must end.
	loop := make([]byte, 256)
	binary.LittleEndian.PutUint16(loop[0x06:], 1<<4)
	loop[0x34], loop[0x40], loop[0x41] = 0x40, 0x01, 0x40
	if _, err := parseDeviceControl(loop); !errors.Is(err, ErrAbsent) {
		t.Errorf("looping list: %v", err)
	}
	// 256 bytes: the capability is read, the extended space is not there.
	d, err := parseDeviceControl(pcieConfig(0x1, 1<<5, 0x8000)[:256])
	if err != nil || d.Extended || d.ATS != nil || d.MaxPayload != 256 {
		t.Errorf("256-byte config: %+v, %v", d, err)
	}
}

func FuzzParseDeviceControl(f *testing.F) {
	f.Add(pcieConfig(0x2, 1<<5|5<<12, 0x8000))
	f.Add(make([]byte, 65))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseDeviceControl(b)
	})
}

func TestDMIHypervisorsAndTheirBareMetalNamesakes(t *testing.T) {
	for _, c := range []struct {
		vendor, product string
		vm              bool
	}{
		{"QEMU", "Standard PC (Q35 + ICH9, 2009)", true},
		{"Google", "Google Compute Engine", true},
		{"Microsoft Corporation", "Virtual Machine", true},
		{"Microsoft Corporation", "Surface Pro", false},
		{"Amazon EC2", "p5.48xlarge", true},
		{"Amazon EC2", "p5.metal", false},
		{"Supermicro", "SYS-821GE-TNHR", false},
		{"", "", false},
	} {
		if got := dmiHypervisor(c.vendor, c.product) != ""; got != c.vm {
			t.Errorf("%q %q: VM %v, want %v", c.vendor, c.product, got, c.vm)
		}
	}
}
