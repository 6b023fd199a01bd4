package suites

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/perftest"
	"github.com/gdrcheck/gdrcheck/results"
)

// Config is what the operator expects of the node where it differs from a
// GPUDirect-ready default.
type Config struct {
	// MaxGDRPath is the farthest GPU <-> NIC path class accepted for a
	// GPU's preferred NIC; NCCL's default GDR level is PXB.
	MaxGDRPath node.PathClass
	// AllowCrossNUMA accepts a preferred NIC on another NUMA node.
	AllowCrossNUMA bool
	// Expect is the stored inventory to compare with (--expect), or nil.
	Expect *node.Inventory
	// ExpectFile names it in messages.
	ExpectFile string
	// BAR1CoverMemory requires BAR1 to be at least the GPU's memory (a
	// large-BAR data-center part).
	BAR1CoverMemory bool
	// BAR1MinFreeMiB is the least free BAR1 a GPU must keep for peer
	// mappings.
	BAR1MinFreeMiB uint64
	// RequireNCCLTests fails the NCCL specs when nccl-tests is missing
	// (the operator asked for them); otherwise they are skipped.
	RequireNCCLTests bool
	// AllowMissingBaseline reports comparisons without a matching
	// baseline instead of failing them.
	AllowMissingBaseline bool
	// FallbackRatioLimit is the largest share of the direct bandwidth a
	// forced fallback may keep and still count as detected, where the
	// baseline gives none.
	FallbackRatioLimit float64
}

// DefaultConfig is a GPUDirect RDMA node as NVIDIA designs them.
func DefaultConfig() Config {
	return Config{MaxGDRPath: node.PathPXB, BAR1CoverMemory: true, BAR1MinFreeMiB: 1024, FallbackRatioLimit: 0.5}
}

// Context is what the runner hands to the specs of one run.
type Context struct {
	Evidence *node.Evidence
	Config   Config
	// NCCL holds the nccl-tests runs, when an NCCL area was selected.
	NCCL *nccl.Measurements
	// NCCLErr says why there are none (nccl-tests not found).
	NCCLErr error
	// NCCLBlocked: nccl-tests could not run because the node's CUDA is
	// broken, which the node's setup case reports; the NCCL specs skip
	// rather than fail once each for the same cause.
	NCCLBlocked bool
	// Perftest holds the loopback RDMA runs through each rail NIC, when
	// the fabric area was selected and perftest was found.
	Perftest    []perftest.RailRun
	PerftestErr error
	// Baseline is the profile matched for the node; nil with the reason
	// (no match, naming the profile looked for) in BaselineErr.
	Baseline    *baseline.Baseline
	BaselineErr error
	// BaselineUnknowable: the facts a profile is matched by are missing
	// (NVML could not be used), which the node's setup case already
	// reports; comparisons skip rather than fail a second time.
	BaselineUnknowable bool
	// Scaling holds an allocation's multi-node runs, for the scaling
	// area (Evidence is nil then: the allocation is not one node);
	// ScalingErr says why there are none.
	Scaling    *nccl.Scaling
	ScalingErr error
	// MPI is how the node's MPI and UCX were built, for the mpi area;
	// MPIBench its benchmark runs (nil where the node's evidence failed).
	MPI      *mpi.Facts
	MPIBench *mpi.Benchmarks
	// UCXOrMPI names the UCX and Open MPI installed on the node
	// (mpi.Installed), the users GDRCopy serves; UCXOrMPILooked says
	// the runner looked.
	UCXOrMPI       []string
	UCXOrMPILooked bool

	interrupt context.Context // RunOptions.Ctx
}

// Interrupted says why the run was stopped (a signal), or nil.
func (c *Context) Interrupted() error {
	if c.interrupt == nil || c.interrupt.Err() == nil {
		return nil
	}
	return context.Cause(c.interrupt)
}

var current *Context

// SetContext installs the run's context before RunSpecs; the runner calls
// it once per process.
func SetContext(c *Context) { current = c }

// Current returns the run's context. Specs run only inside a run, so a nil
// context is a programming error and fails the spec loudly.
func Current() *Context {
	if current == nil {
		ginkgo.Fail("gdrcheck: no evidence: specs must run through the gdrcheck runner")
	}
	return current
}

// Planned returns the run's context while Ginkgo builds the spec tree,
// when areas size their specs to what was measured (one per node count);
// nil outside a run, where there is nothing to size.
func Planned() *Context { return current }

// MPIFacts returns the MPI and UCX build facts, skipping the spec where
// they were not collected.
func MPIFacts() mpi.Facts {
	c := Current()
	if c.MPI == nil {
		CannotRun("MPI and UCX were not looked at in this run")
	}
	return *c.MPI
}

// MPIBenchmarks returns the mpi suite's benchmark runs, skipping the
// spec as could-not-run where none were attempted.
func MPIBenchmarks() *mpi.Benchmarks {
	c := Current()
	if c.MPIBench == nil {
		CannotRun("the MPI benchmarks were not run: the node's evidence could not be collected")
	}
	return c.MPIBench
}

// Evidence is Current().Evidence.
func Evidence() *node.Evidence { return Current().Evidence }

// Report entry names the runner looks for.
const (
	MetricEntry = "gdrcheck.metric"
	NoteEntry   = "gdrcheck.note"
)

// Record attaches a metric to the running spec; it lands in results.json
// and in the JUnit system-out.
func Record(m results.Metric) {
	ginkgo.AddReportEntry(MetricEntry, m, ginkgo.ReportEntryVisibilityNever)
}

// Note attaches a readable line to the running spec, kept in the report
// whether the spec passes or fails: the facts behind a verdict.
func Note(format string, args ...any) {
	ginkgo.AddReportEntry(NoteEntry, fmt.Sprintf(format, args...), ginkgo.ReportEntryVisibilityNever)
}

// Warn is a note that says the spec passed with a reservation.
func Warn(format string, args ...any) {
	Note("WARNING: "+format, args...)
}

// Describe declares an area's container, labelled with the area name so
// `--suites` can select it.
func Describe(area string, body func()) bool {
	if _, ok := labels[area]; !ok {
		panic("suites: area " + area + " is not declared in labels.go")
	}
	return ginkgo.Describe(area, ginkgo.Label(area), body)
}
