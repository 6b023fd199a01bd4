package nccl

import "strings"

// Mode is one way of running NCCL: direct, or with a fallback forced by
// environment variables, as DESIGN.md lists them.
type Mode struct {
	Name string
	Env  []string
	// Expect is the transport class the fallback should land on, for the
	// report ("" for direct).
	Expect string
	// NeedsNICs marks the modes that only mean something with RDMA NICs.
	NeedsNICs bool
}

// The forced fallbacks. On one node, traffic reaches the network only with
// P2P and SHM disabled, so the NIC modes disable both as well.
var (
	ModeDirect         = Mode{Name: "direct"}
	ModeP2PDisabled    = Mode{Name: "p2p-disabled", Env: []string{"NCCL_P2P_DISABLE=1"}, Expect: ClassSHM}
	ModeP2PSHMDisabled = Mode{Name: "p2p-shm-disabled", Env: []string{"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1"}, Expect: "NET"}
	ModeGDRLoc         = Mode{Name: "gdr-loc", Env: []string{"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_NET_GDR_LEVEL=LOC"}, Expect: ClassNetIB, NeedsNICs: true}
	ModeIBDisabled     = Mode{Name: "ib-disabled", Env: []string{"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_IB_DISABLE=1"}, Expect: ClassNetSocket, NeedsNICs: true}
)

// RemoteHCA forces NCCL onto a NIC across the topology (another socket).
func RemoteHCA(nic string) Mode {
	return Mode{Name: "remote-hca", Env: []string{"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_IB_HCA=" + nic}, Expect: ClassNetIB, NeedsNICs: true}
}

// Landed says whether a dominant class is where the mode should land;
// "NET" accepts any network class.
func (m Mode) Landed(class string) bool {
	switch m.Expect {
	case "":
		return true
	case "NET":
		return strings.HasPrefix(class, "NET/") || class == ClassCollNet
	}
	return class == m.Expect
}
