package topology

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

func fabricGPUs(fs ...*node.GPUFabric) []node.GPU {
	var gs []node.GPU
	for i, f := range fs {
		gs = append(gs, node.GPU{Index: i, BusID: "0000:1" + string(rune('0'+i)) + ":00.0", NVLinks: node.NVLinks{Up: 18, Total: 18}, Fabric: f})
	}
	return gs
}

func TestFabricStateFailsOnlyAGPUOutsideCompletedSuccess(t *testing.T) {
	ok := &node.GPUFabric{State: "COMPLETED", Status: "SUCCESS", CliqueID: 32766}
	cases := []struct {
		name          string
		gpus          []node.GPU
		bad           []string // substrings, one per finding
		skip, unknown string
	}{
		{"healthy HGX", fabricGPUs(ok, ok), nil, "", ""},
		{"fabric manager not started", fabricGPUs(ok, &node.GPUFabric{State: "NOT_STARTED", Status: "SUCCESS"}),
			[]string{"GPU 1 0000:11:00.0 has NVLink fabric state NOT_STARTED: nvidia-fabricmanager has not registered it", "error 802"}, "", ""},
		{"Azure's Completed / Insufficient Resources (Azure/azhpc-images#506)", fabricGPUs(&node.GPUFabric{State: "COMPLETED", Status: "ERROR_INSUFFICIENT_RESOURCES"}, ok),
			[]string{"GPU 0 0000:10:00.0 has NVLink fabric state COMPLETED with status ERROR_INSUFFICIENT_RESOURCES", "reset the GPUs"}, "", ""},
		{"PCIe parts: NVML says not supported", fabricGPUs(&node.GPUFabric{Return: "ERROR_NOT_SUPPORTED"}, &node.GPUFabric{Return: "ERROR_NOT_SUPPORTED"}),
			nil, "no NVSwitch here", ""},
		{"NVLinked without NVSwitch: state NOT_SUPPORTED", fabricGPUs(&node.GPUFabric{State: "NOT_SUPPORTED", Status: "SUCCESS"}),
			nil, "no NVSwitch here", ""},
		{"a recording without fabric state", fabricGPUs(nil, nil), nil, "", "snapshot the node again"},
		{"no NVLink and no fabric state", []node.GPU{{Index: 0, BusID: "0000:10:00.0"}}, nil, "no GPU has an NVLink", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkFabric(c.gpus)
			if got.skip == "" != (c.skip == "") || !strings.Contains(got.skip, c.skip) {
				t.Errorf("skip %q, want %q", got.skip, c.skip)
			}
			if got.unknown == "" != (c.unknown == "") || !strings.Contains(got.unknown, c.unknown) {
				t.Errorf("unknown %q, want %q", got.unknown, c.unknown)
			}
			if len(c.bad) == 0 {
				if len(got.bad) != 0 {
					t.Errorf("findings %q, want none", got.bad)
				}
				return
			}
			if len(got.bad) != 1 {
				t.Fatalf("findings %q, want one", got.bad)
			}
			for _, w := range c.bad {
				if !strings.Contains(got.bad[0], w) {
					t.Errorf("%q lacks %q", got.bad[0], w)
				}
			}
		})
	}
}
