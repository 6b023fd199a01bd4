package node

import (
	"errors"
	"os"
)

// GDRCopy is GDRCopy's kernel module, gdrdrv (NVIDIA/gdrcopy), which maps
// GPU memory into the CPU's address space through /dev/gdrdrv. UCX's
// gdr_copy transport (openucx/ucx#7917), NVSHMEM and NCCL with
// NCCL_GDRCOPY_ENABLE use it for small host<->device copies; without it
// they fall back to cudaMemcpy, slower but working (NVIDIA/gdrcopy#72).
type GDRCopy struct {
	Loaded  bool   `json:"loaded"`            // sys/module/gdrdrv exists
	Version string `json:"version,omitempty"` // sys/module/gdrdrv/version
	// Major is the character major gdrdrv registered ("gdrdrv" in
	// proc/devices); 0 when it registered none.
	Major uint32 `json:"major,omitempty"` // proc/devices; optional
	// DevNode: dev/gdrdrv exists, the node gdr_open() opens; gdrdrv's
	// insmod script makes it, udev may not. nil where the root has no
	// dev/ (a recording made before gdrcheck kept device names).
	DevNode *bool `json:"dev_node,omitempty"` // dev/gdrdrv; optional
}

// Present says the module is in the kernel: its sys/module entry or its
// character major.
func (g GDRCopy) Present() bool { return g.Loaded || g.Major != 0 }

// GDRCopy reads gdrdrv's traces; absent ones are facts, not errors. It is
// gdrdrv's one reader: the kernel facts hold what it reads, and the mpi
// facts (harness/mpi) are fed from it, so the kernel and mpi suites judge
// one source.
func (h Host) GDRCopy() GDRCopy {
	var g GDRCopy
	if _, err := os.Stat(h.sys("module", "gdrdrv")); err == nil {
		g.Loaded = true
		g.Version, _ = readString(h.sys("module", "gdrdrv", "version"))
	}
	if majors, err := h.CharMajors(); err == nil && len(majors["gdrdrv"]) > 0 {
		g.Major = majors["gdrdrv"][0]
	}
	if _, err := os.Stat(h.path("dev")); err == nil {
		_, err := os.Stat(h.path("dev", "gdrdrv"))
		ok := !errors.Is(err, os.ErrNotExist)
		g.DevNode = &ok
	}
	return g
}
