package kernel

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// gdrcopyCheck is the judgement of GDRCopy's gdrdrv: warnings (never a
// failure: without it the direct RDMA path still works, only small
// host<->device copies slow down), why it does not apply, notes.
type gdrcopyCheck struct {
	warn  []string
	skip  string
	notes []string
}

// gdrcopyFix installs and loads gdrdrv (NVIDIA/gdrcopy's packages).
const gdrcopyFix = "install GDRCopy (the gdrdrv-dkms package, or gdrcopy's insmod.sh) and load it: modprobe gdrdrv"

// checkGDRCopy judges gdrdrv against its users: UCX or Open MPI installed
// (users), or NCCL told to use it (NCCL_GDRCOPY_ENABLE=1 among the
// overrides). Missing where something would use it is a warning, loudest
// for UCX/MPI, whose gdr_copy transport is gone (openucx/ucx#7917; 670
// against 3800 MB/s for small messages in ComputeCanada/easybuild-easyconfigs#15);
// missing where nothing would is no concern of this node: NCCL does not
// need it by default.
func checkGDRCopy(g node.GDRCopy, users []string, o *node.Overrides) gdrcopyCheck {
	var c gdrcopyCheck
	var ncclWants *node.Setting
	if o != nil {
		if s, ok := o.Effective("NCCL_GDRCOPY_ENABLE"); ok && strings.TrimSpace(s.Value) == "1" {
			ncclWants = &s
		}
	}
	if g.Present() {
		v := g.Version
		if v == "" {
			v = "version unknown"
		}
		c.notes = append(c.notes, fmt.Sprintf("gdrdrv is loaded (%s, character major %d)", v, g.Major))
		switch {
		case g.DevNode == nil:
			c.notes = append(c.notes, "the recording keeps no /dev: whether /dev/gdrdrv exists is unknown")
		case !*g.DevNode:
			mk := "mknod /dev/gdrdrv c <major from /proc/devices> 0"
			if g.Major != 0 {
				mk = fmt.Sprintf("mknod -m 666 /dev/gdrdrv c %d 0", g.Major)
			}
			c.warn = append(c.warn, fmt.Sprintf("gdrdrv is loaded but /dev/gdrdrv is missing: gdr_open() fails, so UCX's gdr_copy and NCCL_GDRCOPY_ENABLE fall back to cudaMemcpy; create it (gdrcopy's insmod.sh does, or %s)", mk))
		}
		return c
	}
	switch {
	case len(users) > 0:
		verb := "is"
		if len(users) > 1 {
			verb = "are"
		}
		c.warn = append(c.warn, fmt.Sprintf("GDRCopy's gdrdrv module is not loaded, yet %s %s installed: UCX's gdr_copy transport is unavailable, so MPI and UCX copy small GPU messages through cuda_copy, several times slower; %s", strings.Join(users, " and "), verb, gdrcopyFix))
	case ncclWants != nil:
		c.warn = append(c.warn, fmt.Sprintf("GDRCopy's gdrdrv module is not loaded, yet NCCL_GDRCOPY_ENABLE=1 (%s): NCCL falls back without it; %s", ncclWants.Where(), gdrcopyFix))
	default:
		c.skip = "GDRCopy's gdrdrv is not loaded and nothing here would use it: no UCX or Open MPI found and NCCL_GDRCOPY_ENABLE unset (NCCL does not need it)"
	}
	return c
}
