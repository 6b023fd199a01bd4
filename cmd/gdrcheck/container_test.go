package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
	"github.com/gdrcheck/gdrcheck/results"
	"golang.org/x/sys/unix"
)

const (
	gpuSpec     = "opens the device node of every GPU"
	rdmaSpec    = "opens the RDMA device nodes of every rail NIC"
	memlockSpec = "may lock the memory RDMA registration pins"
	capSpec     = "has CAP_IPC_LOCK where memory locking is limited"
)

// devNode is a node of the restricted /dev, made with the numbers the
// fixture's drivers registered (its proc/devices and proc/misc).
type devNode struct {
	name         string // under /dev
	major, minor uint32
}

// fixture unpacks the DGX-like fixture node and lists the device nodes a
// container on it is given.
func fixture(t *testing.T) (string, []devNode) {
	t.Helper()
	dir := t.TempDir()
	if err := ttar.ExtractFile(nodes+"h100x8-nvswitch-cx7-pix.ttar", dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	majors, err := h.CharMajors()
	if err != nil {
		t.Fatal(err)
	}
	misc, err := h.MiscMinors()
	if err != nil {
		t.Fatal(err)
	}
	if len(majors["nvidia-uvm"]) == 0 || len(majors["infiniband_verbs"]) == 0 {
		t.Fatalf("the fixture's proc/devices lists no nvidia-uvm or infiniband_verbs: %v", majors)
	}
	devs := []devNode{{"nvidiactl", 195, 255}, {"nvidia-uvm", majors["nvidia-uvm"][0], 0}, {"infiniband/rdma_cm", 10, misc["rdma_cm"]}}
	for i := uint32(0); i < 8; i++ {
		devs = append(devs, devNode{fmt.Sprintf("nvidia%d", i), 195, i}, devNode{fmt.Sprintf("infiniband/uverbs%d", i), majors["infiniband_verbs"][0], 192 + i})
	}
	return dir, devs
}

// restriction is how a badly configured container differs from a good one.
type restriction struct {
	hide    []string          // nodes (or folders) it lacks
	replace map[string]string // node -> "null" (/dev/null bind-mounted over it) or "file" (a placeholder)
	memlock string            // prlimit's --memlock; empty keeps this process's
	dropCap bool              // CAP_IPC_LOCK dropped with setpriv
	root    string            // --host-root; empty is the fixture
	env     []string          // replaces NVIDIA_VISIBLE_DEVICES=all MELLANOX_VISIBLE_DEVICES=all
}

func (r restriction) hidden(name string) bool {
	for _, h := range r.hide {
		if name == h || strings.HasPrefix(name, h+"/") {
			return true
		}
	}
	return false
}

// devScript builds, in a private mount namespace, a /dev of its own holding
// the nodes as a container runtime makes them (mknod with their numbers),
// as r restricts them.
func devScript(devs []devNode, r restriction) string {
	s := "mount -t tmpfs tmpfs /dev && mkdir -p /dev/infiniband && mknod -m 666 /dev/null c 1 3"
	for _, d := range devs {
		if !r.hidden(d.name) {
			s += fmt.Sprintf(" && mknod -m 666 /dev/%s c %d %d", d.name, d.major, d.minor)
		}
	}
	for name, how := range r.replace {
		if how == "null" {
			s += " && mount --bind /dev/null /dev/" + name
		} else {
			s += fmt.Sprintf(" && rm /dev/%s && touch /dev/%s", name, name)
		}
	}
	return s
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("building the restricted environment needs root (mount namespace, mknod, prlimit)")
	}
	for _, tool := range []string{"unshare", "prlimit", "setpriv", "mknod"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux, coreutils) is needed: %v", tool, err)
		}
	}
}

// restricted runs the container suite on the fixture node in an
// environment built the way a badly configured container is: a /dev of its
// own (devScript), RLIMIT_MEMLOCK set with prlimit, and CAP_IPC_LOCK
// dropped with setpriv.
func restricted(t *testing.T, root string, devs []devNode, r restriction) (int, *results.Results) {
	t.Helper()
	needRoot(t)
	if r.root != "" {
		root = r.root
	}
	out := t.TempDir()
	run := devScript(devs, r) + " && exec "
	if r.dropCap {
		run += "setpriv --inh-caps=-ipc_lock --ambient-caps=-ipc_lock --bounding-set=-ipc_lock "
	}
	run += fmt.Sprintf("%s run -q --suites container --host-root %s --out %s", bin, root, out)
	args := []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", run}
	if r.memlock != "" {
		args = append([]string{"prlimit", "--memlock=" + r.memlock}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	env := r.env
	if env == nil {
		env = []string{"NVIDIA_VISIBLE_DEVICES=all", "MELLANOX_VISIBLE_DEVICES=all"}
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NVIDIA_VISIBLE_DEVICES=") && !strings.HasPrefix(kv, "MELLANOX_VISIBLE_DEVICES=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
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

// unopenable lists the nodes this machine cannot open although they have
// the fixture's numbers: without the NVIDIA or ib_uverbs driver, open
// fails with ENXIO. Their findings are this machine's, not the case's.
func unopenable(t *testing.T, devs []devNode) map[string]bool {
	t.Helper()
	needRoot(t)
	s := devScript(devs, restriction{}) + " || exit 1"
	for _, d := range devs {
		s += fmt.Sprintf("; (exec 3<>/dev/%s) 2>/dev/null || echo %s", d.name, d.name)
	}
	b, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", s).Output()
	if err != nil {
		t.Fatalf("probing the nodes: %v: %s", err, b)
	}
	out := map[string]bool{}
	for _, n := range strings.Fields(string(b)) {
		out[n] = true
	}
	if len(out) > 0 {
		t.Logf("this machine cannot open %d of the fixture's %d nodes: each fails the spec it belongs to in every case", len(out), len(devs))
	}
	return out
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

// findingLines splits a HaveNoFindings message into its findings.
func findingLines(msg string) []string {
	if first, rest, ok := strings.Cut(msg, "\n"); ok && strings.Contains(first, " more)") {
		return strings.Split(rest, "\n")
	}
	return []string{msg}
}

// openMemlock is the least restricted memlock this machine allows: unlimited
// where the test may raise it, else the limit it runs with, which then
// fails the memlock spec in every case (a sandbox without
// CAP_SYS_RESOURCE). The texts it adds say so.
func openMemlock(t *testing.T) (memlock string, envFailures map[string][]string) {
	if exec.Command("prlimit", "--memlock=unlimited", "true").Run() == nil {
		return "unlimited", map[string][]string{}
	}
	var rl unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl)
	if rl.Cur == unix.RLIM_INFINITY {
		return "", map[string][]string{}
	}
	t.Logf("RLIMIT_MEMLOCK cannot be lifted here (%d bytes): the memlock spec fails in every case", rl.Cur)
	return "", map[string][]string{memlockSpec: {"RLIMIT_MEMLOCK is"}}
}

// expect checks that exactly the wanted specs failed, that every finding
// of theirs says one of the wanted texts, and that every text is said. The
// nodes this machine cannot open (and the case left as they are) add
// their own finding.
func expect(t *testing.T, res *results.Results, want map[string][]string, devs []devNode, cannot map[string]bool, r restriction) {
	t.Helper()
	want = clone(want)
	for _, d := range devs {
		if !cannot[d.name] || r.hidden(d.name) || r.replace[d.name] != "" {
			continue
		}
		spec := gpuSpec
		if strings.HasPrefix(d.name, "infiniband/") {
			spec = rdmaSpec
		}
		want[spec] = append(want[spec], "cannot be opened: open /dev/"+d.name+": no such device or address (no driver behind the node")
	}
	f := failures(res)
	for spec, msg := range f {
		if _, ok := want[spec]; !ok {
			t.Errorf("%q failed: %s", spec, msg)
		}
	}
	for spec, texts := range want {
		msg, ok := f[spec]
		if !ok {
			t.Errorf("%q did not fail; want it to say %q", spec, texts)
			continue
		}
		for _, l := range findingLines(msg) {
			if !containsAny(l, texts) {
				t.Errorf("%q: unexpected finding %q", spec, l)
			}
		}
		for _, text := range texts {
			if !strings.Contains(msg, text) {
				t.Errorf("%q: %q does not say %q", spec, msg, text)
			}
		}
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func clone(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func TestContainerSuitePassesWhereNothingIsRestricted(t *testing.T) {
	t.Parallel()
	root, devs := fixture(t)
	cannot := unopenable(t, devs)
	memlock, want := openMemlock(t)
	code, res := restricted(t, root, devs, restriction{memlock: memlock})
	expect(t, res, want, devs, cannot, restriction{})
	if (len(want) == 0 && len(cannot) == 0) != (code == 0) {
		t.Errorf("exit %d with failures %v", code, keys(failures(res)))
	}
}

func TestContainerSuiteNamesTheCauseOfEachRestriction(t *testing.T) {
	t.Parallel()
	root, devs := fixture(t)
	cannot := unopenable(t, devs)
	// A container given no GPU: recorded inside it, the node shows the
	// host's GPUs in sysfs and the driver in proc, but NVML's library is
	// not there and neither is libcuda.
	noGPU, _ := fixture(t)
	if err := os.WriteFile(filepath.Join(noGPU, "gdrcheck", "nvml.json"), []byte(`{"init_error": "ERROR_LIBRARY_NOT_FOUND"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noGPU, "gdrcheck", "gpudirect.json"), []byte(`{"cuda": {"available": false, "error": "libcuda.so.1: cannot open shared object file: No such file or directory"}, "verbs": {"available": false, "error": "no GPU to register"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	allGPUs := []string{"nvidiactl", "nvidia-uvm"}
	for i := 0; i < 8; i++ {
		allGPUs = append(allGPUs, fmt.Sprintf("nvidia%d", i))
	}
	cases := []struct {
		name string
		r    restriction
		want map[string][]string // spec -> texts its findings say
	}{
		{"one GPU's device node hidden", restriction{hide: []string{"nvidia1"}}, map[string][]string{
			gpuSpec: {"/dev/nvidia1 for GPU 1 0000:19:00.0 is missing: device not exposed (not mounted into this container; NVIDIA_VISIBLE_DEVICES=all)"},
		}},
		{"/dev/null bind-mounted over a GPU's node", restriction{replace: map[string]string{"nvidia1": "null"}}, map[string][]string{
			gpuSpec: {"/dev/nvidia1 for GPU 1 0000:19:00.0 is character device 1:3, not 195:1: not the GPU's device node (bind-mounted over, or a placeholder)"},
		}},
		{"a placeholder file for a GPU's node", restriction{replace: map[string]string{"nvidia2": "file"}}, map[string][]string{
			gpuSpec: {"/dev/nvidia2 for GPU 2 0000:38:00.0 is a regular file, not character device 195:2: not the GPU's device node (bind-mounted over, or a placeholder)"},
		}},
		{"/dev/null bind-mounted over nvidiactl and a uverbs node", restriction{replace: map[string]string{"nvidiactl": "null", "infiniband/uverbs3": "null"}}, map[string][]string{
			gpuSpec:  {"/dev/nvidiactl for all GPUs is character device 1:3, not 195:255: not NVIDIA's control device"},
			rdmaSpec: {"/dev/infiniband/uverbs3 for NIC mlx5_3 is character device 1:3, not 231:* or 244:*: not an RDMA verbs device"},
		}},
		{"/dev/infiniband hidden", restriction{hide: []string{"infiniband"}}, map[string][]string{
			rdmaSpec: {"/dev/infiniband/uverbs0 for NIC mlx5_0 is missing: device not exposed", "is missing: device not exposed (not mounted into this container; MELLANOX_VISIBLE_DEVICES=all)"},
		}},
		{"memlock of 64 KiB", restriction{memlock: "65536:65536"}, map[string][]string{
			memlockSpec: {"RLIMIT_MEMLOCK is 64 KiB (hard 64 KiB)"},
		}},
		{"memlock of 64 KiB without CAP_IPC_LOCK", restriction{memlock: "65536:65536", dropCap: true}, map[string][]string{
			memlockSpec: {"RLIMIT_MEMLOCK is 64 KiB"},
			capSpec:     {"CAP_IPC_LOCK is missing"},
		}},
		{"no GPU exposed and memlock of 64 KiB", restriction{hide: allGPUs, memlock: "65536:65536", root: noGPU, env: []string{"MELLANOX_VISIBLE_DEVICES=all"}}, map[string][]string{
			gpuSpec:     {"no GPU is exposed to this container: the host has 8 NVIDIA GPU(s) (driver 580.95.05) but there is no /dev/nvidia* here and libnvidia-ml.so.1 is not reachable (NVIDIA_VISIBLE_DEVICES is unset): the container runtime did not expose GPUs (docker/podman --gpus, NVIDIA_VISIBLE_DEVICES with the NVIDIA container runtime, CDI --device nvidia.com/gpu=all, the pyxis/enroot hooks of a job given GPUs)"},
			memlockSpec: {"RLIMIT_MEMLOCK is 64 KiB (hard 64 KiB)"},
		}},
	}
	open, env := openMemlock(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := clone(c.want)
			if c.r.memlock == "" {
				c.r.memlock = open
				for k, v := range env {
					want[k] = v
				}
			}
			code, res := restricted(t, root, devs, c.r)
			if code != 1 || res.Nodes[0].Status != results.NodeEvaluated {
				t.Errorf("exit %d, node %s (%s); want 1, evaluated", code, res.Nodes[0].Status, res.Nodes[0].Reason)
			}
			expect(t, res, want, devs, cannot, c.r)
			for spec, msg := range failures(res) {
				if strings.Contains(msg, "is the NVIDIA driver installed") {
					t.Errorf("%q blames the driver: %s", spec, msg)
				}
			}
		})
	}
}

// On a machine with NVIDIA GPUs the suite judges its own nodes: they are
// what they claim, and /dev/null bind-mounted over the first GPU's (the
// case found on a real H200 node, where only the dma-buf export caught it)
// fails naming both numbers.
func TestContainerSuiteJudgesThisMachinesOwnGPUNodes(t *testing.T) {
	t.Parallel()
	needRoot(t)
	infos, _ := filepath.Glob("/proc/driver/nvidia/gpus/*/information")
	if len(infos) == 0 {
		t.Skip("no NVIDIA GPU on this machine (/proc/driver/nvidia/gpus is empty)")
	}
	h, err := node.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	minor := -1
	for _, g := range node.Collect(h, node.DefaultSources(h)).GPUs {
		if g.Minor != nil && (minor < 0 || *g.Minor < minor) {
			minor = *g.Minor
		}
	}
	if minor < 0 {
		t.Skip("no GPU minor known here")
	}
	for _, bound := range []bool{false, true} {
		out := t.TempDir()
		run := ""
		if bound {
			run = fmt.Sprintf("mount --bind /dev/null /dev/nvidia%d && ", minor)
		}
		run += fmt.Sprintf("exec %s run -q --suites container --out %s", bin, out)
		b, _ := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", run).CombinedOutput()
		res, err := results.Read(out + "/results.json")
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		msg, failed := failures(res)[gpuSpec]
		if !bound && failed {
			t.Errorf("this machine's own nodes fail: %s", msg)
		}
		wantText := fmt.Sprintf(" is character device 1:3, not 195:%d: not the GPU's device node", minor)
		if bound && !strings.Contains(msg, fmt.Sprintf("/dev/nvidia%d for GPU ", minor)) || bound && !strings.Contains(msg, wantText) {
			t.Errorf("with /dev/null over /dev/nvidia%d: %q, want it to say %q", minor, msg, wantText)
		}
	}
}
