package nodetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// gidSlots is how many entries a built port's GID table has; mlx5 has
// 255, all but the used ones zeros.
const gidSlots = 16

// SetRoCEGIDs writes a RoCE port's GID table the way mlx5 fills it for a
// netdev with one IPv6 link-local and one IPv4 address: a v1 and a v2
// entry for each, the IPv4 pair starting at v2Index-1 (the usual layout
// puts RoCE v2 IPv4 at 3). Every other slot is zeros with no attributes.
func SetRoCEGIDs(dir, ibdev, netdev string, v2Index int) error {
	if v2Index < 3 || v2Index >= gidSlots {
		return fmt.Errorf("RoCE v2 IPv4 GID index %d: the table built has it from 3 to %d", v2Index, gidSlots-1)
	}
	port := filepath.Join(dir, "sys/class/infiniband", ibdev, "ports/1")
	used := map[int][2]string{
		0:           {"fe80:0000:0000:0000:0ac0:ebff:fe3b:4f52", "IB/RoCE v1"},
		1:           {"fe80:0000:0000:0000:0ac0:ebff:fe3b:4f52", "RoCE v2"},
		v2Index - 1: {"0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1"},
		v2Index:     {"0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2"},
	}
	for i := range gidSlots {
		n := strconv.Itoa(i)
		g, ok := used[i]
		gid := "0000:0000:0000:0000:0000:0000:0000:0000"
		if ok {
			gid = g[0]
		}
		if err := writeFile(filepath.Join(port, "gids", n), gid+"\n"); err != nil {
			return err
		}
		for _, f := range []string{"types", "ndevs"} {
			p := filepath.Join(port, "gid_attrs", f, n)
			if !ok {
				os.Remove(p)
				continue
			}
			v := g[1]
			if f == "ndevs" {
				v = netdev
			}
			if err := writeFile(p, v+"\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetNetMTU sets a netdev's MTU (class/net/<netdev>/mtu).
func SetNetMTU(dir, netdev string, mtu int) error {
	return writeFile(filepath.Join(dir, "sys/class/net", netdev, "mtu"), strconv.Itoa(mtu)+"\n")
}

func writeFile(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}
