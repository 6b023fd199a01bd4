package mpi

import (
	"errors"
	"fmt"
	"strings"

	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

// Names of the benchmark specs.
const (
	SpecIntraDirect = "proves the direct path between two GPUs in a node"
	SpecIntraForced = "detects the fallback forced by UCX_TLS=^cuda_ipc in a node"
	SpecInterDirect = "proves GPUDirect RDMA between two nodes"
	SpecInterForced = "detects the fallback forced by UCX_IB_GPU_DIRECT_RDMA=no between nodes"
)

// interNodeRatioLimit is the largest share of the direct bandwidth a
// host-staged run between nodes may keep and count as detected where no
// baseline states it. UCX's pipeline through host memory keeps much of a
// single NIC's rate: over HDR the 4 MiB GPU-to-GPU latency was 281 µs
// with GPUDirect RDMA and 443 µs without (a share of 0.63, the OSU runs
// in fixtures/corpus/INDEX.md), so a tenth lost is what is required.
const interNodeRatioLimit = 0.9

// intraRuns returns the runs, skipping where a node has one GPU.
// A ucx_perftest pair needs one GPU: its two processes share it.
func intraRuns() *mpi.Benchmarks {
	b := suites.Current().MPIBench
	n := len(suites.Evidence().GPUs)
	switch {
	case n == 1 && b != nil && b.Tool == mpi.ToolPerftestPair:
		suites.Note("one GPU: the ucx_perftest server and client share it, so cuda_ipc is between two processes on GPU0")
	case n < 2:
		suites.NotApplicable(fmt.Sprintf("%d GPU(s): there is no second GPU in this node to move GPU memory to; prove the path between nodes with --mpi-internode-launcher, or between two processes on the GPU with --ucx-perftest", n))
	}
	return ran(suites.MPIBenchmarks())
}

func interRuns() *mpi.Benchmarks {
	if len(suites.Evidence().NICs) == 0 {
		suites.NotApplicable("no RDMA NICs on this node: there is no GPUDirect RDMA path between nodes to prove")
	}
	b := suites.MPIBenchmarks()
	if !b.InterNode {
		suites.NotApplicable("no --mpi-internode-launcher: give one that starts a rank here and one on another node, e.g. \"mpirun --mca pml ucx -np {ranks} --host thisnode,othernode\", or \"srun -N 2 --ntasks-per-node=1\" inside an allocation")
	}
	return ran(b)
}

// ran skips the spec as could-not-run where the benchmarks were not run:
// a misbuild, no tool, libcuda unusable.
func ran(b *mpi.Benchmarks) *mpi.Benchmarks {
	switch {
	case b.Blocked != "":
		suites.CannotRun("not run: the MPI/UCX build is broken (" + b.Blocked + ")")
	case b.Err != nil:
		suites.CannotRun(b.Err.Error())
	}
	return b
}

func nodeInfo() *ucx.Info {
	if i, ok := suites.MPIFacts().UCXInfoParsed(); ok {
		return &i
	}
	return nil
}

// proveDirect requires the direct runs of a scope to have completed and
// every GPU-memory transfer in UCX's tables to be direct: cuda_ipc or
// RDMA zero-copy.
func proveDirect(b *mpi.Benchmarks, scope string) {
	var bad, unknown []string
	ops := []string{"bw", "latency"}
	if b.Tool == mpi.ToolPerftestPair && scope == mpi.IntraNode {
		ops = ops[:1] // a pair runs tag_bw alone (mpi.PairSpecs)
	}
	for _, op := range ops {
		r, ok := b.Find(op, scope, mpi.ModeDirect.Name)
		if !ok {
			suites.CannotRun(fmt.Sprintf("no %s run %s: the run was stopped before it", op, scope))
		}
		if r.Err != nil {
			if errors.Is(r.Err, mpi.ErrUnfit) {
				suites.CannotRun(r.Err.Error())
			}
			bad = append(bad, fmt.Sprintf("%s %s %s failed: %s", r.Spec.Binary, op, scope, r.Err))
			continue
		}
		record(r, scope+" direct")
		if r.UCX == nil {
			unknown = append(unknown, fmt.Sprintf("%s %s printed no UCX protocol table with UCX_PROTO_INFO=y: UCX is older than 1.13, or the MPI does not run over UCX (--mca pml ucx)", r.Spec.Binary, op))
			continue
		}
		v := JudgeLog(r.UCX, nodeInfo())
		if v.Failure != "" {
			bad = append(bad, fmt.Sprintf("%s %s %s: UCX failed: %s", r.Spec.Binary, op, scope, v.Failure))
		}
		switch v.Outcome {
		case OutcomeFallback:
			bad = append(bad, fmt.Sprintf("%s %s %s: UCX staged GPU memory through the host: %s", r.Spec.Binary, op, scope, v.Reasons[0]))
			bad = append(bad, v.Hints...)
		case OutcomeDirect:
			suites.Note("%s %s %s: %s (%s)", r.Spec.Binary, op, scope, Dominant(v), v.Reasons[len(v.Reasons)-1])
			if scope == mpi.InterNode && Dominant(v) == PathIPC {
				suites.Note("cuda_ipc between nodes: multi-node NVLink, not the NICs")
			}
		default:
			unknown = append(unknown, fmt.Sprintf("%s %s: %s", r.Spec.Binary, op, v.Reasons[0]))
		}
	}
	if len(bad) == 0 && len(unknown) > 0 {
		suites.CannotRun(strings.Join(unknown, "; "))
	}
	Expect(bad).To(suites.HaveNoFindings())
}

// detectForced requires a forced fallback to show in UCX's tables (the
// GPU path leaves the direct run's) and in the bandwidth, as the negative
// suite requires of NCCL's.
func detectForced(b *mpi.Benchmarks, scope string, mode mpi.BenchMode) {
	d, ok := b.Find("bw", scope, mpi.ModeDirect.Name)
	if !ok || d.Err != nil || d.UCX == nil {
		suites.NotApplicable("no direct " + scope + " run with UCX protocol tables to compare with")
	}
	dv := JudgeLog(d.UCX, nodeInfo())
	was := Dominant(dv)
	switch {
	case dv.Outcome != OutcomeDirect:
		suites.NotApplicable(fmt.Sprintf("the direct %s run did not take a direct path (%s): there is no direct path to force a fallback from", scope, dv.Outcome))
	case mode.Name == mpi.ModeNoCUDAIPC.Name && was != PathIPC:
		suites.NotApplicable(fmt.Sprintf("the direct %s run took %s, not cuda_ipc: UCX_TLS=^cuda_ipc forces nothing here", scope, was))
	case mode.Name == mpi.ModeNoGDR.Name && was != PathRDMA:
		suites.NotApplicable(fmt.Sprintf("the direct %s run took %s, not the NICs: UCX_IB_GPU_DIRECT_RDMA=no forces nothing here", scope, was))
	}
	f, ok := b.Find("bw", scope, mode.Name)
	if !ok {
		suites.CannotRun("no " + mode.Name + " run: the run was stopped before it")
	}
	if f.Err != nil {
		Expect([]string{fmt.Sprintf("%s %s (%s) failed: %s", f.Spec.Binary, scope, strings.Join(mode.Env, " "), f.Err)}).To(suites.HaveNoFindings())
	}
	if f.UCX == nil {
		suites.CannotRun(fmt.Sprintf("the %s run printed no UCX protocol table: its path cannot be told", mode.Name))
	}
	fv := JudgeLog(f.UCX, nodeInfo())
	if fv.Outcome == OutcomeUnknown {
		suites.CannotRun(fmt.Sprintf("the %s run's UCX tables judge no GPU-memory transfer: %s", mode.Name, fv.Reasons[0]))
	}
	now := Dominant(fv)
	subject := scope + " " + mode.Name
	record(f, subject)
	ratio, compared := mpi.Ratio(f, d)
	limit, required := ratioLimit(mode.Name, scope)
	if compared {
		suites.RecordRatio(subject, ratio, limit, required, fmt.Sprintf("%s kept %.2f of the direct bandwidth: off PCIe peer-to-peer it need not cost much, so the protocol detects it", mode.Name, ratio))
	}
	suites.Note("%s: %s, was %s (%s)", subject, now, was, fv.Reasons[0])
	var costs []string
	dc, dok := runCPUPerGB(d)
	fc, fok := runCPUPerGB(f)
	if m, finding, ok := suites.CPUCost(subject, dc, fc, dok, fok); ok {
		suites.Record(m)
		suites.Note("%s: %.4g CPU s/GB, direct %.4g (%.1fx)", subject, fc, dc, fc/dc)
		if finding != "" {
			costs = append(costs, finding)
		}
	}
	if mode.Name == mpi.ModeNoGDR.Name && fv.Outcome != OutcomeFallback {
		// Off GPUDirect RDMA the only way left is through host memory;
		// anything else means the variable did not reach UCX.
		now = was
	}
	Expect(suites.ForcedFallback{Env: mode.Env, Was: was, Now: now, Ratio: ratio, Compared: compared, Limit: limit, ByTransport: !required}).To(suites.BeDetected())
	Expect(costs).To(suites.HaveNoFindings())
}

// ratioLimit is the largest bandwidth share a forced run may keep: a
// baseline's where it states one, else inside a node the configured one
// where the GPUs are on NVLink (off PCIe peer-to-peer the protocol
// alone detects it), and between nodes interNodeRatioLimit.
func ratioLimit(mode, scope string) (float64, bool) {
	if l, ok := suites.RatioLimit(mode, nccl.Shape{}); ok {
		return l, true
	}
	if scope == mpi.InterNode {
		return interNodeRatioLimit, true
	}
	return suites.Current().Config.FallbackRatioLimit, nccl.ShapeOf(suites.Evidence()).NVLink
}

// record attaches a run's bandwidth or latency and its CPU per GB.
func record(r mpi.BenchRun, subject string) {
	if bw, size, ok := r.BandwidthGBs(); ok {
		suites.Record(results.Metric{Name: "p2p_bw", Value: bw, Unit: "GB/s", Subject: subject})
		suites.Note("%s %s: %.2f GB/s at %s", r.Spec.Binary, subject, bw, results.SizeString(size))
	}
	if lat, size, ok := r.LatencyUS(); ok {
		suites.Record(results.Metric{Name: "p2p_latency", Value: lat, Unit: "us", Subject: subject})
		suites.Note("%s %s: %.2f us at %d bytes", r.Spec.Binary, subject, lat, size)
	}
	if c, ok := runCPUPerGB(r); ok {
		suites.Record(results.Metric{Name: results.CPUPerGBMetric, Value: c, Unit: "s/GB", Subject: subject})
	}
}

// runCPUPerGB is a bandwidth run's CPU seconds per GB moved
// (results.CPUPerGB).
func runCPUPerGB(r mpi.BenchRun) (float64, bool) {
	bw, _, ok := r.BandwidthGBs()
	if !ok || r.CPUSeconds == nil || r.Err != nil {
		return 0, false
	}
	return results.CPUPerGB(*r.CPUSeconds, bw, r.Duration.Seconds())
}
