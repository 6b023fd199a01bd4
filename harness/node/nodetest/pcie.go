package nodetest

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// DevCtl is how a fixture's PCIe function is set: payload and read request
// sizes in bytes, relaxed ordering, and its ATS capability.
type DevCtl struct {
	MaxPayload, MaxPayloadSupported, MaxReadRequest int
	RelaxedOrdering                                 bool
	ATS                                             int // ATSNone, ATSOff or ATSOn
}

// ATS capability states.
const (
	ATSNone = iota // no ATS capability (ConnectX with ATS_ENABLED False, most GPUs)
	ATSOff         // capability present, Enable clear
	ATSOn          // capability present, Enable set
)

// The fixtures' settings, as firmware leaves them on a healthy node:
// Intel and AMD server root ports and PCIe switch ports support 256-byte
// payloads for the hierarchy, so every function below them runs at 256;
// ConnectX-7 supports 512 and gets its read requests raised to 4096
// (Mellanox DOC-2496); GPUs as the recorded H200 shows (4096 reads,
// relaxed ordering on).
var (
	BridgeDevCtl = DevCtl{MaxPayload: 256, MaxPayloadSupported: 256, MaxReadRequest: 512, RelaxedOrdering: true}
	GPUDevCtl    = DevCtl{MaxPayload: 256, MaxPayloadSupported: 256, MaxReadRequest: 4096, RelaxedOrdering: true}
	CX7DevCtl    = DevCtl{MaxPayload: 256, MaxPayloadSupported: 512, MaxReadRequest: 4096, RelaxedOrdering: true}
)

// PCIeConfig is a config space holding a PCI Express capability with d's
// Device Capabilities and Device Control at 0x60, and, from 0x100, an ACS
// capability with control acsCtl (none when negative) and an ATS
// capability as d.ATS says. It is cut after the last capability: a
// fixture needs no 4 KiB of zeros per function.
func PCIeConfig(d DevCtl, acsCtl int) []byte {
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint16(b[0x06:], 1<<4) // Status: capabilities list
	b[0x34] = 0x60
	b[0x60], b[0x61] = 0x10, 0x00                // PCI Express, last
	binary.LittleEndian.PutUint16(b[0x62:], 0x2) // version 2
	binary.LittleEndian.PutUint32(b[0x64:], uint32(code(d.MaxPayloadSupported))|1<<15|1<<28)
	ctl := code(d.MaxPayload)<<5 | code(d.MaxReadRequest)<<12 | 1<<8 // extended tags
	if d.RelaxedOrdering {
		ctl |= 1 << 4
	}
	binary.LittleEndian.PutUint16(b[0x68:], ctl)
	type ext struct {
		id, cap, ctl uint16
	}
	var caps []ext
	if acsCtl >= 0 {
		caps = append(caps, ext{0x000d, 0x5f, uint16(acsCtl)}) // ACSCap: SV TB RR CR UF DT
	}
	if d.ATS != ATSNone {
		c := ext{id: 0x000f, cap: 0x20} // invalidate queue depth 0, page aligned
		if d.ATS == ATSOn {
			c.ctl = 1 << 15
		}
		caps = append(caps, c)
	}
	end := 0x110
	for i, c := range caps {
		off := 0x100 + 0x10*i
		next := 0
		if i < len(caps)-1 {
			next = off + 0x10
		}
		binary.LittleEndian.PutUint32(b[off:], uint32(c.id)|1<<16|uint32(next)<<20)
		binary.LittleEndian.PutUint16(b[off+4:], c.cap)
		binary.LittleEndian.PutUint16(b[off+6:], c.ctl)
		end = off + 0x10
	}
	return b[:end]
}

// code is the 3-bit size code of DevCap and DevCtl: 128 << code bytes.
func code(bytes int) uint16 {
	var c uint16
	for 128<<c < bytes && c < 5 {
		c++
	}
	return c
}

// AERFile is an aer_dev_correctable, aer_dev_nonfatal or aer_dev_fatal
// file ("correctable", "nonfatal", "fatal") as Linux 6.x prints it, with
// the given counters set and the rest zero.
func AERFile(kind string, counts map[string]uint64) string {
	names := []string{"Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"}
	total := "TOTAL_ERR_" + strings.ToUpper(kind)
	if kind == "correctable" {
		names = []string{"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"}
		total = "TOTAL_ERR_COR"
	}
	var b strings.Builder
	var sum uint64
	for _, n := range names {
		fmt.Fprintf(&b, "%s %d\n", n, counts[n])
		sum += counts[n]
	}
	fmt.Fprintf(&b, "%s %d\n", total, sum)
	return b.String()
}

// aer writes a function's three AER statistics files, all zero.
func (t *Tree) aer(base string) {
	for _, k := range []string{"correctable", "nonfatal", "fatal"} {
		t.write(base+"/aer_dev_"+k, AERFile(k, nil))
	}
}

// CPUInfo writes proc/cpuinfo's first CPU block (what gdrcheck reads of
// it) for a CPU of that vendor_id, family, model and name; flags gets
// "hypervisor" when vm is set.
func (t *Tree) CPUInfo(vendor string, family, model int, name string, vm bool) {
	flags := "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx pdpe1gb rdtscp lm constant_tsc"
	if vm {
		flags += " hypervisor"
	}
	t.write("proc/cpuinfo", fmt.Sprintf("processor\t: 0\nvendor_id\t: %s\ncpu family\t: %d\nmodel\t\t: %d\nmodel name\t: %s\nflags\t\t: %s\n\n", vendor, family, model, name, flags))
}

// VMIdentity writes the DMI vendor and product a QEMU/KVM guest shows.
func (t *Tree) VMIdentity() {
	t.write("sys/class/dmi/id/sys_vendor", "QEMU\n")
	t.write("sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n")
}

// SetAER replaces the AER counters of one function of kind "fatal",
// "nonfatal" or "correctable".
func (t *Tree) SetAER(addr, kind string, counts map[string]uint64) {
	dir, ok := t.devs[addr]
	if !ok {
		t.errs = append(t.errs, fmt.Errorf("AER of %s: not added", addr))
		return
	}
	t.write("sys/devices/"+dir+"/aer_dev_"+kind, AERFile(kind, counts))
}

// SetConfig replaces the config space of one function.
func (t *Tree) SetConfig(addr string, cfg []byte) {
	dir, ok := t.devs[addr]
	if !ok {
		t.errs = append(t.errs, fmt.Errorf("config of %s: not added", addr))
		return
	}
	t.write("sys/devices/"+dir+"/config", string(withIDs(cfg, t.ids[addr])))
}

// withIDs puts a function's vendor and device IDs at the head of its
// config space, as the hardware does.
func withIDs(config []byte, ids [2]uint32) []byte {
	cfg := append([]byte(nil), config...)
	binary.LittleEndian.PutUint16(cfg[0:], uint16(ids[0]))
	binary.LittleEndian.PutUint16(cfg[2:], uint16(ids[1]))
	return cfg
}
