package node_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// The fabric state NVML gives each GPU is recorded by name and replays to
// the same facts: a healthy HGX, one left "Completed / Insufficient
// Resources" (Azure/azhpc-images#506), one still registering, and a GPU
// NVML says has no fabric.
func TestCollectNVMLRecordsEachGPUsFabricStateAndReplaysIt(t *testing.T) {
	s := nodetest.DGXH200()
	f, err := node.CollectNVML(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.GPUs[0].Fabric; got == nil || *got != (node.GPUFabric{State: "COMPLETED", Status: "SUCCESS"}) || !got.InFabric() {
		t.Errorf("healthy HGX H200 GPU 0 fabric %+v", got)
	}
	s = nodetest.WithFabric(nodetest.DGXH200(), nvml.GPU_FABRIC_STATE_COMPLETED, nvml.ERROR_INSUFFICIENT_RESOURCES)
	dev := func(i int) *server.Device { return s.Devices[i].(*server.Device) }
	dev(1).GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
		return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_IN_PROGRESS, CliqueId: 7,
			ClusterUuid: [16]uint8{0x9c, 0x6f, 0x5a, 0xf3, 0x53, 0xbf, 0x49, 0xb5, 0xa4, 0x36, 0xb6, 0x67, 0x66, 0xc4, 0x13, 0xc3}}, nvml.SUCCESS
	}
	dev(2).GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) { return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED }
	want, err := node.CollectNVML(s)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range map[int]node.GPUFabric{
		0: {State: "COMPLETED", Status: "ERROR_INSUFFICIENT_RESOURCES"},
		1: {State: "IN_PROGRESS", Status: "SUCCESS", CliqueID: 7, ClusterUUID: "9c6f5af3-53bf-49b5-a436-b66766c413c3"},
		2: {Return: "ERROR_NOT_SUPPORTED"},
	} {
		if got := want.GPUs[i].Fabric; got == nil || *got != w {
			t.Errorf("GPU %d fabric %+v, want %+v", i, got, w)
		}
	}
	if want.GPUs[2].Fabric.InFabric() || !want.GPUs[1].Fabric.InFabric() {
		t.Errorf("InFabric: NOT_SUPPORTED %t, IN_PROGRESS %t", want.GPUs[2].Fabric.InFabric(), want.GPUs[1].Fabric.InFabric())
	}
	got, err := node.CollectNVML(node.ReplayNVML(node.NVMLRecording{NVMLFacts: want}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replayed facts differ:\n got %+v\nwant %+v", got.GPUs[:3], want.GPUs[:3])
	}
}

// A recording made before gdrcheck read the fabric state replays with
// none (not as "no fabric"), and a library without the entry point is
// never called through it: go-nvml would jump to a missing symbol.
func TestNoFabricEntryPointLeavesTheFabricUnknown(t *testing.T) {
	want, err := node.CollectNVML(nodetest.DGXH200())
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.GPUs {
		want.GPUs[i].Fabric = nil
	}
	got, err := node.CollectNVML(node.ReplayNVML(node.NVMLRecording{NVMLFacts: want}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || got.GPUs[0].Fabric != nil {
		t.Errorf("a recording without fabric info replays with %+v", got.GPUs[0].Fabric)
	}
	s := nodetest.DGXH200()
	s.LookupSymbolFunc = func(string) error { return errors.New("undefined symbol") }
	for _, d := range s.Devices {
		d.(*server.Device).GetGpuFabricInfoFunc = nil // a call would panic
	}
	old, err := node.CollectNVML(s)
	if err != nil {
		t.Fatal(err)
	}
	if old.GPUs[0].Fabric != nil {
		t.Errorf("a library without nvmlDeviceGetGpuFabricInfo gave %+v", old.GPUs[0].Fabric)
	}
}
