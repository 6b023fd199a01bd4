package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// EmulatedLaunch plays nodes on one machine: mpirun starts every rank
// through `gdrcheck emulated-rank` (self), which gives the rank the
// hostname and NCCL_HOSTID of its node in a UTS namespace of its own.
// nccl-tests then counts local ranks per "host" and NCCL sees separate
// nodes and connects them over the network; without distinct identities
// it refuses two ranks on one GPU ("Duplicate GPU detected"). Needs root.
func EmulatedLaunch(self string, physicalGPUs int) Launch {
	return Launch{"mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "{ranks}",
		self, "emulated-rank", "--nodes", "{nodelist}", "--gpus-per-node", "{gpus}", "--physical-gpus", strconv.Itoa(physicalGPUs), "--"}
}

// EmulatedNodes names n emulated nodes: emu1 ... emuN.
func EmulatedNodes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "emu" + strconv.Itoa(i+1)
	}
	return out
}

// rankEnv are the variables launchers set to a process's global rank.
var rankEnv = []string{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}

// EmulatedRank turns this process into rank R of its emulated node and
// execs argv: node nodes[R / gpusPerNode] gets its own UTS namespace,
// hostname and NCCL_HOSTID. With enough physical GPUs each node gets its
// own (CUDA_VISIBLE_DEVICES); otherwise the nodes share them.
// GDRCHECK_EMULATE_PIN="node=cpu,..." pins a node's ranks to one CPU, to
// rehearse a slow node (with a busy loop on that CPU). It returns only on
// error.
func EmulatedRank(nodes []string, gpusPerNode, physicalGPUs int, argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("emulated-rank: no command to run")
	}
	gpusPerNode = max(gpusPerNode, 1)
	rank, err := globalRank()
	if err != nil {
		return err
	}
	if rank/gpusPerNode >= len(nodes) {
		return fmt.Errorf("emulated-rank: rank %d is beyond %d node(s) of %d GPU(s)", rank, len(nodes), gpusPerNode)
	}
	node := nodes[rank/gpusPerNode]
	env := append(os.Environ(), "NCCL_HOSTID="+node)
	if first := (rank / gpusPerNode) * gpusPerNode; physicalGPUs >= len(nodes)*gpusPerNode {
		var ids []string
		for i := 0; i < gpusPerNode; i++ {
			ids = append(ids, strconv.Itoa(first+i))
		}
		env = append(env, "CUDA_VISIBLE_DEVICES="+strings.Join(ids, ","))
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("emulated-rank: %w", err)
	}
	// The namespace belongs to this thread, which exec then turns into
	// the whole process.
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("emulated-rank: a UTS namespace for %s: %w (emulated nodes need root)", node, err)
	}
	if err := unix.Sethostname([]byte(node)); err != nil {
		return fmt.Errorf("emulated-rank: hostname %s: %w", node, err)
	}
	if cpu, ok := pinFor(node); ok {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("emulated-rank: pinning %s to CPU %d: %w", node, cpu, err)
		}
	}
	return fmt.Errorf("emulated-rank: exec %s: %w", path, syscall.Exec(path, argv, env))
}

func globalRank() (int, error) {
	for _, k := range rankEnv {
		if v := os.Getenv(k); v != "" {
			r, err := strconv.Atoi(v)
			if err != nil || r < 0 {
				return 0, fmt.Errorf("emulated-rank: %s=%q is not a rank", k, v)
			}
			return r, nil
		}
	}
	return 0, fmt.Errorf("emulated-rank: no rank in the environment (%s): start it through mpirun or srun", strings.Join(rankEnv, ", "))
}

func pinFor(node string) (int, bool) {
	for _, kv := range strings.Split(os.Getenv("GDRCHECK_EMULATE_PIN"), ",") {
		n, c, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || n != node {
			continue
		}
		if cpu, err := strconv.Atoi(c); err == nil && cpu >= 0 {
			return cpu, true
		}
	}
	return 0, false
}
