package suites_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// failure is what a spec fails with when it states Expect(actual).To(m)
// without a description, as the areas do: "" when it passes.
func failure(actual any, m types.GomegaMatcher) string {
	var msg string
	g := gomega.NewGomega(func(message string, _ ...int) { msg = message })
	g.Expect(actual).To(m)
	return msg
}

// check asserts that m matches actual or not and, through a real Gomega,
// the exact message the spec fails with.
func check(t *testing.T, actual any, m types.GomegaMatcher, match bool, want string) {
	t.Helper()
	g := gomega.NewWithT(t)
	ok, err := m.Match(actual)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.Equal(match))
	if match {
		want = ""
	}
	g.Expect(failure(actual, m)).To(gomega.Equal(want))
	if !match {
		g.Expect(m.FailureMessage(actual)).To(gomega.Equal(want))
	}
}

func u64(v uint64) *uint64 { return &v }

// The ACS findings of fixtures/nodes/h100x8-acs-redirect.
var acsRedirect = []string{
	"GPU 2 0000:38:00.0 -> mlx5_2: bridge 0000:37:00.0 has ACS ReqRedir+ CmpltRedir+; expected no P2P redirect",
	"GPU 2 0000:38:00.0 -> mlx5_2: bridge 0000:37:02.0 has ACS ReqRedir+ CmpltRedir+; expected no P2P redirect",
	"GPU 3 0000:39:00.0 -> mlx5_3: bridge 0000:37:01.0 has ACS ReqRedir+ CmpltRedir+; expected no P2P redirect",
	"GPU 3 0000:39:00.0 -> mlx5_3: bridge 0000:37:03.0 has ACS ReqRedir+ CmpltRedir+; expected no P2P redirect",
}

func TestHaveNoFindings(t *testing.T) {
	cases := []struct {
		name     string
		findings []string
		match    bool
		want     string
	}{
		{"a healthy node has none", nil, true, ""},
		{"an empty list is none", []string{}, true, ""},
		{"one finding is the whole message",
			[]string{"GPU 3 0000:39:00.0 link is downtrained in width: Gen5 x8; expected Gen5 x16"}, false,
			"GPU 3 0000:39:00.0 link is downtrained in width: Gen5 x8; expected Gen5 x16"},
		{"more lead with the first, count the rest and list them all", acsRedirect, false,
			"GPU 2 0000:38:00.0 -> mlx5_2: bridge 0000:37:00.0 has ACS ReqRedir+ CmpltRedir+; expected no P2P redirect (and 3 more)\n" +
				strings.Join(acsRedirect, "\n")},
		{"two findings say one more",
			[]string{"GPU 0 0000:03:00.0: BAR1 256 MiB cannot map its 49140 MiB of memory; expected a large BAR (total >= memory)",
				"GPU 1 0000:04:00.0: BAR1 256 MiB cannot map its 49140 MiB of memory; expected a large BAR (total >= memory)"}, false,
			"GPU 0 0000:03:00.0: BAR1 256 MiB cannot map its 49140 MiB of memory; expected a large BAR (total >= memory) (and 1 more)\n" +
				"GPU 0 0000:03:00.0: BAR1 256 MiB cannot map its 49140 MiB of memory; expected a large BAR (total >= memory)\n" +
				"GPU 1 0000:04:00.0: BAR1 256 MiB cannot map its 49140 MiB of memory; expected a large BAR (total >= memory)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check(t, c.findings, suites.HaveNoFindings(), c.match, c.want)
		})
	}
}

func TestHaveNoFindingsRejectsWhatIsNotAList(t *testing.T) {
	g := gomega.NewWithT(t)
	_, err := suites.HaveNoFindings().Match("GPU 0 0000:18:00.0 has no path to any NIC")
	g.Expect(err).To(gomega.MatchError("HaveNoFindings expects a []string, got string"))
	g.Expect(suites.HaveNoFindings().NegatedFailureMessage([]string(nil))).To(gomega.Equal("expected findings, found none"))
}

func TestMatchInventory(t *testing.T) {
	pix := node.Inventory{Node: "dgx-01", GPUs: []node.InventoryGPU{
		{Index: 4, UUID: "GPU-4a", BusID: "0000:98:00.0", Name: "NVIDIA H100 80GB HBM3", NUMANode: 1, PreferredNIC: "mlx5_4", Path: node.PathPIX},
		{Index: 7, UUID: "GPU-7a", BusID: "0000:b9:00.0", Name: "NVIDIA H100 80GB HBM3", NUMANode: 1, PreferredNIC: "mlx5_7", Path: node.PathPIX},
	}}
	sys := node.Inventory{Node: "dgx-01", GPUs: []node.InventoryGPU{
		{Index: 4, UUID: "GPU-4a", BusID: "0000:98:00.0", Name: "NVIDIA H100 80GB HBM3", NUMANode: 1, PreferredNIC: "mlx5_4", Path: node.PathSYS},
		{Index: 7, UUID: "GPU-7b", BusID: "0000:b9:00.0", Name: "NVIDIA H100 80GB HBM3", NUMANode: 1, PreferredNIC: "mlx5_7", Path: node.PathSYS},
	}}
	check(t, pix, suites.MatchInventory(pix, "dgx-01.yaml"), true, "")
	check(t, sys, suites.MatchInventory(pix, "dgx-01.yaml"), false,
		"GPU 4 0000:98:00.0: rail mlx5_4 (SYS), expected mlx5_4 (PIX) (dgx-01.yaml) (and 2 more)\n"+
			"GPU 4 0000:98:00.0: rail mlx5_4 (SYS), expected mlx5_4 (PIX) (dgx-01.yaml)\n"+
			"GPU 7 0000:b9:00.0: UUID GPU-7b, expected GPU-7a (GPU swapped) (dgx-01.yaml)\n"+
			"GPU 7 0000:b9:00.0: rail mlx5_7 (SYS), expected mlx5_7 (PIX) (dgx-01.yaml)")
	check(t, node.Inventory{Node: "dgx-01", GPUs: pix.GPUs[:1]}, suites.MatchInventory(pix, "dgx-01.yaml"), false,
		"GPU 0000:b9:00.0 (GPU-7a) is missing; expected NVIDIA H100 80GB HBM3 on rail mlx5_7 (PIX) (dgx-01.yaml)")
}

// The chains of fixtures/nodes/h100x8-proprietary-peermem-unregistered:
// the proprietary modules rule out DMA-BUF, the missing peer-memory client
// nvidia_peermem.
var (
	proprietary  = []node.Fact{{Name: "NVIDIA kernel module flavour", Found: "proprietary", Need: "open"}}
	unregistered = []node.Fact{
		{Name: "nvidia_peermem", Found: "loaded", Need: "loaded", OK: true},
		{Name: "peer-memory registration", Found: "no memory_peers client", Need: "memory_peers/nv_mem (MLNX_OFED/DOCA-OFED ib_core)"},
	}
)

func TestHaveAWorkingMechanism(t *testing.T) {
	check(t, node.MechanismVerdict{Mechanism: node.MechanismDMABuf, DecidedBy: "registration"}, suites.HaveAWorkingMechanism(), true, "")
	check(t, node.MechanismVerdict{Mechanism: node.MechanismPeermem, DecidedBy: "compatibility", DMABuf: proprietary}, suites.HaveAWorkingMechanism(), true, "")
	check(t, node.MechanismVerdict{Mechanism: node.MechanismNone, DecidedBy: "registration", DMABuf: proprietary, Peermem: unregistered},
		suites.HaveAWorkingMechanism(), false,
		"no GPUDirect peer-memory mechanism works: no GPU buffer registered with its rail NIC on either path; DMA-BUF: NVIDIA kernel module flavour is proprietary, need open; peermem: peer-memory registration is no memory_peers client, need memory_peers/nv_mem (MLNX_OFED/DOCA-OFED ib_core)")
	check(t, node.MechanismVerdict{Mechanism: node.MechanismNone, DecidedBy: "compatibility", DMABuf: proprietary,
		Peermem: []node.Fact{{Name: "nvidia_peermem", Found: "not loaded", Need: "loaded"}}},
		suites.HaveAWorkingMechanism(), false,
		"no GPUDirect peer-memory mechanism works: DMA-BUF: NVIDIA kernel module flavour is proprietary, need open; peermem: nvidia_peermem is not loaded, need loaded")
	check(t, node.MechanismVerdict{Mechanism: node.MechanismNone, DecidedBy: "compatibility", DMABuf: proprietary,
		Peermem: []node.Fact{{Name: "nvidia_peermem", Found: "not loaded", Need: "loaded"}}},
		suites.HaveAWorkingMechanism("nvidia_peermem is not loaded and module signing refused a module", ""), false,
		"no GPUDirect peer-memory mechanism works: DMA-BUF: NVIDIA kernel module flavour is proprietary, need open; peermem: nvidia_peermem is not loaded, need loaded; cause: nvidia_peermem is not loaded and module signing refused a module")
}

func TestHaveLibcuda(t *testing.T) {
	down := node.CUDAFacts{Error: "cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"}
	check(t, node.CUDAFacts{Available: true, DriverVersion: 13000}, suites.HaveLibcuda("libcuda did not answer"), true, "")
	check(t, down, suites.HaveLibcuda("libcuda did not answer"), false,
		"libcuda did not answer: cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected")
	check(t, down, suites.HaveLibcuda("libcuda does not answer in here"), false,
		"libcuda does not answer in here: cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected")
}

func TestHaveAttemptedRegistrations(t *testing.T) {
	tried := node.VerbsFacts{Available: true, Devices: []string{"mlx5_0"}, Registrations: []node.Registration{{GPU: "0000:18:00.0", NIC: "mlx5_0", Path: node.PathDMABuf, OK: true}}}
	check(t, tried, suites.HaveAttemptedRegistrations(), true, "")
	check(t, node.VerbsFacts{Available: true, Devices: []string{"mlx5_0"}}, suites.HaveAttemptedRegistrations(), false,
		"RDMA devices exist but no registration was attempted: none")
	check(t, node.VerbsFacts{Error: "dlopen libibverbs.so.1: libibverbs.so.1: cannot open shared object file: No such file or directory"},
		suites.HaveAttemptedRegistrations(), false,
		"RDMA devices exist but no registration was attempted: dlopen libibverbs.so.1: libibverbs.so.1: cannot open shared object file: No such file or directory")
}

func TestHaveContainerFacts(t *testing.T) {
	check(t, &node.ContainerFacts{Runtime: "docker"}, suites.HaveContainerFacts(), true, "")
	check(t, (*node.ContainerFacts)(nil), suites.HaveContainerFacts(), false, "no container facts were collected")
}

func TestHaveUnlimitedMemlock(t *testing.T) {
	check(t, node.ContainerFacts{CapIPCLock: true}, suites.HaveUnlimitedMemlock(), true, "")
	// docker's default 64 KiB, in a container without CAP_IPC_LOCK.
	check(t, node.ContainerFacts{MemlockSoft: u64(64 << 10), MemlockHard: u64(64 << 10)}, suites.HaveUnlimitedMemlock(), false,
		"RLIMIT_MEMLOCK is 64 KiB (hard 64 KiB): RDMA registration pins host buffers (NCCL's proxy buffers, verbs queues); expected unlimited (docker --ulimit memlock=-1, Slurm PropagateResourceLimits, ulimit -l unlimited)")
	// 8 MiB from prlimit, as root with the capability.
	check(t, node.ContainerFacts{MemlockSoft: u64(8 << 20), MemlockHard: u64(8 << 20), CapIPCLock: true}, suites.HaveUnlimitedMemlock(), false,
		"RLIMIT_MEMLOCK is 8 MiB (hard 8 MiB): RDMA registration pins host buffers (NCCL's proxy buffers, verbs queues); expected unlimited (docker --ulimit memlock=-1, Slurm PropagateResourceLimits, ulimit -l unlimited); this process has CAP_IPC_LOCK and may pin past it, the workload's user may not")
	// A soft limit under an unlimited hard one, and sizes of every unit.
	check(t, node.ContainerFacts{MemlockSoft: u64(16 << 30)}, suites.HaveUnlimitedMemlock(), false,
		"RLIMIT_MEMLOCK is 16 GiB (hard unlimited): RDMA registration pins host buffers (NCCL's proxy buffers, verbs queues); expected unlimited (docker --ulimit memlock=-1, Slurm PropagateResourceLimits, ulimit -l unlimited)")
	check(t, node.ContainerFacts{MemlockSoft: u64(1536 << 20), MemlockHard: u64(1000)}, suites.HaveUnlimitedMemlock(), false,
		"RLIMIT_MEMLOCK is 1536 MiB (hard 1000 bytes): RDMA registration pins host buffers (NCCL's proxy buffers, verbs queues); expected unlimited (docker --ulimit memlock=-1, Slurm PropagateResourceLimits, ulimit -l unlimited)")
}

func TestHaveCapIPCLock(t *testing.T) {
	check(t, node.ContainerFacts{MemlockSoft: u64(64 << 10), CapIPCLock: true, CapEff: "000001ffffffffff"}, suites.HaveCapIPCLock(), true, "")
	check(t, node.ContainerFacts{MemlockSoft: u64(64 << 10), MemlockHard: u64(64 << 10), CapEff: "000001fffeffbfff"}, suites.HaveCapIPCLock(), false,
		"CAP_IPC_LOCK is missing (CapEff 000001fffeffbfff) and RLIMIT_MEMLOCK is 64 KiB: registrations past the limit fail with ENOMEM; add the capability (docker --cap-add IPC_LOCK) or lift the limit")
}

func TestHaveCompletedDirect(t *testing.T) {
	direct := nccl.Measured{Op: "all_reduce", Mode: nccl.ModeDirect, Result: nccl.Result{Log: &nccl.LogSummary{}}}
	failed := direct
	failed.Result.Err = errors.New("all_reduce_perf exited 1: NCCL WARN Cuda failure 'out of memory'")
	shm := nccl.Measured{Op: "all_reduce", Mode: nccl.ModeP2PDisabled}
	check(t, &nccl.Measurements{Runs: []nccl.Measured{direct, shm}}, suites.HaveCompletedDirect("all_reduce"), true, "")
	check(t, &nccl.Measurements{Runs: []nccl.Measured{shm}}, suites.HaveCompletedDirect("all_reduce"), false,
		"the direct all_reduce_perf run failed: not run")
	check(t, &nccl.Measurements{Runs: []nccl.Measured{failed, shm}}, suites.HaveCompletedDirect("all_reduce"), false,
		"the direct all_reduce_perf run failed: all_reduce_perf exited 1: NCCL WARN Cuda failure 'out of memory'")
}

func TestHaveCompleted(t *testing.T) {
	shm := nccl.Measured{Op: "all_reduce", Mode: nccl.ModeP2PDisabled, Result: nccl.Result{Log: &nccl.LogSummary{}}}
	check(t, shm, suites.HaveCompleted(), true, "")
	shm.Result.Err = errors.New("all_reduce_perf: timed out after 10m0s")
	check(t, shm, suites.HaveCompleted(), false, "p2p-disabled run failed: all_reduce_perf: timed out after 10m0s")
}

func TestHaveNCCLLog(t *testing.T) {
	check(t, nccl.Result{Log: &nccl.LogSummary{NCCLVersion: "2.27.7"}}, suites.HaveNCCLLog("all_reduce_perf", "NCCL_DEBUG=INFO unset?"), true, "")
	check(t, nccl.Result{}, suites.HaveNCCLLog("all_reduce_perf", "NCCL_DEBUG=INFO unset?"), false,
		"all_reduce_perf printed no NCCL log: cannot tell the path (NCCL_DEBUG=INFO unset?)")
	check(t, nccl.Result{}, suites.HaveNCCLLog("p2p-shm-disabled run"), false,
		"p2p-shm-disabled run printed no NCCL log: cannot tell the path")
}

func TestBeTheDirectReference(t *testing.T) {
	check(t, nccl.Verdict{Verdict: nccl.VerdictDirect}, suites.BeTheDirectReference(), true, "")
	check(t, nccl.Verdict{Verdict: nccl.VerdictFallback, Reasons: []string{
		"2 of 4 connections used NET/IB without GDRDMA (channels 01 and 03, rank 7 -> 0 via NET/IB/1 on kg35-nvl03); the data is staged through host memory",
		"1 of 4 connections used SHM",
	}}, suites.BeTheDirectReference(), false,
		"the reference run is not direct (fallback): 2 of 4 connections used NET/IB without GDRDMA (channels 01 and 03, rank 7 -> 0 via NET/IB/1 on kg35-nvl03); the data is staged through host memory; forced fallbacks cannot be judged against it")
	check(t, nccl.Verdict{Verdict: nccl.VerdictUnknown}, suites.BeTheDirectReference(), false,
		"the reference run is not direct (unknown): no reason given; forced fallbacks cannot be judged against it")
}

func TestBeDetected(t *testing.T) {
	// The recorded H200 pair: P2P over NVLink, SHM with P2P disabled.
	check(t, suites.ForcedFallback{Env: nccl.ModeP2PDisabled.Env, Was: "P2P/direct", Now: "SHM", Ratio: 0.084, Compared: true, Limit: 0.5},
		suites.BeDetected(), true, "")
	check(t, suites.ForcedFallback{Env: nccl.ModeP2PDisabled.Env, Was: "P2P/direct", Now: "P2P/direct", Ratio: 1, Compared: true, Limit: 0.5},
		suites.BeDetected(), false,
		"forced fallback NCCL_P2P_DISABLE=1 not detected: transport stayed P2P/direct; busbw kept 1.00 of the direct run (limit 0.50)")
	check(t, suites.ForcedFallback{Env: nccl.ModeP2PSHMDisabled.Env, Was: "P2P/direct", Now: "NET/Socket", Ratio: 0.5, Compared: true, Limit: 0.5},
		suites.BeDetected(), false,
		"forced fallback NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 not detected: busbw kept 0.50 of the direct run (limit 0.50)")
	check(t, suites.ForcedFallback{Env: nccl.RemoteHCA("").Env, Was: "NET/IB/GDRDMA", Now: "NET/IB/GDRDMA", Limit: 0.9},
		suites.BeDetected(), false,
		"forced fallback NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_HCA= not detected: transport stayed NET/IB/GDRDMA; no common message size to compare bandwidth at")
}

func TestTheFrameworkMatchersSayWhatIsMissing(t *testing.T) {
	noMatch := errors.New(`no baseline matches profile {name: this node, gpu: {model: "NVIDIA H200"}, gpus_per_node: 1}`)
	check(t, &suites.Context{BaselineErr: noMatch}, suites.HaveMatchedBaseline(), false,
		`no baseline matches profile {name: this node, gpu: {model: "NVIDIA H200"}, gpus_per_node: 1} (--allow-missing-baseline only reports)`)
	check(t, &suites.Context{}, suites.HaveMatchedBaseline(), false, "no baseline matched this node (--allow-missing-baseline only reports)")

	notFound := errors.New("nccl-tests binary not found: all_reduce_perf in \"/opt/nccl-tests\"")
	check(t, &suites.Context{NCCLErr: notFound}, suites.HaveNCCLRuns(), false, `nccl-tests binary not found: all_reduce_perf in "/opt/nccl-tests"`)
	check(t, &suites.Context{NCCL: &nccl.Measurements{}}, suites.HaveNCCLRuns(), true, "")

	ev := &node.Evidence{Problems: []node.Problem{{Source: "nvml", Message: "NVML: Driver/library version mismatch", Fatal: true}}}
	check(t, ev, suites.HaveCollectedEvidence(), false, "node evidence could not be collected: NVML: Driver/library version mismatch")
	check(t, &node.Evidence{}, suites.HaveCollectedEvidence(), true, "")
	noGPU := &node.Evidence{Problems: []node.Problem{
		{Source: "nvml", Message: "NVML: initialising: ERROR_DRIVER_NOT_LOADED", Incomplete: true, Cause: "the NVIDIA kernel module is not loaded"},
		{Source: "gpus", Message: "no NVIDIA GPU found", Fatal: true},
	}}
	check(t, noGPU, suites.HaveCollectedEvidence(), false, "node evidence could not be collected: NVML: initialising: ERROR_DRIVER_NOT_LOADED: the NVIDIA kernel module is not loaded; no NVIDIA GPU found")

	mismatch := &node.Evidence{Problems: []node.Problem{
		{Source: "rdmamap", Message: "rdmamap over /x: not permitted"},
		{Source: "nvml", Message: "NVML: initialising: ERROR_LIB_RM_VERSION_MISMATCH", Incomplete: true, Cause: "Driver/library version mismatch: reload the modules or reboot"},
		{Source: "libcuda", Message: "libcuda: libcuda.so.1 not found", Incomplete: true},
	}}
	check(t, mismatch, suites.HaveCollectedEvidence(), true, "")
	check(t, mismatch, suites.HaveCompleteEvidence(), false, "node evidence is incomplete: NVML: initialising: ERROR_LIB_RM_VERSION_MISMATCH: Driver/library version mismatch: reload the modules or reboot; libcuda: libcuda.so.1 not found")
	check(t, &node.Evidence{Problems: mismatch.Problems[:1]}, suites.HaveCompleteEvidence(), true, "")

	check(t, &suites.Context{Scaling: &nccl.Scaling{}, ScalingErr: notFound}, suites.HaveScalingRuns(), false,
		`no multi-node runs: nccl-tests binary not found: all_reduce_perf in "/opt/nccl-tests"`)
	check(t, &suites.Context{Scaling: &nccl.Scaling{}}, suites.HaveScalingRuns(), true, "")
}
