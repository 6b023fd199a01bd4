package nccl

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Which NIC each GPU's network connections went through, read from the
// connection lines. NCCL's transport/net.cc prints a send line from the
// sending rank and a receive line from the receiving rank, each naming
// the NET device of that rank's own process: "via NET/IB/3" is index 3
// of the "NET/IB : Using [0]mlx5_0:1/IB ..." list that process printed.
// A send relayed through another GPU of the node (PXN) names that GPU's
// rank after the index, "NET/IB/3(5)": the NIC is rank 5's. The rank is
// tied to its GPU by its comm line ("rank 5 nranks 16 cudaDev 5 nvmlDev 5
// busId 99000"), on the same host.

// Caps on what the NIC bookkeeping keeps.
const (
	maxNICUses  = 1024 // LogSummary.NICs: (process, rank, NET device) triples
	maxNICPids  = 1024 // processes whose device lists are remembered
	maxNICNames = 4096 // (process, net, index) -> device name
)

// NICUse is the NET device one rank's connections went through: the
// connections it set up itself (its sends and its receives) and the
// sends it relayed for other GPUs of its node (PXN).
type NICUse struct {
	Host string `json:"host,omitempty"`
	Rank int    `json:"rank"`
	// GPU is the rank's PCI bus id in sysfs form ("0000:18:00.0"), from
	// its comm line on the same host; "" where no comm line with a busId
	// names the rank, or two name it with different GPUs.
	GPU string `json:"gpu,omitempty"`
	Net string `json:"net"` // IB, IBext_v8, ...
	Dev int    `json:"dev"` // the index after NET/<net>/
	// NIC is the device's name ("mlx5_3") from the list the rank's
	// process printed, else from the one list every process agrees on;
	// "" where none names the index.
	NIC         string `json:"nic,omitempty"`
	PXN         bool   `json:"pxn,omitempty"` // some were sends relayed for another GPU
	Connections int    `json:"connections"`
	Channels    []int  `json:"channels"`
}

// SysfsBusID turns NCCL's integer form of a PCI bus id, printed in hex
// ("18000", "901000": domain, bus, device and function digits run
// together, as NCCL's busIdToInt64 reads "0009:01:00.0"), into the form
// of /sys/bus/pci/devices ("0009:01:00.0"); false if it is not hex.
func SysfsBusID(id string) (string, bool) {
	v, err := strconv.ParseUint(id, 16, 64)
	if err != nil || v>>52 != 0 {
		return "", false
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", v>>20, v>>12&0xff, v>>4&0xff, v&0xf), true
}

// nicUses collects the NIC bookkeeping while ParseLog reads; every map
// in it is capped.
type nicUses struct {
	pids    map[string]int // "host:pid" -> index in pidHost
	pidHost []string
	nets    map[string]int // net name -> index in netName
	netName []string
	names   map[nicDevKey]string
	listed  map[[2]int]bool   // (pid, net) whose list was read
	uses    map[nicUseKey]int // -> index in list
	list    []rawNICUse
	omitted int // connection lines past maxNICUses triples
}

type nicDevKey struct{ pid, net, dev int }

type nicUseKey struct{ pid, net, rank, dev int }

type rawNICUse struct {
	key   nicUseKey
	pxn   bool
	conns int
	chans [(maxChannel + 1) / 64]uint64
}

func newNICUses() *nicUses {
	return &nicUses{pids: map[string]int{}, nets: map[string]int{}, names: map[nicDevKey]string{}, listed: map[[2]int]bool{}, uses: map[nicUseKey]int{}}
}

// pid is the index of the process of a log prefix; -1 past maxNICPids.
func (u *nicUses) pid(prefix []byte) int {
	k := pidKey(prefix)
	if i, ok := u.pids[string(k)]; ok {
		return i
	}
	if len(u.pidHost) >= maxNICPids {
		return -1
	}
	i := len(u.pidHost)
	u.pids[keepField(k)] = i
	u.pidHost = append(u.pidHost, keepField(hostOf(prefix)))
	return i
}

// net is the index of a net name; -1 past maxClasses names.
func (u *nicUses) net(name []byte) int {
	if i, ok := u.nets[string(name)]; ok {
		return i
	}
	if len(u.netName) >= maxClasses {
		return -1
	}
	i := len(u.netName)
	u.nets[keepField(name)] = i
	u.netName = append(u.netName, keepField(name))
	return i
}

// using records the device list of a "NET/<net> : Using [0]mlx5_0:1/IB
// ..." line for the process that printed it, once per process and net.
func (u *nicUses) using(prefix, msg []byte) {
	rest := msg[len(pfxNET):]
	i := bytes.Index(rest, txtUsing)
	if i < 0 {
		return
	}
	net := bytes.TrimSpace(rest[:i])
	if string(net) == "Socket" {
		return
	}
	pid, n := u.pid(prefix), u.net(net)
	if pid < 0 || n < 0 || u.listed[[2]int{pid, n}] {
		return
	}
	u.listed[[2]int{pid, n}] = true
	for _, d := range netDevRe.FindAllSubmatch(rest[i+len(txtUsing):], maxKept) {
		k := nicDevKey{pid, n, atoi(string(d[1]))}
		if _, ok := u.names[k]; ok || len(u.names) >= maxNICNames {
			continue
		}
		u.names[k] = parseNetDevice(string(net), k.dev, keepField(d[2])).Name
	}
}

// connection counts one NET connection line under the rank whose NIC it
// names.
func (u *nicUses) connection(prefix []byte, c Connection, via []byte) {
	net, dev, proxy, ok := netDev(via)
	if !ok || string(net) == "Socket" {
		return
	}
	rank, pxn := -1, false
	switch c.Dir {
	case "send":
		rank = c.From
		if proxy >= 0 && proxy != c.From {
			rank, pxn = proxy, true
		}
	case "receive":
		rank = c.To
	default:
		return
	}
	pid, n := u.pid(prefix), u.net(net)
	if pid < 0 || n < 0 {
		u.omitted++
		return
	}
	k := nicUseKey{pid, n, rank, dev}
	i, ok := u.uses[k]
	if !ok {
		if len(u.list) >= maxNICUses {
			u.omitted++
			return
		}
		i = len(u.list)
		u.uses[k] = i
		u.list = append(u.list, rawNICUse{key: k})
	}
	r := &u.list[i]
	r.conns++
	r.pxn = r.pxn || pxn
	if c.Channel >= 0 && c.Channel <= maxChannel {
		r.chans[c.Channel/64] |= 1 << (c.Channel % 64)
	}
}

// netDev reads "NET/<net>/<dev>" and a PXN rank right after it,
// "NET/IB/3(5)/GDRDMA"; proxy is -1 without one. The net name runs to
// the first "/<digits>" that ends the via text or is followed by "/",
// "(" or a space.
func netDev(via []byte) (net []byte, dev, proxy int, ok bool) {
	rest, found := bytes.CutPrefix(via, []byte("NET/"))
	if !found {
		return nil, 0, 0, false
	}
	for j := 0; j < len(rest); j++ {
		if rest[j] != '/' || j == 0 {
			continue
		}
		sc := scanner{b: rest, i: j + 1}
		if dev = sc.num(); dev < 0 {
			continue
		}
		if sc.i < len(rest) && !strings.ContainsRune("/( ", rune(rest[sc.i])) {
			continue
		}
		proxy = -1
		if sc.lit("(") {
			if p := sc.num(); p >= 0 && sc.lit(")") {
				proxy = p
			}
		}
		return rest[:j], dev, proxy, true
	}
	return nil, 0, 0, false
}

// finish resolves each rank's GPU and each device's name, once the whole
// log is read, and fills s.NICs.
func (u *nicUses) finish(s *LogSummary) {
	s.NICUsesOmitted = u.omitted
	if len(u.list) == 0 {
		return
	}
	// Every process's name for (net, index), for a process whose own
	// list is not in the log: used where they all agree.
	global := map[[2]int]string{}
	for k, name := range u.names {
		g := [2]int{k.net, k.dev}
		if had, ok := global[g]; ok && had != name {
			name = ""
		}
		global[g] = name
	}
	gpus := rankGPUs(s.Comms)
	for _, r := range u.list {
		k := r.key
		nu := NICUse{Host: u.pidHost[k.pid], Rank: k.rank, Net: u.netName[k.net], Dev: k.dev, PXN: r.pxn, Connections: r.conns, Channels: []int{}}
		if name, ok := u.names[nicDevKey{k.pid, k.net, k.dev}]; ok {
			nu.NIC = name
		} else {
			nu.NIC = global[[2]int{k.net, k.dev}]
		}
		nu.GPU = gpus[hostRank{nu.Host, k.rank}]
		for i, w := range r.chans {
			for b := 0; w != 0; b, w = b+1, w>>1 {
				if w&1 != 0 {
					nu.Channels = append(nu.Channels, i*64+b)
				}
			}
		}
		s.NICs = append(s.NICs, nu)
	}
	slices.SortStableFunc(s.NICs, func(a, b NICUse) int {
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return strings.Compare(a.NIC, b.NIC)
	})
}

type hostRank struct {
	host string
	rank int
}

// rankGPUs maps each (host, rank) to the GPU its comm lines name; a rank
// two communicators of one host give different GPUs maps to "".
func rankGPUs(comms []Comm) map[hostRank]string {
	out := map[hostRank]string{}
	for _, c := range comms {
		if c.BusID == "" {
			continue
		}
		bus, ok := SysfsBusID(c.BusID)
		if !ok {
			continue
		}
		k := hostRank{c.Host, c.Rank}
		if had, seen := out[k]; seen && had != bus {
			bus = ""
		}
		out[k] = bus
	}
	return out
}
