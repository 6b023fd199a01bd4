package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ContainerFacts are what the process gdrcheck runs in can reach: the
// device nodes GPUDirect needs, how much memory it may lock, whether it may
// lock more, which RDMA devices sysfs shows it, and the variables container
// runtimes expose devices by. Run inside the workload's container, they say
// whether the direct path works there, not just on the host.
type ContainerFacts struct {
	// Recorded marks facts read from a snapshot, not the running process.
	Recorded bool   `json:"recorded,omitempty"`
	Runtime  string `json:"runtime"` // docker, podman, enroot (pyxis), or none
	// Devices are the nodes the GPUs and rail NICs need, in order.
	Devices []DeviceNode `json:"devices"`
	// Memlock is RLIMIT_MEMLOCK in bytes; nil soft/hard means unlimited.
	MemlockSoft *uint64           `json:"memlock_soft,omitempty"`
	MemlockHard *uint64           `json:"memlock_hard,omitempty"`
	CapIPCLock  bool              `json:"cap_ipc_lock"`      // CAP_IPC_LOCK in CapEff of /proc/self/status
	CapEff      string            `json:"cap_eff,omitempty"` // the raw mask
	InfiniBand  []string          `json:"infiniband"`        // /sys/class/infiniband as seen here
	Env         map[string]string `json:"env,omitempty"`     // NVIDIA_VISIBLE_DEVICES, MELLANOX_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES
}

// DeviceNode is one /dev entry GPUDirect needs.
type DeviceNode struct {
	Path     string `json:"path"`
	For      string `json:"for"` // the GPU or NIC it serves, or "all GPUs"
	Present  bool   `json:"present"`
	Openable bool   `json:"openable"`
	Error    string `json:"error,omitempty"` // why it could not be opened
	Errno    int    `json:"errno,omitempty"`
	// Denied is an open refused with EPERM although the node exists and
	// root asked: a cgroup device rule, not file permissions.
	Denied bool `json:"denied,omitempty"`
}

// Unlimited reports an unlimited RLIMIT_MEMLOCK.
func (c ContainerFacts) Unlimited() bool { return c.MemlockSoft == nil }

// containerRecording is where a snapshot keeps the container facts.
const containerRecording = "gdrcheck/container.json"

// ContainerVariables are the variables container runtimes expose GPUs and
// NICs by; unset or "void" ones explain missing devices.
var ContainerVariables = []string{"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "MELLANOX_VISIBLE_DEVICES"}

// DeviceView is /dev as the process found it before any NVIDIA library
// ran: NVML and libcuda, running as root, create the /dev/nvidiaN nodes
// they miss, which would hide exactly what the container suite looks for.
type DeviceView map[string]DeviceNode

// ObserveDevices stats and opens every NVIDIA and RDMA device node now;
// call it before collecting evidence.
func ObserveDevices() DeviceView {
	v := DeviceView{}
	for _, pat := range []string{"/dev/nvidia*", "/dev/infiniband/*"} {
		matches, _ := filepath.Glob(pat)
		for _, m := range matches {
			d := DeviceNode{Path: m}
			probeDevice(&d)
			v[m] = d
		}
	}
	return v
}

// CollectContainer reads the container facts of the running process: its
// /dev (as seen before the libraries ran, when view is given), rlimits,
// capabilities and environment, with the GPUs and rail NICs taken from the
// evidence. For a recorded node with a container recording, that recording
// is used instead.
func (h Host) CollectContainer(e *Evidence, view DeviceView) (ContainerFacts, error) {
	if !h.Live() {
		b, err := os.ReadFile(h.path(containerRecording))
		if err == nil {
			var c ContainerFacts
			if err := json.Unmarshal(b, &c); err != nil {
				return c, fmt.Errorf("reading %q: %w", h.path(containerRecording), err)
			}
			c.Recorded = true
			return c, nil
		}
	}
	c := ContainerFacts{Runtime: containerRuntime(), Env: map[string]string{}}
	for _, k := range ContainerVariables {
		if v, ok := os.LookupEnv(k); ok {
			c.Env[k] = v
		}
	}
	c.Devices = expectedDevices(e)
	for i := range c.Devices {
		d := &c.Devices[i]
		if view == nil {
			probeDevice(d)
			continue
		}
		if seen, ok := view[d.Path]; ok {
			d.Present, d.Openable, d.Error, d.Errno, d.Denied = seen.Present, seen.Openable, seen.Error, seen.Errno, seen.Denied
			continue
		}
		d.Error = "absent when gdrcheck started"
		if _, err := os.Stat(d.Path); err == nil {
			d.Error += " (the NVIDIA libraries created it since: a workload running as root would too, one without CAP_MKNOD would not)"
		}
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return c, fmt.Errorf("getrlimit(RLIMIT_MEMLOCK): %w", err)
	}
	if rl.Cur != unix.RLIM_INFINITY {
		v := rl.Cur
		c.MemlockSoft = &v
	}
	if rl.Max != unix.RLIM_INFINITY {
		v := rl.Max
		c.MemlockHard = &v
	}
	capEff, err := capEff()
	if err != nil {
		return c, err
	}
	c.CapEff = fmt.Sprintf("%016x", capEff)
	c.CapIPCLock = capEff&(1<<unix.CAP_IPC_LOCK) != 0
	ib, err := os.ReadDir(h.sys("class", "infiniband"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return c, fmt.Errorf("reading %q: %w", h.sys("class", "infiniband"), err)
	}
	for _, d := range ib {
		c.InfiniBand = append(c.InfiniBand, d.Name())
	}
	sort.Strings(c.InfiniBand)
	return c, nil
}

// expectedDevices lists the nodes GPUDirect needs: nvidiactl and
// nvidia-uvm, /dev/nvidiaN for every GPU, and for every rail NIC its
// uverbs node, plus rdma_cm.
func expectedDevices(e *Evidence) []DeviceNode {
	out := []DeviceNode{
		{Path: "/dev/nvidiactl", For: "all GPUs"},
		{Path: "/dev/nvidia-uvm", For: "all GPUs"},
	}
	for _, g := range e.GPUs {
		n := g.Index
		if g.Minor != nil {
			n = *g.Minor
		}
		if n < 0 {
			out = append(out, DeviceNode{Path: "/dev/nvidia? (minor unknown)", For: "GPU " + g.BusID + " (NVML does not see it)"})
			continue
		}
		who := fmt.Sprintf("GPU %d %s", g.Index, g.BusID)
		if g.Index < 0 {
			who = "GPU " + g.BusID + " (NVML does not see it)"
		}
		out = append(out, DeviceNode{Path: "/dev/nvidia" + strconv.Itoa(n), For: who})
	}
	rails := map[string]bool{}
	for _, p := range e.Paths {
		if p.Preferred {
			rails[p.NIC] = true
		}
	}
	names := make([]string, 0, len(rails))
	for n := range rails {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		nic, _ := e.NIC(name)
		dev := nic.UverbsDevice
		if dev == "" {
			dev = "/dev/infiniband/uverbs? (unknown: rdmamap gave none)"
		}
		out = append(out, DeviceNode{Path: dev, For: "NIC " + name})
	}
	if len(names) > 0 {
		out = append(out, DeviceNode{Path: "/dev/infiniband/rdma_cm", For: "RDMA connection manager"})
	}
	return out
}

// probeDevice stats and opens a device node the way CUDA and libibverbs
// do (read-write), and closes it at once.
func probeDevice(d *DeviceNode) {
	if _, err := os.Stat(d.Path); err != nil {
		d.Error = err.Error()
		return
	}
	d.Present = true
	fd, err := unix.Open(d.Path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		d.Error = (&os.PathError{Op: "open", Path: d.Path, Err: err}).Error()
		var errno syscall.Errno
		if errors.As(err, &errno) {
			d.Errno = int(errno)
			d.Denied = errno == syscall.EPERM
		}
		return
	}
	unix.Close(fd)
	d.Openable = true
}

// capEff reads the effective capability mask of this process.
func capEff() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapEff in /proc/self/status")
}

// containerRuntime guesses the runtime from the markers each leaves.
func containerRuntime() string {
	switch {
	case os.Getenv("ENROOT_ROOTFS") != "" || os.Getenv("PYXIS_VERSION") != "" || exists("/etc/enroot"):
		return "enroot"
	case exists("/.dockerenv"):
		return "docker"
	case exists("/run/.containerenv"):
		return "podman"
	}
	return "none"
}

func exists(p string) bool {
	_, err := os.Stat(filepath.Clean(p))
	return err == nil
}
