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

func TestCollectNVMLReadsEveryGPUAndPairOfTheDGXH200Mock(t *testing.T) {
	f, err := node.CollectNVML(nodetest.DGXH200())
	if err != nil {
		t.Fatal(err)
	}
	if f.DriverVersion != "550.54.15" || f.CUDADriverVersion != 12040 {
		t.Errorf("driver %q CUDA %d", f.DriverVersion, f.CUDADriverVersion)
	}
	if len(f.GPUs) != 8 || len(f.Pairs) != 28 {
		t.Fatalf("%d GPUs, %d pairs; want 8 and 28", len(f.GPUs), len(f.Pairs))
	}
	g := f.GPUs[3]
	if g.BusID != "0000:03:00.0" || g.Name != "NVIDIA H200 141GB HBM3e" || g.BAR1.TotalMiB != 262144 || g.NVLinks != (node.NVLinks{Up: 18, Total: 18}) {
		t.Errorf("GPU 3: %+v, BAR1 %+v", g, g.BAR1)
	}
	if down, _ := g.Downtrained(); down {
		t.Errorf("Gen5 x16 counted as downtrained")
	}
	p := f.Pairs[0]
	if p.Ancestor != "NODE" || p.P2PRead != "OK" || p.P2PWrite != "OK" {
		t.Errorf("pair 0-1: %+v", p)
	}
	if last := f.Pairs[len(f.Pairs)-1]; last.A != "0000:06:00.0" || last.B != "0000:07:00.0" {
		t.Errorf("last pair %+v", last)
	}
	noP2P, _ := node.CollectNVML(nodetest.WithoutPeerAccess(nodetest.DGXH200()))
	if noP2P.Pairs[0].P2PRead != "DISABLED_BY_REGKEY" {
		t.Errorf("P2P disabled by regkey read as %q", noP2P.Pairs[0].P2PRead)
	}
}

func TestNVMLRecordingReplaysToTheSameFacts(t *testing.T) {
	s := nodetest.DGXH200()
	// One GPU in MIG mode, as nvidia-smi -mig 1 leaves it.
	s.Devices[2].(*server.Device).MigMode = nvml.DEVICE_MIG_ENABLE
	want, err := node.CollectNVML(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := node.CollectNVML(node.ReplayNVML(node.NVMLRecording{NVMLFacts: want}))
	if err != nil {
		t.Fatal(err)
	}
	if g := want.GPUs[2]; g.MIG == nil || !*g.MIG || *want.GPUs[1].MIG || g.Persistence == nil || !*g.Persistence {
		t.Errorf("GPU 2 MIG %v persistence %v, GPU 1 MIG %v; want MIG on only on GPU 2, persistence on", g.MIG, g.Persistence, want.GPUs[1].MIG)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replayed facts differ:\n got %+v\nwant %+v", got, want)
	}
}

func TestNVMLFailuresAreErrorsNotPanics(t *testing.T) {
	_, err := node.CollectNVML(node.ReplayNVML(node.NVMLRecording{InitError: "ERROR_DRIVER_NOT_LOADED"}))
	if !errors.Is(err, node.ErrNVML) || err.Error() != "NVML: initialising: ERROR_DRIVER_NOT_LOADED" {
		t.Errorf("driver not loaded: %v", err)
	}
	// On a machine without the NVIDIA driver (CI), the real library is
	// simply not found.
	if _, err := node.CollectNVML(nvml.New()); err != nil {
		if !errors.Is(err, node.ErrNVML) {
			t.Errorf("live NVML failed without ErrNVML: %v", err)
		}
	} else {
		t.Log("NVML is present on this machine; the missing-library case is covered by the e2e tests")
	}
}

func TestParseNVMLRecordingRejectsUnknownFieldsByLine(t *testing.T) {
	_, err := node.ParseNVMLRecording([]byte("{\n  \"driver_version\": \"580\",\n  \"bogus\": 1\n}\n"))
	if err == nil || err.Error() != `line 4: json: unknown field "bogus"` {
		t.Errorf("got %v", err)
	}
}
