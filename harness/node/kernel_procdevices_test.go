package node

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// h200ProcDevices and h200ProcMisc were read on a 1 x H200 node (driver
// 580.159.04, kernel 6.18), whose /dev/nvidia-uvm is 238:0 and
// /dev/infiniband/rdma_cm 10:258.
const h200ProcDevices = `Character devices:
  1 mem
  4 /dev/vc/0
  4 tty
  4 ttyS
  5 /dev/tty
  5 /dev/console
  5 /dev/ptmx
  7 vcs
 10 misc
 13 input
128 ptm
136 pts
195 nvidia
195 nvidiactl
203 cpu/cpuid
231 infiniband_mad
231 infiniband_verbs
238 nvidia-uvm
239 nvidia-nvswitch
240 nvidia-nvlink
241 nvidia-caps
242 nvidia-caps-imex-channels
243 hidraw
244 infiniband_verbs
245 infiniband_mad
246 macvtap
247 mei
248 bsg
249 watchdog
250 ptp
251 pps
252 dax
253 dimmctl
254 ndctl

Block devices:
  7 loop
253 zram
254 virtblk
259 blkext
`

const h200ProcMisc = `234 btrfs-control
260 cpu_dma_latency
259 vsock
258 rdma_cm
200 tun
237 loop-control
229 fuse
235 autofs
257 userfaultfd
232 kvm
183 hw_random
256 vga_arbiter
`

func TestProcDevicesGiveEachDriversCharacterMajors(t *testing.T) {
	got := parseCharMajors(h200ProcDevices)
	for name, want := range map[string][]uint32{
		"nvidia": {195}, "nvidiactl": {195}, "nvidia-uvm": {238}, "infiniband_verbs": {231, 244}, "dimmctl": {253},
	} {
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("%s: %v, want %v", name, got[name], want)
		}
	}
	if _, ok := got["zram"]; ok {
		t.Error("a block device (zram) is read as a character device")
	}
	if m := parseMiscMinors(h200ProcMisc); m["rdma_cm"] != 258 || m["vsock"] != 259 {
		t.Errorf("proc/misc: rdma_cm %d, vsock %d; want 258, 259", m["rdma_cm"], m["vsock"])
	}
}

func TestProbeDeviceRecordsWhatIsAtThePath(t *testing.T) {
	null := DeviceNode{Path: "/dev/null"}
	probeDevice(&null)
	if !null.Present || !null.Openable || null.Type != TypeCharDevice || !reflect.DeepEqual(null.Number, &DevNum{Major: 1, Minor: 3}) {
		t.Errorf("/dev/null: %+v, want an openable character device 1:3", null)
	}
	file := DeviceNode{Path: filepath.Join(t.TempDir(), "nvidia0")}
	if err := os.WriteFile(file.Path, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	probeDevice(&file)
	if !file.Present || !file.Openable || file.Type != "regular file" || file.Number != nil {
		t.Errorf("a placeholder file: %+v, want an openable regular file without numbers", file)
	}
}

// Bare metal (no container runtime found) with no driver loaded is the
// driver's problem: it stays NVML's fatal failure.
func TestNoGPUOnBareMetalWithoutADriverIsNotAContainerFact(t *testing.T) {
	ev := &Evidence{
		GPUs:     []GPU{{Index: -1, BusID: "0000:18:00.0", Source: "sysfs"}},
		Problems: []Problem{{Source: "nvml", Message: (&NVMLError{Ret: nvml.ERROR_LIBRARY_NOT_FOUND}).Error(), Fatal: true}},
	}
	if h := hiddenGPUs(ev, DeviceView{}, "none"); h != nil {
		t.Errorf("bare metal without a driver: %+v, want no container fact", h)
	}
	if h := hiddenGPUs(ev, DeviceView{}, "enroot"); h == nil || !h.NoLibrary || h.HostGPUs != 1 {
		t.Errorf("an enroot container: %+v, want 1 hidden GPU and no library", h)
	}
	ev.Host.DriverVersion = "580.95.05"
	if h := hiddenGPUs(ev, DeviceView{}, "none"); h == nil || h.Driver != "580.95.05" {
		t.Errorf("no runtime found but the host's driver loaded: %+v, want the GPUs hidden", h)
	}
}
