package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
	"golang.org/x/sys/unix"
)

// restricted runs the container suite on the DGX-like fixture node in an
// environment built here the way a badly configured container is: a
// private mount namespace with a /dev of its own (the GPU and RDMA nodes
// as files, minus those in hide), RLIMIT_MEMLOCK set with prlimit, and
// CAP_IPC_LOCK dropped with setpriv.
func restricted(t *testing.T, hide []string, memlock string, dropIPCLock bool) (int, *results.Results) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("building the restricted environment needs root (mount namespace, prlimit)")
	}
	for _, tool := range []string{"unshare", "prlimit", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux) is needed: %v", tool, err)
		}
	}
	devs := []string{"nvidiactl", "nvidia-uvm", "infiniband/rdma_cm"}
	for i := 0; i < 8; i++ {
		devs = append(devs, fmt.Sprintf("nvidia%d", i), fmt.Sprintf("infiniband/uverbs%d", i))
	}
	var mk []string
	for _, d := range devs {
		skip := false
		for _, h := range hide {
			if d == h || strings.HasPrefix(d, h+"/") {
				skip = true
			}
		}
		if !skip {
			mk = append(mk, "/dev/"+d)
		}
	}
	out := t.TempDir()
	run := fmt.Sprintf("mount -t tmpfs tmpfs /dev && mkdir -p /dev/infiniband && touch %s && exec ", strings.Join(mk, " "))
	if dropIPCLock {
		run += "setpriv --inh-caps=-ipc_lock --ambient-caps=-ipc_lock --bounding-set=-ipc_lock "
	}
	run += fmt.Sprintf("%s run -q --suites container --host-root %s --out %s", bin, abs(t, nodes+"h100x8-nvswitch-cx7-pix.ttar"), out)
	args := []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", run}
	if memlock != "" {
		args = append([]string{"prlimit", "--memlock=" + memlock}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "NVIDIA_VISIBLE_DEVICES=all", "MELLANOX_VISIBLE_DEVICES=all")
	b, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	res, rerr := results.Read(out + "/results.json")
	if rerr != nil {
		t.Fatalf("%v\n%s", rerr, b)
	}
	return code, res
}

// failures maps failed spec names to their messages.
func failures(res *results.Results) map[string]string {
	out := map[string]string{}
	for _, s := range res.Nodes[0].Suites {
		for _, sp := range s.Specs {
			if sp.State == results.StateFailed {
				out[sp.Name] = sp.Message
			}
		}
	}
	return out
}

// openMemlock is the least restricted memlock this machine allows: unlimited
// where the test may raise it, else the limit it runs with, which then
// fails the memlock spec in every case (a sandbox without
// CAP_SYS_RESOURCE). envFailures says so.
func openMemlock(t *testing.T) (memlock string, envFailures map[string]string) {
	if exec.Command("prlimit", "--memlock=unlimited", "true").Run() == nil {
		return "unlimited", map[string]string{}
	}
	var rl unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl)
	if rl.Cur == unix.RLIM_INFINITY {
		return "", map[string]string{}
	}
	t.Logf("RLIMIT_MEMLOCK cannot be lifted here (%d bytes): the memlock spec fails in every case", rl.Cur)
	return "", map[string]string{"may lock the memory RDMA registration pins": "RLIMIT_MEMLOCK is"}
}

func TestContainerSuitePassesWhereNothingIsRestricted(t *testing.T) {
	memlock, want := openMemlock(t)
	code, res := restricted(t, nil, memlock, false)
	f := failures(res)
	if len(f) != len(want) || (len(want) == 0) != (code == 0) {
		t.Errorf("exit %d, failures %v; want only %v", code, f, want)
	}
}

func TestContainerSuiteNamesTheCauseOfEachRestriction(t *testing.T) {
	cases := []struct {
		name    string
		hide    []string
		memlock string
		dropCap bool
		want    map[string]string // spec -> text its message must hold
	}{
		{"one GPU's device node hidden", []string{"nvidia1"}, "", false, map[string]string{
			"opens the device node of every GPU": "/dev/nvidia1 for GPU 1 0000:19:00.0 is missing: device not exposed (not mounted into this container; NVIDIA_VISIBLE_DEVICES=all)",
		}},
		{"/dev/infiniband hidden", []string{"infiniband"}, "", false, map[string]string{
			"opens the RDMA device nodes of every rail NIC": "/dev/infiniband/uverbs0 for NIC mlx5_0 is missing: device not exposed",
		}},
		{"memlock of 64 KiB", nil, "65536:65536", false, map[string]string{
			"may lock the memory RDMA registration pins": "RLIMIT_MEMLOCK is 64 KiB (hard 64 KiB)",
		}},
		{"memlock of 64 KiB without CAP_IPC_LOCK", nil, "65536:65536", true, map[string]string{
			"may lock the memory RDMA registration pins":       "RLIMIT_MEMLOCK is 64 KiB",
			"has CAP_IPC_LOCK where memory locking is limited": "CAP_IPC_LOCK is missing",
		}},
	}
	open, env := openMemlock(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			memlock := c.memlock
			if memlock == "" {
				memlock = open
				for k, v := range env {
					c.want[k] = v
				}
			}
			code, res := restricted(t, c.hide, memlock, c.dropCap)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			f := failures(res)
			if len(f) != len(c.want) {
				t.Errorf("failed %v, want only %v", keys(f), c.want)
			}
			for spec, text := range c.want {
				if !strings.Contains(f[spec], text) {
					t.Errorf("%q: %q does not say %q", spec, f[spec], text)
				}
			}
		})
	}
}
