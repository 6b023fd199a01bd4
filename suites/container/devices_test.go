package container

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// devnullRun is the container facts of a real run: `gdrcheck run --suites
// container` over the h100x8-nvswitch-cx7-pix fixture, in a private mount
// namespace whose /dev held every node with its real numbers (mknod) and
// /dev/null bind-mounted over /dev/nvidia0, on a machine without the
// NVIDIA or ib_uverbs driver (so the correct nodes fail to open, ENXIO).
const devnullRun = "testdata/h100x8-nvidia0-devnull.container.json"

func recorded(t *testing.T, strip ...string) node.ContainerFacts {
	t.Helper()
	b, err := os.ReadFile(devnullRun)
	if err != nil {
		t.Fatal(err)
	}
	if len(strip) > 0 {
		// What a recording made before gdrcheck recorded device numbers
		// holds: the same facts without these fields.
		var raw map[string]any
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		for _, d := range raw["devices"].([]any) {
			for _, k := range strip {
				delete(d.(map[string]any), k)
			}
		}
		if b, err = json.Marshal(raw); err != nil {
			t.Fatal(err)
		}
	}
	var c node.ContainerFacts
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", devnullRun, err)
	}
	return c
}

func device(t *testing.T, c node.ContainerFacts, path string) node.DeviceNode {
	t.Helper()
	for _, d := range c.Devices {
		if d.Path == path {
			return d
		}
	}
	t.Fatalf("%s: no %s", devnullRun, path)
	return node.DeviceNode{}
}

func TestTheNodeBoundOverAGPUIsNamedWithTheNumbersFoundAndExpected(t *testing.T) {
	c := recorded(t)
	d := device(t, c, "/dev/nvidia0")
	if !d.Openable {
		t.Fatalf("%s: /dev/nvidia0 (/dev/null) did not open in the recorded run", devnullRun)
	}
	finding, cause, unknown := deviceFinding(d, c.Env, "NVIDIA_VISIBLE_DEVICES")
	want := "/dev/nvidia0 for GPU 0 0000:18:00.0 is character device 1:3, not 195:0: not the GPU's device node (bind-mounted over, or a placeholder)"
	if finding != want || cause != CauseWrong || unknown != "" {
		t.Errorf("got %q (cause %q, unknown %q)\nwant %q (cause %q)", finding, cause, unknown, want, CauseWrong)
	}
	// Every other node has the numbers its driver registered: it may fail
	// because it does not open here, never as the wrong device.
	for _, o := range c.Devices {
		if o.Path == d.Path {
			continue
		}
		if wrong, unknown := identity(o); wrong != "" || unknown != "" {
			t.Errorf("%s (%s %s, want %+v): identity says wrong %q, unknown %q", o.Path, o.Type, o.Number, *o.Want, wrong, unknown)
		}
		if f, cause, _ := deviceFinding(o, c.Env, "NVIDIA_VISIBLE_DEVICES"); f != "" && cause != CauseNoDriver {
			t.Errorf("%s: %q (cause %q), want it to pass or be unopenable for want of a driver", o.Path, f, cause)
		}
	}
	// The GPU's own node, openable, passes.
	d.Number = &node.DevNum{Major: 195, Minor: 0}
	if f, _, unknown := deviceFinding(d, c.Env, "NVIDIA_VISIBLE_DEVICES"); f != "" || unknown != "" {
		t.Errorf("195:0 at /dev/nvidia0: %q (unknown %q), want it to pass", f, unknown)
	}
}

func TestARecordingWithoutDeviceNumbersLeavesIdentityUncheckedNeverWrong(t *testing.T) {
	for _, strip := range [][]string{{"type", "number", "want"}, {"type", "number"}} {
		c := recorded(t, strip...)
		for _, d := range c.Devices {
			wrong, unknown := identity(d)
			if wrong != "" {
				t.Errorf("without %v: %s is called wrong: %q", strip, d.Path, wrong)
			}
			if d.Want != nil && !strings.Contains(unknown, "not recorded") {
				t.Errorf("without %v: %s: unknown %q, want it to say the numbers were not recorded", strip, d.Path, unknown)
			}
		}
		// /dev/null opened, so with nothing to tell it apart it passes.
		if f, _, _ := deviceFinding(device(t, c, "/dev/nvidia0"), c.Env, "NVIDIA_VISIBLE_DEVICES"); f != "" {
			t.Errorf("without %v: /dev/nvidia0 fails: %q", strip, f)
		}
	}
}

func TestIdentityRule(t *testing.T) {
	minor := func(n uint32) *uint32 { return &n }
	gpu2 := &node.DeviceID{What: "the GPU's device node", Majors: []uint32{195}, Minor: minor(2)}
	uverbs := &node.DeviceID{What: "an RDMA verbs device", Majors: []uint32{231, 244}}
	uvmUnknown := &node.DeviceID{What: "the nvidia-uvm device", Minor: minor(0), Unknown: "no nvidia-uvm in proc/devices"}
	char := func(maj, min uint32) *node.DevNum { return &node.DevNum{Major: maj, Minor: min} }
	cases := []struct {
		name           string
		d              node.DeviceNode
		wrong, unknown string
	}{
		{"a placeholder file", node.DeviceNode{Path: "/dev/nvidia2", Type: "regular file", Want: gpu2}, "is a regular file, not character device 195:2", ""},
		{"another GPU's node", node.DeviceNode{Path: "/dev/nvidia2", Type: node.TypeCharDevice, Number: char(195, 3), Want: gpu2}, "is character device 195:3, not 195:2", ""},
		{"a block device", node.DeviceNode{Path: "/dev/nvidia2", Type: "block device", Number: char(7, 0), Want: gpu2}, "is block device 7:0, not character device 195:2", ""},
		{"the GPU's node", node.DeviceNode{Path: "/dev/nvidia2", Type: node.TypeCharDevice, Number: char(195, 2), Want: gpu2}, "", ""},
		{"uverbs past the fixed minors", node.DeviceNode{Path: "/dev/infiniband/uverbs40", Type: node.TypeCharDevice, Number: char(244, 8), Want: uverbs}, "", ""},
		{"/dev/null as uverbs", node.DeviceNode{Path: "/dev/infiniband/uverbs0", Type: node.TypeCharDevice, Number: char(1, 3), Want: uverbs}, "is character device 1:3, not 231:* or 244:*", ""},
		{"nvidia-uvm of an unknown major", node.DeviceNode{Path: "/dev/nvidia-uvm", Type: node.TypeCharDevice, Number: char(238, 0), Want: uvmUnknown}, "", "the major of the nvidia-uvm device is not known (no nvidia-uvm in proc/devices): /dev/nvidia-uvm is character device 238:0, only its type was checked"},
		{"a file as nvidia-uvm of an unknown major", node.DeviceNode{Path: "/dev/nvidia-uvm", Type: "regular file", Want: uvmUnknown}, "is a regular file, not a character device", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if wrong, unknown := identity(c.d); wrong != c.wrong || unknown != c.unknown {
				t.Errorf("got wrong %q, unknown %q\nwant wrong %q, unknown %q", wrong, unknown, c.wrong, c.unknown)
			}
		})
	}
}

func TestAContainerGivenNoGPUHearsItFromTheRuntimeNotTheDriver(t *testing.T) {
	h := node.HiddenGPUs{HostGPUs: 8, Driver: "580.95.05", NVML: "NVML: libnvidia-ml.so.1 not found (is the NVIDIA driver installed?)", NoLibrary: true}
	got := noGPUFinding(h, map[string]string{})
	want := "no GPU is exposed to this container: the host has 8 NVIDIA GPU(s) (driver 580.95.05) but there is no /dev/nvidia* here and libnvidia-ml.so.1 is not reachable (NVIDIA_VISIBLE_DEVICES is unset): the container runtime did not expose GPUs (docker/podman --gpus, NVIDIA_VISIBLE_DEVICES with the NVIDIA container runtime, CDI --device nvidia.com/gpu=all, the pyxis/enroot hooks of a job given GPUs)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	h.NoLibrary, h.NVML = false, "NVML: initialising: ERROR_DRIVER_NOT_LOADED"
	got = noGPUFinding(h, map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"})
	for _, s := range []string{"NVML does not answer (NVML: initialising: ERROR_DRIVER_NOT_LOADED)", "(yet none was mounted in; NVIDIA_VISIBLE_DEVICES=all)", "the container runtime did not expose GPUs"} {
		if !strings.Contains(got, s) {
			t.Errorf("%q does not say %q", got, s)
		}
	}
}
