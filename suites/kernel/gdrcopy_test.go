package kernel

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

func TestGDRCopyWarnsOnlyWhereSomethingWouldUseIt(t *testing.T) {
	yes, no := true, false
	ucx := []string{"UCX (/usr/lib/x86_64-linux-gnu/ucx)"}
	ncclOn := &node.Overrides{Settings: []node.Setting{{Name: "NCCL_GDRCOPY_ENABLE", Value: "1", Source: "/etc/nccl.conf", Line: 2}}}
	cases := []struct {
		name  string
		g     node.GDRCopy
		users []string
		o     *node.Overrides
		warn  string // substring of the one warning; "" for none
		skip  bool
	}{
		{"loaded with its device node", node.GDRCopy{Loaded: true, Version: "2.4", Major: 509, DevNode: &yes}, ucx, nil, "", false},
		{"loaded, the recording keeps no /dev", node.GDRCopy{Loaded: true, Major: 509}, ucx, nil, "", false},
		{"loaded without /dev/gdrdrv", node.GDRCopy{Loaded: true, Major: 509, DevNode: &no}, nil, nil, "mknod -m 666 /dev/gdrdrv c 509 0", false},
		{"missing under UCX", node.GDRCopy{DevNode: &no}, ucx, nil, "not loaded, yet UCX (/usr/lib/x86_64-linux-gnu/ucx) is installed: UCX's gdr_copy transport is unavailable", false},
		{"missing under UCX and Open MPI (as on the one-H200 machine)", node.GDRCopy{DevNode: &no}, append(ucx, "ompi_info (/usr/bin/ompi_info)"), nil, "yet UCX (/usr/lib/x86_64-linux-gnu/ucx) and ompi_info (/usr/bin/ompi_info) are installed", false},
		{"missing, NCCL told to use it", node.GDRCopy{}, nil, ncclOn, "NCCL_GDRCOPY_ENABLE=1 (/etc/nccl.conf line 2)", false},
		{"missing, nothing would use it", node.GDRCopy{}, nil, nil, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := checkGDRCopy(c.g, c.users, c.o)
			if (r.skip != "") != c.skip {
				t.Errorf("skip %q, want skipped %t", r.skip, c.skip)
			}
			switch {
			case c.warn == "" && len(r.warn) != 0:
				t.Errorf("warnings %q, want none", r.warn)
			case c.warn != "" && (len(r.warn) != 1 || !strings.Contains(r.warn[0], c.warn)):
				t.Errorf("warnings %q, want one saying %q", r.warn, c.warn)
			}
		})
	}
}
