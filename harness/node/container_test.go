package node_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

func containerFacts(t *testing.T, h node.Host, ev *node.Evidence, view node.DeviceView) node.ContainerFacts {
	t.Helper()
	c, err := h.CollectContainer(ev, view)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func want(majors []uint32, minor int) *node.DeviceID {
	w := &node.DeviceID{Majors: majors}
	if minor >= 0 {
		m := uint32(minor)
		w.Minor = &m
	}
	return w
}

// Each node must be the device its driver registered, as the node's
// proc/devices and proc/misc list them: GPU N is 195:N, nvidiactl 195:255,
// nvidia-uvm 238:0, uverbs any minor of either infiniband_verbs major,
// rdma_cm misc 10:258. What the view found at each path is carried over.
func TestContainerFactsExpectTheDeviceEachDriverRegistered(t *testing.T) {
	_, h := openTree(t, func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d) })
	ev := node.Collect(h, node.DefaultSources(h))
	null := node.DeviceNode{Path: "/dev/nvidia3", Present: true, Openable: true, Type: node.TypeCharDevice, Number: &node.DevNum{Major: 1, Minor: 3}}
	c := containerFacts(t, h, ev, node.DeviceView{null.Path: null})
	got := map[string]*node.DeviceID{}
	for _, d := range c.Devices {
		if d.Want == nil {
			t.Fatalf("%s expects no device", d.Path)
		}
		w := *d.Want
		w.What = ""
		got[d.Path] = &w
		if d.Path == null.Path && (d.Type != null.Type || !reflect.DeepEqual(d.Number, null.Number) || !d.Openable) {
			t.Errorf("%s: %+v, want what the view found: %+v", d.Path, d, null)
		}
	}
	verbs := []uint32{231, 244}
	for path, w := range map[string]*node.DeviceID{
		"/dev/nvidiactl":          want([]uint32{195}, 255),
		"/dev/nvidia-uvm":         want([]uint32{238}, 0),
		"/dev/nvidia0":            want([]uint32{195}, 0),
		"/dev/nvidia7":            want([]uint32{195}, 7),
		"/dev/infiniband/uverbs0": want(verbs, -1),
		"/dev/infiniband/uverbs7": want(verbs, -1),
		"/dev/infiniband/rdma_cm": want([]uint32{10}, 258),
	} {
		if !reflect.DeepEqual(got[path], w) {
			t.Errorf("%s: want %+v, expected %+v", path, got[path], w)
		}
	}
}

// The real H200 recording has no proc/devices: nvidia-uvm's major is
// unknown, and says why, while the GPU's fixed numbers still stand.
func TestARecordingWithoutProcDevicesLeavesDynamicMajorsUnknown(t *testing.T) {
	dir := t.TempDir()
	if err := ttar.ExtractFile("../../fixtures/nodes/h200x2-nv18-vm.ttar", dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := containerFacts(t, h, node.Collect(h, node.DefaultSources(h)), node.DeviceView{})
	for _, d := range c.Devices {
		switch d.Path {
		case "/dev/nvidia-uvm":
			if len(d.Want.Majors) != 0 || !strings.Contains(d.Want.Unknown, "proc/devices") {
				t.Errorf("%s: want %+v, expected no major and why", d.Path, *d.Want)
			}
		case "/dev/nvidia1":
			if !reflect.DeepEqual(d.Want.Majors, []uint32{195}) || d.Want.Minor == nil || *d.Want.Minor != 1 {
				t.Errorf("%s: want %+v, expected 195:1", d.Path, *d.Want)
			}
		}
	}
}

// A container given no GPU (sysfs shows the host's, NVML's library is not
// there, no /dev/nvidia*) is a container fact: NVML's failure then stops
// being fatal. One /dev/nvidia* node, and the container was given some.
func TestAContainerGivenNoGPUIsAFactNotAnUnevaluableNode(t *testing.T) {
	dir, h := openTree(t, func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d) })
	if err := os.WriteFile(filepath.Join(dir, "gdrcheck", "nvml.json"), []byte(`{"init_error": "ERROR_LIBRARY_NOT_FOUND"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := node.Collect(h, node.DefaultSources(h))
	if ev.Incomplete() == nil {
		t.Fatal("NVML's missing library does not leave the node incomplete to begin with")
	}
	c := containerFacts(t, h, ev, node.DeviceView{})
	wantHidden := &node.HiddenGPUs{HostGPUs: 8, Driver: "580.95.05", NVML: "NVML: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND)", NoLibrary: true}
	if !reflect.DeepEqual(c.NoGPU, wantHidden) {
		t.Fatalf("NoGPU %+v, want %+v", c.NoGPU, wantHidden)
	}
	ev.Container = &c
	if !ev.KeepWithoutGPUs() || ev.Incomplete() != nil {
		t.Errorf("NVML's failure still leaves the node incomplete: %v", ev.Incomplete())
	}

	ev = node.Collect(h, node.DefaultSources(h))
	ctl := node.DeviceNode{Path: "/dev/nvidiactl", Present: true}
	c = containerFacts(t, h, ev, node.DeviceView{ctl.Path: ctl})
	ev.Container = &c
	ev.KeepWithoutGPUs() // the GPU nodes are missing, but that does not explain NVML's library
	if c.NoGPU != nil || ev.Incomplete() == nil {
		t.Errorf("with %s present: NoGPU %+v, incomplete %v; want no such fact and NVML's failure kept", ctl.Path, c.NoGPU, ev.Incomplete())
	}
}

// A GPU node bound over by another device (seen on a real H200: /dev/null
// over /dev/nvidia0) explains why NVML misses that GPU and libcuda sees
// none: the device-node check names it, the node is not unevaluable.
func TestAGPUNodeThatIsAnotherDeviceExplainsWhatNVMLAndCUDAMiss(t *testing.T) {
	minor := uint32(0)
	ev := &node.Evidence{
		Problems: []node.Problem{
			{Source: node.SourceGPUs, Message: "sysfs has NVIDIA GPU(s) 0000:00:06.0 that NVML does not list", Incomplete: true},
			{Source: node.SourceCUDA, Message: "libcuda: cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected", Incomplete: true},
		},
		Container: &node.ContainerFacts{Devices: []node.DeviceNode{{
			Path: "/dev/nvidia0", Present: true, Type: node.TypeCharDevice, Number: &node.DevNum{Major: 1, Minor: 3},
			Want: &node.DeviceID{Majors: []uint32{195}, Minor: &minor},
		}}},
	}
	if !ev.KeepWithoutGPUs() || ev.Incomplete() != nil {
		t.Errorf("still incomplete: %v", ev.Incomplete())
	}
	ev.Container.Devices[0].Number = &node.DevNum{Major: 195, Minor: 0}
	ev.Problems[0].Incomplete = true
	if ev.KeepWithoutGPUs() || ev.Incomplete() == nil {
		t.Error("a right node explains nothing: NVML's miss must stay")
	}
}
