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
func (g GID) RoCEv2IPv4() bool { return g.RoCEVersion() == 2 && gidIsV4(&g) }

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

// ncclGIDIndex is the entry NCCL's own selection takes (NCCLGID without
// settings); nil where the table is empty or was not recorded.
func ncclGIDIndex(gids []GID) *int {
	c, ok := NCCLGID(gids, nil)
	if !ok {
		return nil
	}
	return &c.Index
}

// GIDChoice is the GID index NCCL addresses a RoCE port's queue pairs by,
// and the entry there.
type GIDChoice struct {
	Index int
	// Entry is the table's entry at Index; nil where it is unused (all
	// zeros: no address at all).
	Entry *GID
	// Set is the NCCL_IB_GID_INDEX setting that chose Index; nil for
	// NCCL's own choice.
	Set *Setting
	// Err says why NCCL_IB_GID_INDEX was not taken as an index.
	Err string
}

// NCCLGID is the GID NCCL 2.21 and later uses on a RoCE port with this
// table, as src/transport/net_ib.cc's ncclIbGetGidIndex picks it:
// NCCL_IB_GID_INDEX where set to an index, else starting from entry 0 it
// moves to a later entry of the address family NCCL_IB_ADDR_FAMILY asks
// for (AF_INET by default, an IPv4-mapped GID) when the current one is of
// the other family, or, within that family and not link-local, to one of
// the RoCE version NCCL_IB_ROCE_VERSION_NUM asks for (2 by default) when
// the current one is not. NCCL_IB_ADDR_RANGE is not applied. o may be nil;
// false where there is no table to choose from.
func NCCLGID(gids []GID, o *Overrides) (GIDChoice, bool) {
	var c GIDChoice
	eff := func(name string) (Setting, bool) {
		if o == nil {
			return Setting{}, false
		}
		return o.Effective(name)
	}
	at := func(i int) *GID {
		for k := range gids {
			if gids[k].Index == i {
				return &gids[k]
			}
		}
		return nil
	}
	if s, ok := eff("NCCL_IB_GID_INDEX"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(s.Value))
		switch {
		case err != nil:
			c.Err = fmt.Sprintf("NCCL_IB_GID_INDEX=%q (%s) is not an index", bounded.ClipString(s.Value, 32), s.Where())
		case n >= 0:
			if len(gids) == 0 {
				return c, false
			}
			c.Index, c.Entry, c.Set = n, at(n), &s
			return c, true
		}
	}
	if len(gids) == 0 {
		return c, false
	}
	wantV4 := true
	if s, ok := eff("NCCL_IB_ADDR_FAMILY"); ok && strings.TrimSpace(s.Value) == "AF_INET6" {
		wantV4 = false
	}
	wantVer := 2
	if s, ok := eff("NCCL_IB_ROCE_VERSION_NUM"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(s.Value)); err == nil {
			wantVer = n
		}
	}
	for _, cand := range gids {
		if cand.Index <= c.Index {
			continue
		}
		cur := at(c.Index)
		cf, gf := gidIsV4(&cand), gidIsV4(cur)
		if cf != gf && cf == wantV4 {
			c.Index = cand.Index
			continue
		}
		if cf != wantV4 || !usableGID(&cand) {
			continue
		}
		if (roceVersion(cur) != roceVersion(&cand) || !usableGID(cur)) && roceVersion(&cand) == wantVer {
			c.Index = cand.Index
		}
	}
	c.Entry = at(c.Index)
	return c, true
}

// gidIsV4 is NCCL's getGidAddrFamily: an IPv4-mapped GID is AF_INET, any
// other (an unused all-zero entry too) AF_INET6.
func gidIsV4(g *GID) bool {
	if g == nil {
		return false
	}
	ip := net.ParseIP(g.GID)
	return ip != nil && ip.To4() != nil
}

// usableGID is NCCL's validGid: configured (not all zeros) and not
// link-local (fe80::/64).
func usableGID(g *GID) bool { return g != nil && !zeroGID(g.GID) && !g.LinkLocal() }

// LinkLocal says the GID is an IPv6 link-local address (fe80::/64), which
// routes nowhere past the port's own subnet.
func (g GID) LinkLocal() bool {
	ip := net.ParseIP(g.GID)
	return ip != nil && ip.To4() == nil && ip[0] == 0xfe && ip[1] == 0x80 && ip[2]|ip[3]|ip[4]|ip[5]|ip[6]|ip[7] == 0
}

// RoCEVersion is the entry's RoCE version by its type: 1, 2, or -1 where
// the type is unknown (unreadable, as NCCL leaves it).
func (g GID) RoCEVersion() int { return roceVersion(&g) }

func roceVersion(g *GID) int {
	switch {
	case g == nil:
		return -1
	case strings.HasPrefix(g.Type, "IB/RoCE v1"), strings.HasPrefix(g.Type, "RoCE v1"):
		return 1
	case strings.HasPrefix(g.Type, "RoCE v2"):
		return 2
	}
	return -1
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
