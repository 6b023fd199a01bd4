package nodetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// RoCEHWCounters are the hw_counters mlx5 exposes on a RoCE port (kernel
// 6.x, ConnectX-6/7): congestion control, retransmission and completion
// errors.
var RoCEHWCounters = []string{
	"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err",
	"np_cnp_sent", "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence",
	"packet_seq_err", "req_cqe_error", "req_cqe_flush_error", "req_remote_access_errors",
	"req_remote_invalid_request", "resp_cqe_error", "resp_cqe_flush_error",
	"resp_local_length_error", "resp_remote_access_errors", "rnr_nak_retry_err",
	"roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
	"roce_slow_restart_trans", "rp_cnp_handled", "rp_cnp_ignored", "rx_atomic_requests",
	"rx_read_requests", "rx_write_requests",
}

// RoCE is a ConnectX-7 port in Ethernet mode (RoCE v2) at 400 Gb/s.
func RoCE(ibdev, netdev string) NIC {
	n := CX7(ibdev, netdev)
	n.LinkLayer = "Ethernet"
	return n
}

// AddRoCENIC adds a NIC as AddNIC does, plus the hw_counters directory
// mlx5 gives a RoCE port, every counter at zero, a GID table with the
// RoCE v2 IPv4 GID at index 3 and a netdev MTU of 9000.
func (t *Tree) AddRoCENIC(parent, addr string, n NIC) {
	t.AddNIC(parent, addr, n)
	dir, ok := t.devs[addr]
	if !ok {
		return
	}
	if n.NetDev != "" {
		for _, err := range []error{SetRoCEGIDs(t.Dir, n.IBDev, n.NetDev, 3), SetNetMTU(t.Dir, n.NetDev, 9000)} {
			if err != nil {
				t.errs = append(t.errs, err)
			}
		}
	}
	hw := "sys/devices/" + dir + "/infiniband/" + n.IBDev + "/ports/1/hw_counters/"
	for _, c := range RoCEHWCounters {
		t.write(hw+c, "0\n")
	}
}

// NICNode builds a node with nothing but the given NICs, each on a root
// port of one root complex: enough for fabric evidence (port states,
// counters). A NIC whose LinkLayer is Ethernet gets RoCE hw_counters.
func NICNode(dir string, nics ...NIC) (*Tree, error) {
	t := New(dir)
	t.Hostname = "fabric-node"
	t.HostBridge("pci0000:00", 0, "0-31")
	for i, n := range nics {
		rp := fmt.Sprintf("0000:00:%02x.0", i+1)
		ep := fmt.Sprintf("0000:%02x:00.0", i+1)
		t.Bridge("pci0000:00", rp, 0)
		if n.LinkLayer == "Ethernet" {
			t.AddRoCENIC(rp, ep, n)
		} else {
			t.AddNIC(rp, ep, n)
		}
	}
	t.NVML = &node.NVMLRecording{InitError: "ERROR_DRIVER_NOT_LOADED"}
	return t, t.Finish()
}

// IBAndRoCE builds a node with one InfiniBand NDR port (mlx5_0) and one
// RoCE 400G port with hw_counters (mlx5_1), both healthy, every counter
// at zero.
func IBAndRoCE(dir string) (*Tree, error) {
	return NICNode(dir, CX7("mlx5_0", "ibp1s0"), RoCE("mlx5_1", "ens2np0"))
}

// counterPath is the file of a counter in a built tree: hw_counters/ for
// the driver's counters, counters/ for the IB ones. A counter already in
// one of them stays where it is.
func counterPath(dir, ibdev string, port uint, name string) string {
	base := filepath.Join(dir, "sys/class/infiniband", ibdev, "ports", strconv.FormatUint(uint64(port), 10))
	for _, sub := range []string{"counters", "hw_counters"} {
		p := filepath.Join(base, sub, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if node.HWCounter(name) {
		return filepath.Join(base, "hw_counters", name)
	}
	return filepath.Join(base, "counters", name)
}

// SetCounter writes a counter of a built tree, creating it if absent, the
// way the driver would show it after traffic or errors. The value is the
// file's: port_xmit_data and port_rcv_data count 4-byte words.
func SetCounter(dir, ibdev string, port uint, name string, v uint64) error {
	p := counterPath(dir, ibdev, port, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(strconv.FormatUint(v, 10)+"\n"), 0o644)
}

// RemoveCounter deletes a counter file from a built tree: a driver that
// does not expose it.
func RemoveCounter(dir, ibdev string, port uint, name string) error {
	return os.Remove(counterPath(dir, ibdev, port, name))
}

// SetPortState rewrites a port's state and physical state files ("1:
// DOWN", "3: Disabled"), as a link that went down would show them.
func SetPortState(dir, ibdev string, port uint, state, physState string) error {
	base := filepath.Join(dir, "sys/class/infiniband", ibdev, "ports", strconv.FormatUint(uint64(port), 10))
	if err := os.WriteFile(filepath.Join(base, "state"), []byte(state+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(base, "phys_state"), []byte(physState+"\n"), 0o644)
}
