package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

func h100(vs ...nodetest.Variant) func(string) (*nodetest.Tree, error) {
	return func(d string) (*nodetest.Tree, error) { return nodetest.H100x8(d, vs...) }
}

func TestASysfsOnlyTreeGivesTheWholeMapAndNamesNVMLsAbsence(t *testing.T) {
	ev := collect(t, nodetest.SysfsOnly(h100()))
	if err := ev.Fatal(); err != nil {
		t.Fatalf("NVML's absence is fatal: %v", err)
	}
	p, ok := ev.Unusable(node.SourceNVML)
	if !ok || !strings.Contains(p.Message, "no NVML recording") || !strings.Contains(p.Cause, "a tree of sysfs alone") {
		t.Errorf("NVML's absence: %+v, %t", p, ok)
	}
	if err := ev.Incomplete(); err == nil || !strings.Contains(err.Error(), "gdrcheck/nvml.json") {
		t.Errorf("Incomplete() = %v, want NVML's missing recording", err)
	}
	if err := ev.MapError(); err != nil {
		t.Errorf("the sysfs map is complete, MapError() = %v", err)
	}
	if len(ev.GPUs) != 8 || len(ev.Paths) != 64 {
		t.Fatalf("%d GPUs, %d paths; want 8 and 64", len(ev.GPUs), len(ev.Paths))
	}
	want := nodetest.TopoMatrix(t, "../../fixtures/corpus/nvidia-smi-topo/gke-a4-b200-8gpu-nv18-8nic-cx7-pix-node-sys.txt")
	for i, g := range ev.GPUs {
		if g.Source != "sysfs" || g.Index != -1 || g.NUMANode != i/4 {
			t.Errorf("GPU %s: source %q index %d NUMA %d", g.BusID, g.Source, g.Index, g.NUMANode)
		}
		p, ok := ev.PreferredPath(g.BusID)
		if wantNIC := fmt.Sprintf("mlx5_%d", i); !ok || p.NIC != wantNIC || p.Class != node.PathPIX {
			t.Errorf("GPU %s prefers %s (%s), want %s (PIX)", g.BusID, p.NIC, p.Class, wantNIC)
		}
		// sysfs orders the GPUs as NVML would: the matrix row is theirs.
		for _, q := range ev.Paths {
			if q.GPU == g.BusID && string(q.Class) != want[fmt.Sprintf("GPU%d", i)][q.NIC] {
				t.Errorf("GPU%d -> %s: %s, the public matrix says %s", i, q.NIC, q.Class, want[fmt.Sprintf("GPU%d", i)][q.NIC])
			}
		}
	}
	inv := ev.Inventory()
	if len(inv.Warnings) == 0 || !strings.Contains(inv.Warnings[0], "no NVML recording") {
		t.Errorf("inventory warnings %q, want NVML's absence", inv.Warnings)
	}
	ev.ProbeGPUDirect(nil, fmt.Errorf("no CUDA/verbs recording for host root %q", "x"))
	for _, src := range []string{node.SourceCUDA, node.SourceVerbs} {
		if p, ok := ev.Unusable(src); !ok || !strings.Contains(p.Cause, "a tree of sysfs alone") {
			t.Errorf("%s without a recording: %+v, %t", src, p, ok)
		}
	}
}

func TestTheVersionMismatchNodeNamesBothVersionsAndTheReload(t *testing.T) {
	ev := nodetest.Probed(t, nodetest.NVMLVersionMismatch)
	if err := ev.Fatal(); err != nil {
		t.Fatalf("fatal: %v", err)
	}
	p, ok := ev.Unusable(node.SourceNVML)
	if !ok || p.Message != "NVML: initialising: ERROR_LIB_RM_VERSION_MISMATCH" {
		t.Fatalf("NVML problem %+v, %t", p, ok)
	}
	for _, w := range []string{"Driver/library version mismatch", "kernel module loaded is 570.133.20", "/proc/driver/nvidia/version", "libnvidia-ml.so.580.95.05", "not reloaded", "reboot"} {
		if !strings.Contains(p.Cause, w) {
			t.Errorf("NVML cause lacks %q: %s", w, p.Cause)
		}
	}
	c, ok := ev.Unusable(node.SourceCUDA)
	if !ok || !strings.Contains(c.Message, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)") || !strings.Contains(c.Cause, "does not match the NVIDIA kernel module loaded (570.133.20") {
		t.Errorf("libcuda problem %+v, %t", c, ok)
	}
	if v, ok := ev.Unusable(node.SourceVerbs); ok {
		t.Errorf("libibverbs answered, yet: %+v", v)
	}
	if ev.Host.DriverVersion != "570.133.20" || len(ev.GPUs) != 8 || len(ev.GPUPairs) != 0 {
		t.Errorf("driver %q from procfs, %d GPUs, %d NVML pairs", ev.Host.DriverVersion, len(ev.GPUs), len(ev.GPUPairs))
	}
}

func TestMissingLibrariesAreNamedWithWhatIsMissingFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	if _, err := nodetest.H100x8(dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev := node.Collect(h, node.Sources{NVML: node.ReplayNVML(node.NVMLRecording{InitError: "ERROR_LIBRARY_NOT_FOUND"})})
	ev.ProbeGPUDirect(node.GPUDirectRecording{
		CUDA:  node.CUDAFacts{Error: "libcuda.so.1 not found: libcuda.so.1: cannot open shared object file: No such file or directory"},
		Verbs: node.VerbsFacts{Error: "libibverbs.so.1 not found: libibverbs.so.1: cannot open shared object file: No such file or directory"},
	}, nil)
	for src, want := range map[string]string{
		node.SourceNVML:  "NVML library not found: the NVIDIA driver's user-space libraries (libnvidia-ml.so.1) are missing from this environment",
		node.SourceCUDA:  "CUDA driver library not found: the NVIDIA driver's user-space libraries (libcuda.so.1) are missing",
		node.SourceVerbs: "rdma-core's libibverbs.so.1 is not installed",
	} {
		if p, ok := ev.Unusable(src); !ok || !strings.HasPrefix(p.Cause, want) {
			t.Errorf("%s: %+v, %t; want a cause starting %q", src, p, ok, want)
		}
	}
}

func TestGPUsTheSourcesDisagreeOnAreAnEvidenceErrorNamingThem(t *testing.T) {
	t.Run("NVML lists a GPU sysfs does not have", func(t *testing.T) {
		ev := collect(t, func(d string) (*nodetest.Tree, error) {
			tr, err := nodetest.H100x8(d)
			if err != nil {
				return tr, err
			}
			ghost := tr.NVML.GPUs[7]
			ghost.Index, ghost.BusID = 8, "0000:d0:00.0"
			tr.NVML.GPUs = append(tr.NVML.GPUs, ghost)
			tr.NVML.Pairs = append(tr.NVML.Pairs, node.GPUPair{A: "0000:18:00.0", B: "0000:d0:00.0", Ancestor: "SYSTEM", P2PRead: "OK", P2PWrite: "OK", NVLink: "OK"})
			return tr, tr.Finish()
		})
		if len(ev.GPUs) != 8 || len(ev.NVMLOnly) != 1 || ev.NVMLOnly[0] != "0000:d0:00.0" {
			t.Fatalf("%d GPUs, NVML only %q; want the ghost left out", len(ev.GPUs), ev.NVMLOnly)
		}
		for _, p := range ev.GPUPairs {
			if p.B == "0000:d0:00.0" {
				t.Errorf("the ghost's pair is kept: %+v", p)
			}
		}
		err := ev.MapError()
		if err == nil || !strings.Contains(err.Error(), "NVML lists GPU(s) 0000:d0:00.0 that sysfs does not have") {
			t.Errorf("MapError() = %v", err)
		}
		if ev.Fatal() != nil || ev.Incomplete() == nil {
			t.Errorf("fatal %v, incomplete %v; want incomplete only", ev.Fatal(), ev.Incomplete())
		}
	})
	t.Run("sysfs has a GPU NVML does not list", func(t *testing.T) {
		ev := collect(t, func(d string) (*nodetest.Tree, error) {
			tr, err := nodetest.H100x8(d)
			if err != nil {
				return tr, err
			}
			tr.NVML.GPUs = tr.NVML.GPUs[:7]
			return tr, tr.Finish()
		})
		err := ev.Incomplete()
		if err == nil || !strings.Contains(err.Error(), "sysfs has NVIDIA GPU(s) 0000:b9:00.0 that NVML does not list") {
			t.Errorf("Incomplete() = %v", err)
		}
		if err := ev.MapError(); err != nil {
			t.Errorf("the GPU is placed from sysfs, MapError() = %v", err)
		}
		if g := ev.GPUs[7]; g.BusID != "0000:b9:00.0" || g.Source != "sysfs" {
			t.Errorf("GPU 7: %+v", g)
		}
	})
}

func TestTheKernelReleaseComesFromProcVersionWithoutOsrelease(t *testing.T) {
	build := func(version string) func(string) (*nodetest.Tree, error) {
		return func(d string) (*nodetest.Tree, error) {
			tr, err := nodetest.H100x8(d)
			if err != nil {
				return tr, err
			}
			if err := os.Remove(filepath.Join(d, "proc/sys/kernel/osrelease")); err != nil {
				return tr, err
			}
			if version == "" {
				return tr, nil
			}
			return tr, os.WriteFile(filepath.Join(d, "proc/version"), []byte(version), 0o644)
		}
	}
	ev := collect(t, build("Linux version 6.8.0-60-generic (buildd@lcy02-amd64-098) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0) #63-Ubuntu SMP PREEMPT_DYNAMIC Tue Apr 15 19:04:15 UTC 2025\n"))
	if ev.Host.Kernel != "6.8.0-60-generic" || ev.Kernel.Release != "6.8.0-60-generic" {
		t.Errorf("kernel %q, release %q; want 6.8.0-60-generic from proc/version", ev.Host.Kernel, ev.Kernel.Release)
	}
	ev = collect(t, build(""))
	p, ok := ev.Problem("procfs")
	if ev.Host.Kernel != "" || !ok || !strings.Contains(p.Message, "osrelease") || !strings.Contains(p.Message, "proc/version") {
		t.Errorf("neither file: kernel %q, problem %+v", ev.Host.Kernel, p)
	}
}

// An NVSwitch node whose fabric manager never registered the GPUs: cuInit
// answers 802 (NVIDIA/nccl-tests#264), and the cause names the fabric
// manager and the reset.
func TestCUDAError802NamesTheFabricManager(t *testing.T) {
	dir := t.TempDir()
	if _, err := nodetest.H100x8(dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev := node.Collect(h, node.DefaultSources(h))
	ev.ProbeGPUDirect(node.GPUDirectRecording{
		CUDA: node.CUDAFacts{DriverVersion: 13000, Error: "cuInit: CUDA_ERROR_SYSTEM_NOT_READY (802): system not yet initialized"},
	}, nil)
	p, ok := ev.Unusable(node.SourceCUDA)
	if !ok || !strings.Contains(p.Cause, "nvidia-fabricmanager is not running") || !strings.Contains(p.Cause, "reset the GPUs") {
		t.Errorf("libcuda problem %+v, %t", p, ok)
	}
}
