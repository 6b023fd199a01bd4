package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/Mellanox/rdmamap"
)

// NIC is one RDMA device (an HCA or a RoCE function) with its ports.
type NIC struct {
	Name         string      `json:"name"`                   // the sys/class/infiniband/<name> entry
	BusID        string      `json:"bus_id"`                 // sys/class/infiniband/<name>/device -> PCI address
	HCAType      string      `json:"hca_type,omitempty"`     // sys/class/infiniband/<name>/hca_type; optional
	BoardID      string      `json:"board_id,omitempty"`     // sys/class/infiniband/<name>/board_id; optional
	FirmwareVer  string      `json:"fw_ver,omitempty"`       // sys/class/infiniband/<name>/fw_ver; optional
	NUMANode     int         `json:"numa_node"`              // sys/bus/pci/devices/<bus id>/numa_node; -1 unknown
	CPUList      string      `json:"cpu_list,omitempty"`     // sys/bus/pci/devices/<bus id>/local_cpulist; optional
	Link         *PCIeLink   `json:"link,omitempty"`         // sys/bus/pci/devices/<bus id>/*_link_*; optional
	Ports        []NICPort   `json:"ports"`                  // sys/class/infiniband/<name>/ports/<n>
	NetDevs      []string    `json:"netdevs,omitempty"`      // rdmamap (or gdrcheck/rdma.json): netdevs on the same PCI function; optional
	UverbsDevice string      `json:"uverbs,omitempty"`       // rdmamap (or gdrcheck/rdma.json): /dev/infiniband/uverbsN; optional
	CharDevices  []string    `json:"char_devices,omitempty"` // rdmamap (or gdrcheck/rdma.json): every /dev/infiniband node of the device; optional
	IOMMU        DeviceIOMMU `json:"iommu"`                  // sys/bus/pci/devices/<bus id>/iommu_group
}

// NICPort is one port's link as sysfs shows it.
type NICPort struct {
	Port      uint    `json:"port"`       // the sys/class/infiniband/<name>/ports/<n> entry
	State     string  `json:"state"`      // ports/<n>/state, e.g. ACTIVE
	PhysState string  `json:"phys_state"` // ports/<n>/phys_state, e.g. LinkUp
	RateGbps  float64 `json:"rate_gbps"`  // ports/<n>/rate
	LinkLayer string  `json:"link_layer"` // ports/<n>/link_layer: InfiniBand or Ethernet
	// RoCE ports only (rdma_roce.go): the non-zero GID table, the entry
	// NCCL's default selection takes, the netdev and its MTU, and the
	// active MTU the kernel derives from it.
	GIDs         []GID  `json:"gids,omitempty"`           // ports/<n>/gids, gid_attrs; optional
	NCCLGIDIndex *int   `json:"nccl_gid_index,omitempty"` // chosen from GIDs; optional
	NetDev       string `json:"netdev,omitempty"`         // ports/<n>/gid_attrs/ndevs of that GID; optional
	NetMTU       int    `json:"net_mtu,omitempty"`        // sys/class/net/<netdev>/mtu; optional
	ActiveMTU    int    `json:"active_mtu,omitempty"`     // iboe_get_mtu(net_mtu); optional
	RoCEError    string `json:"roce_error,omitempty"`     // why the GID table or MTU could not be read; optional
}

// Active reports a port that can carry traffic.
func (p NICPort) Active() bool { return p.State == "ACTIVE" && p.PhysState == "LinkUp" }

// RDMAMapEntry is what rdmamap says about one RDMA device.
type RDMAMapEntry struct {
	CharDevices []string `json:"char_devices,omitempty"` // rdmamap.GetRdmaCharDevices (/dev/infiniband)
	NetDevs     []string `json:"netdevs,omitempty"`      // rdmamap.GetRdmaDevicesForPcidev, per sys/class/net netdev
}

// RDMAMapping maps RDMA device names to rdmamap's answers. It is stored in
// snapshots as gdrcheck/rdma.json.
type RDMAMapping map[string]RDMAMapEntry

// NICs reads the InfiniBand class through procfs and joins it with the PCI
// devices and rdmamap's answers. No class/infiniband directory means no
// RDMA stack: ErrAbsent.
func (h Host) NICs(pci map[string]PCIDevice, rm RDMAMapping) ([]NIC, error) {
	names, err := h.Sys.InfiniBandClassDevices()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reading %q: %w", h.sys("class", "infiniband"), ErrAbsent)
		}
		return nil, fmt.Errorf("reading %q: %w", h.sys("class", "infiniband"), err)
	}
	sort.Strings(names)
	var nics []NIC
	for _, name := range names {
		dev, err := h.Sys.InfiniBandDevice(name)
		if err != nil {
			return nil, fmt.Errorf("reading RDMA device %s under %q: %w", name, h.sys("class", "infiniband", name), err)
		}
		n := NIC{Name: name, HCAType: dev.HCAType, BoardID: dev.BoardID, FirmwareVer: dev.FirmwareVersion, NUMANode: -1}
		n.BusID, err = linkBase(h.sys("class", "infiniband", name, "device"))
		if err != nil {
			return nil, err
		}
		if pd, ok := pci[n.BusID]; ok {
			n.NUMANode, n.CPUList, n.Link = pd.NUMA, pd.CPUList, pd.Link
		}
		for _, num := range slices.Sorted(maps.Keys(dev.Ports)) {
			p := dev.Ports[num]
			n.Ports = append(n.Ports, NICPort{
				Port:      p.Port,
				State:     p.State,
				PhysState: p.PhysState,
				RateGbps:  float64(p.Rate) / 125e6,
				LinkLayer: p.LinkLayer,
			})
		}
		if e, ok := rm[name]; ok {
			n.NetDevs = e.NetDevs
			n.CharDevices = e.CharDevices
			for _, c := range e.CharDevices {
				if m, _ := filepath.Match("/dev/infiniband/uverbs*", c); m {
					n.UverbsDevice = c
				}
			}
		}
		for i := range n.Ports {
			// A GID table that cannot be read leaves the port's RoCE
			// facts empty, saying why; the rest of the NIC stands.
			if err := h.collectRoCE(&n, &n.Ports[i]); err != nil {
				n.Ports[i].RoCEError = err.Error()
			}
		}
		if n.IOMMU, err = h.DeviceIOMMU(n.BusID); err != nil {
			return nil, err
		}
		nics = append(nics, n)
	}
	return nics, nil
}

// netdevPCI maps each network interface to the PCI function behind it
// (class/net/<if>/device); virtual interfaces have none.
func (h Host) netdevPCI() (map[string]string, error) {
	ifs, err := h.Sys.NetClassDevices()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %q: %w", h.sys("class", "net"), err)
	}
	out := map[string]string{}
	for _, ifc := range ifs {
		addr, err := linkBase(h.sys("class", "net", ifc, "device"))
		if err != nil {
			continue
		}
		out[ifc] = addr
	}
	return out, nil
}

// readRDMAMap asks rdmamap, which reads the fixed paths /sys/class/infiniband*
// and /dev/infiniband, so it must run where those show the node in question.
func readRDMAMap(netdevPCI map[string]string) RDMAMapping {
	m := RDMAMapping{}
	for _, dev := range rdmamap.GetRdmaDeviceList() {
		m[dev] = RDMAMapEntry{CharDevices: rdmamap.GetRdmaCharDevices(dev)}
	}
	for _, ifc := range slices.Sorted(maps.Keys(netdevPCI)) {
		for _, dev := range rdmamap.GetRdmaDevicesForPcidev(netdevPCI[ifc]) {
			e := m[dev]
			e.NetDevs = append(e.NetDevs, ifc)
			m[dev] = e
		}
	}
	return m
}

// rdmaRecording is where snapshots keep rdmamap's answers.
const rdmaRecording = "gdrcheck/rdma.json"

// RDMAMap returns rdmamap's view of the host. On the live host rdmamap runs
// directly. For a recorded tree it runs inside a private mount namespace
// with the tree mounted over /sys and /dev (needs CAP_SYS_ADMIN); without
// that privilege the answers recorded by the snapshot are used.
func (h Host) RDMAMap() (RDMAMapping, error) {
	nd, err := h.netdevPCI()
	if err != nil {
		return nil, err
	}
	if h.Live() {
		return readRDMAMap(nd), nil
	}
	var m RDMAMapping
	nsErr := inHostNamespace(h.root, func() { m = readRDMAMap(nd) })
	if nsErr == nil {
		return m, nil
	}
	b, err := readRecording(h.path(rdmaRecording))
	if err != nil {
		return nil, fmt.Errorf("rdmamap over %q: %v; no recording either: %w", h.root, nsErr, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("reading %q: %w", h.path(rdmaRecording), err)
	}
	return m, nil
}

// linkBase resolves a sysfs "device" link, which may pass through other
// links, to the name of the directory it ends in (a PCI address).
func linkBase(link string) (string, error) {
	p, err := filepath.EvalSymlinks(link)
	if err != nil {
		return "", fmt.Errorf("resolving link %q: %w", link, err)
	}
	return filepath.Base(p), nil
}
