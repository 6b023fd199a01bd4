// Package mpi holds the specs on CUDA-aware MPI over UCX. Before any
// benchmark: that Open MPI or MPICH was built with CUDA support, that UCX
// has its cuda transports, gdr_copy where it was set up for it, and a NIC
// memory domain registering GPU memory; each misbuild fails naming its
// cause and fix, and a node without MPI or UCX skips as could-not-run.
// Then the benchmarks the cluster provides: the path UCX's protocol
// tables show between two GPUs of the node and across nodes, and the
// forced fallbacks detected by protocol and bandwidth. The UCX path
// verdict (path.go) is also analyze ucx-log's.
package mpi

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

func ucxDirs() []string { return ucx.ModuleDirs }

// Names of the misbuild specs, which the benchmarks' skips point at.
const (
	SpecOpenMPI = "has an Open MPI built with CUDA support"
	SpecMPICH   = "has an MPICH built with CUDA support"
	SpecUCXCUDA = "has UCX with its cuda transports"
)

// judge turns a Check into the running spec's outcome.
func judge(c Check) {
	for _, n := range c.Notes {
		suites.Note("%s", n)
	}
	switch {
	case c.Unknown != "":
		suites.CannotRun(c.Unknown)
	case c.Skip != "":
		suites.NotApplicable(c.Skip)
	}
	var bad []string
	if c.Failed != "" {
		bad = append(bad, c.Failed)
	}
	Expect(bad).To(suites.HaveNoFindings())
}

var _ = suites.Describe("mpi", func() {
	It(SpecOpenMPI, func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		judge(MPICUDA(suites.MPIFacts()))
	})

	It(SpecMPICH, func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		judge(MPICHCUDA(suites.MPIFacts()))
	})

	It(SpecUCXCUDA, func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		judge(UCXCUDA(suites.MPIFacts()))
	})

	It("has gdr_copy where UCX is set up for it", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		judge(GDRCopy(suites.MPIFacts()))
	})

	It("has UCX registering GPU memory with the RDMA NICs", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		var nics []string
		for _, n := range suites.Evidence().NICs {
			nics = append(nics, n.Name)
		}
		judge(UCXRDMA(suites.MPIFacts(), nics))
	})

	// The benchmarks (bench.go), once the build showed no misbuild.
	It(SpecIntraDirect, func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		proveDirect(intraRuns(), mpi.IntraNode)
	})

	It(SpecIntraForced, func() {
		suites.Remedy(results.ActionRerun, results.ScopeNode) // as negative's: not told apart proves nothing
		detectForced(intraRuns(), mpi.IntraNode, mpi.ModeNoCUDAIPC)
	})

	It(SpecInterDirect, func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeNode)
		proveDirect(interRuns(), mpi.InterNode)
	})

	It(SpecInterForced, func() {
		suites.Remedy(results.ActionRerun, results.ScopeNode)
		detectForced(interRuns(), mpi.InterNode, mpi.ModeNoGDR)
	})
})
