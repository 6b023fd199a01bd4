package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// GID is one non-zero entry of a RoCE port's GID table: the address a
// queue pair is addressed by, its RoCE version and the netdev it belongs
// to. NCCL_IB_GID_INDEX names one of these; a wrong one, or one that
// points at a RoCE v1 or link-local entry on some nodes only, fails every
// connection (NVIDIA/nccl#426: completion error 12 fixed by
// NCCL_IB_GID_INDEX=3).
type GID struct {
	Index  int    `json:"index"`            // ports/<n>/gids/<index>
	GID    string `json:"gid"`              // ports/<n>/gids/<index>
	Type   string `json:"type,omitempty"`   // ports/<n>/gid_attrs/types/<index>: "IB/RoCE v1", "RoCE v2"
	NetDev string `json:"netdev,omitempty"` // ports/<n>/gid_attrs/ndevs/<index>
}

// RoCEv2IPv4 says the entry is what NCCL picks by default since 2.21
// (NCCL_IB_ROCE_VERSION_NUM=2, NCCL_IB_ADDR_FAMILY=AF_INET): a RoCE v2
// GID holding an IPv4-mapped address.
func (g GID) RoCEv2IPv4() bool {
	ip := net.ParseIP(g.GID)
	return g.Type == "RoCE v2" && ip != nil && ip.To4() != nil
}

// maxGIDs caps the entries read per port: mlx5 has 255, and a recording
// claiming more is not a real port.
const maxGIDs = 1024

// gidLimit caps one gids/, types/ or ndevs/ file: a GID is 39 bytes, a
// type or a netdev name under 32.
var gidLimit = bounded.Limit{Bytes: 256, What: "a GID table entry", Why: "a GID is 39 characters, a type or netdev name under 32"}

// readGIDs reads a port's GID table (ports/<n>/gids) and keeps the
// non-zero entries with their type and netdev. The kernel answers EINVAL
// for the attributes of an unused entry, so a missing attribute is left
// empty; no gids directory is no table (an old kernel or a recording
// made before gdrcheck kept it).
func (h Host) readGIDs(ibdev string, port uint) ([]GID, error) {
	dir := h.sys("class", "infiniband", ibdev, "ports", strconv.FormatUint(uint64(port), 10))
	ents, err := os.ReadDir(filepath.Join(dir, "gids"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the GID table %q: %w", filepath.Join(dir, "gids"), err)
	}
	if len(ents) > maxGIDs {
		return nil, fmt.Errorf("reading the GID table %q: %d entries, more than the %d a port has", filepath.Join(dir, "gids"), len(ents), maxGIDs)
	}
	var out []GID
	for _, e := range ents {
		i, err := strconv.Atoi(e.Name())
		if err != nil || i < 0 {
			continue // not an entry
		}
		g, err := readSmall(filepath.Join(dir, "gids", e.Name()))
		if err != nil || zeroGID(g) {
			continue
		}
		t, _ := readSmall(filepath.Join(dir, "gid_attrs", "types", e.Name()))
		nd, _ := readSmall(filepath.Join(dir, "gid_attrs", "ndevs", e.Name()))
		out = append(out, GID{Index: i, GID: g, Type: t, NetDev: nd})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, nil
}

// readSmall reads one short sysfs attribute, trimmed.
func readSmall(p string) (string, error) {
	b, err := bounded.ReadFile(p, gidLimit)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// zeroGID is an unused entry: the kernel prints it as all zeros.
func zeroGID(g string) bool {
	ip := net.ParseIP(g)
	return ip == nil || ip.IsUnspecified()
}

// ncclGIDIndex is the entry NCCL's default selection takes: the first
// RoCE v2 IPv4-mapped GID; nil where there is none (NCCL then falls back
// to index 0, a link-local v1 GID that routes nowhere).
func ncclGIDIndex(gids []GID) *int {
	for _, g := range gids {
		if g.RoCEv2IPv4() {
			i := g.Index
			return &i
		}
	}
	return nil
}

// roceMTU is the RoCE active MTU the kernel derives from a netdev MTU
// (iboe_get_mtu in include/rdma/ib_addr.h): the largest IB MTU that fits
// after the GRH, UDP, BTH, XRC, AtomicETH and ICRC headers (96 bytes). A
// netdev at 1500 gives 1024, which NCCL 2.20.3 and later no longer
// renegotiate with a peer at 4096 (NVIDIA/nccl#1524).
func roceMTU(netMTU int) int {
	left := netMTU - 96
	for _, m := range []int{4096, 2048, 1024, 512, 256} {
		if left >= m {
			return m
		}
	}
	return 0
}

// collectRoCE fills an Ethernet port's GID table, the GID NCCL would use,
// its netdev and the MTUs; IB ports are left as they are (their MTU is the
// subnet manager's).
func (h Host) collectRoCE(n *NIC, p *NICPort) error {
	if p.LinkLayer != "Ethernet" {
		return nil
	}
	gids, err := h.readGIDs(n.Name, p.Port)
	if err != nil {
		return err
	}
	p.GIDs, p.NCCLGIDIndex = gids, ncclGIDIndex(gids)
	for _, g := range gids {
		if g.NetDev != "" && (p.NetDev == "" || p.NCCLGIDIndex != nil && g.Index == *p.NCCLGIDIndex) {
			p.NetDev = g.NetDev
		}
	}
	if p.NetDev == "" && len(n.NetDevs) == 1 {
		p.NetDev = n.NetDevs[0]
	}
	if p.NetDev == "" || strings.ContainsAny(p.NetDev, "/\x00") || p.NetDev == "." || p.NetDev == ".." {
		return nil
	}
	mtu, err := readSmall(h.sys("class", "net", p.NetDev, "mtu"))
	if err != nil {
		return nil // a netdev in another namespace: no MTU to read here
	}
	if p.NetMTU, err = strconv.Atoi(mtu); err != nil || p.NetMTU <= 0 {
		return fmt.Errorf("reading %q: %q is no MTU", h.sys("class", "net", p.NetDev, "mtu"), bounded.ClipString(mtu, 32))
	}
	p.ActiveMTU = roceMTU(p.NetMTU)
	return nil
}
