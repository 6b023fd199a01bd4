package node

import (
	"errors"
	"maps"
	"slices"
)

// PCIeFacts are the PCIe state the path classes leave out: how each GPU,
// RDMA NIC and bridge above them is set to move data, what errors it has
// seen, the bridges between GPUs, and the platform that decides which
// settings matter.
type PCIeFacts struct {
	Devices []PCIeDevice `json:"devices,omitempty"` // the GPUs, NICs and bridges above them, from sys/bus/pci/devices
	// PeerPaths are the bridges between every two GPUs: where ACS
	// redirect sends their PCIe peer traffic up to the root complex.
	PeerPaths []PeerPath `json:"peer_paths,omitempty"` // the sys/bus/pci/devices links' chains
	Platform  Platform   `json:"platform"`             // DMI, cpuinfo, sys/hypervisor (kernel_platform.go)
}

// PCIeDevice is one GPU, RDMA NIC or bridge above one of them.
type PCIeDevice struct {
	Address string `json:"address"`        // the sys/bus/pci/devices/<address> entry
	Role    string `json:"role"`           // RoleGPU, RoleNIC or RoleBridge
	Name    string `json:"name,omitempty"` // a NIC's RDMA device name (sys/class/infiniband); optional
	Vendor  uint32 `json:"vendor"`         // sys/bus/pci/devices/<address>/vendor
	// Control is nil where config space could not be read (ControlError
	// says why) or the function has no PCI Express capability (no
	// ControlError).
	Control      *DeviceControl `json:"control,omitempty"`       // sys/bus/pci/devices/<address>/config; optional
	ControlError string         `json:"control_error,omitempty"` // why config could not be read; optional
	// ControlNeedsRoot: config space stopped at the 64 bytes the kernel
	// shows a reader without root.
	ControlNeedsRoot bool `json:"control_needs_root,omitempty"` // config was 64 bytes long
	// PathMaxPayload is the largest payload every function below the
	// same root port supports (their DevCap), the most the payload size
	// can be set to there; 0 where one of them could not be read, or the
	// device hangs off no root port (a VM's root bus).
	PathMaxPayload int `json:"path_max_payload,omitempty"` // DevCap of config below the root port; optional
	// AER is nil where the kernel keeps no statistics (AERError empty)
	// or they could not be read (AERError says why).
	AER      *AERCounts `json:"aer,omitempty"`       // sys/bus/pci/devices/<address>/aer_dev_*; optional
	AERError string     `json:"aer_error,omitempty"` // why they could not be read; optional
}

// Roles of a PCIeDevice.
const (
	RoleGPU    = "gpu"
	RoleNIC    = "nic"
	RoleBridge = "bridge"
)

// PeerPath is the PCIe path between two GPUs, by bus id.
type PeerPath struct {
	A       string   `json:"a"`                 // bus id of one GPU
	B       string   `json:"b"`                 // bus id of the other
	Bridges []string `json:"bridges,omitempty"` // below their common bridge, from both sys/bus/pci/devices links
}

// Device returns the device at an address.
func (f PCIeFacts) Device(addr string) (PCIeDevice, bool) {
	for _, d := range f.Devices {
		if d.Address == addr {
			return d, true
		}
	}
	return PCIeDevice{}, false
}

// collectPCIe reads device control and AER of every GPU and NIC and the
// bridges above them, the GPU peer paths and the platform.
func (e *Evidence) collectPCIe(h Host, pci map[string]PCIDevice) {
	e.PCIe.Platform = h.platform(pci)
	for i, a := range e.GPUs {
		for _, b := range e.GPUs[i+1:] {
			da, aok := pci[a.BusID]
			db, bok := pci[b.BusID]
			if aok && bok {
				e.PCIe.PeerPaths = append(e.PCIe.PeerPaths, PeerPath{A: a.BusID, B: b.BusID, Bridges: PathBridges(da, db)})
			}
		}
	}
	roles := map[string]PCIeDevice{}
	add := func(addr, role, name string) {
		d, ok := pci[addr]
		if !ok {
			return
		}
		if _, seen := roles[addr]; !seen {
			roles[addr] = PCIeDevice{Address: addr, Role: role, Name: name, Vendor: d.Vendor}
		}
		for _, b := range d.Bridges() {
			if _, seen := roles[b]; !seen {
				if bd, ok := pci[b]; ok {
					roles[b] = PCIeDevice{Address: b, Role: RoleBridge, Vendor: bd.Vendor}
				}
			}
		}
	}
	for _, g := range e.GPUs {
		add(g.BusID, RoleGPU, "")
	}
	for _, n := range e.NICs {
		add(n.BusID, RoleNIC, n.Name)
	}
	ports := map[string]bool{}
	for addr := range roles {
		if rp := rootPort(pci[addr]); rp != "" {
			ports[rp] = true
		}
	}
	ctl := controlReader(h)
	caps := rootPortPayloads(pci, ports, ctl)
	for _, addr := range slices.Sorted(maps.Keys(roles)) {
		d := roles[addr]
		c, err := ctl(addr)
		switch {
		case err == nil:
			d.Control = &c
		case errors.Is(err, ErrAbsent):
		default:
			d.ControlError = err.Error()
			d.ControlNeedsRoot = errors.Is(err, errConfigTruncated)
		}
		if rp := rootPort(pci[addr]); rp != "" {
			d.PathMaxPayload = caps[rp]
		}
		a, err := h.AER(addr)
		switch {
		case err == nil:
			d.AER = a
		case !errors.Is(err, ErrAbsent):
			d.AERError = err.Error()
		}
		e.PCIe.Devices = append(e.PCIe.Devices, d)
	}
}

// rootPort is the root port a device hangs below, the device itself if it
// is one; "" on a root bus with no bridge (a VM).
func rootPort(d PCIDevice) string {
	if b := d.Bridges(); len(b) > 0 {
		return b[0]
	}
	if d.Class>>8 == pciClassBridge && len(d.Chain) == 1 {
		return d.Address
	}
	return ""
}

// controlReader reads each function's device control once.
func controlReader(h Host) func(string) (DeviceControl, error) {
	type answer struct {
		c   DeviceControl
		err error
	}
	read := map[string]answer{}
	return func(addr string) (DeviceControl, error) {
		a, ok := read[addr]
		if !ok {
			a.c, a.err = h.DeviceControlOf(addr)
			read[addr] = a
		}
		return a.c, a.err
	}
}

// rootPortPayloads gives each of the root ports the smallest payload size
// any function below it (and itself) supports: firmware and the kernel
// set one size for a hierarchy no larger than that, so only a size below
// it is a setting to fix. A port with a function whose config could not
// be read is left out (unknown); functions without a PCI Express
// capability take no part.
func rootPortPayloads(pci map[string]PCIDevice, ports map[string]bool, ctl func(string) (DeviceControl, error)) map[string]int {
	out := map[string]int{}
	unknown := map[string]bool{}
	for _, addr := range slices.Sorted(maps.Keys(pci)) {
		rp := rootPort(pci[addr])
		if !ports[rp] || unknown[rp] {
			continue
		}
		c, err := ctl(addr)
		switch {
		case errors.Is(err, ErrAbsent):
			continue
		case err != nil || c.MaxPayloadSupported == 0:
			unknown[rp] = true
			delete(out, rp)
			continue
		}
		if cur, ok := out[rp]; !ok || c.MaxPayloadSupported < cur {
			out[rp] = c.MaxPayloadSupported
		}
	}
	return out
}
