package nccl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// Plan says what to measure on one node (or one allocation, through the
// launcher bench.NCCLRunner is given).
type Plan struct {
	// Ops are the collectives, by nccl-tests name without _perf; those
	// whose binary is missing are listed in Measurements.Missing, except
	// all_reduce, which must exist.
	Ops []string
	// GPUs per process (-g); bench.NCCLRunner starts one process.
	GPUs int
	// Args for the direct sweep and for the forced fallbacks, which are
	// slower and stop at a smaller size.
	DirectArgs, FallbackArgs []string
	// Fallbacks are the forced modes, run with all_reduce only.
	Fallbacks []Mode
}

// DefaultPlan measures the collectives and the fallbacks that make sense
// on the node: without NICs, the SHM and socket fallbacks; with NICs also
// the GDR, IB and remote-HCA ones.
func DefaultPlan(gpus int, nics bool, remoteHCA string) Plan {
	p := Plan{
		Ops:          []string{"all_reduce", "all_gather", "reduce_scatter", "sendrecv"},
		GPUs:         gpus,
		DirectArgs:   []string{"-b", "8", "-e", "2G", "-f", "2"},
		FallbackArgs: []string{"-b", "1M", "-e", "512M", "-f", "4"},
		Fallbacks:    []Mode{ModeP2PDisabled, ModeP2PSHMDisabled},
	}
	if nics {
		p.Fallbacks = append(p.Fallbacks, ModeGDRLoc, ModeIBDisabled)
		if remoteHCA != "" {
			p.Fallbacks = append(p.Fallbacks, RemoteHCA(remoteHCA))
		}
	}
	return p
}

// SmokePlan is the plan for one GPU, where nccl-tests run one rank that
// moves nothing over a bus: its bandwidths mean nothing, so one short
// all_reduce proves only that NCCL loads and runs.
func SmokePlan(gpus int) Plan {
	return Plan{Ops: []string{"all_reduce"}, GPUs: gpus, DirectArgs: []string{"-b", "8", "-e", "8", "-n", "1", "-w", "1"}}
}

// Measured is one run of a plan.
type Measured struct {
	Op     string
	Mode   Mode
	Result Result
}

// Measurements are a plan's runs and what they were judged against.
type Measurements struct {
	Expectation Expectation
	Why         []string // why that expectation, from the topology
	Runs        []Measured
	Missing     []string // binaries not found
	// Shape is the node the runs were made on, which decides what they
	// can prove: one GPU connects nothing, a forced fallback off NVLink
	// always costs bandwidth, off PCIe P2P not always.
	Shape Shape
}

// Shape is what the evidence says of a node, for the NCCL specs.
type Shape struct {
	GPUs   int  // NVIDIA GPUs
	NVLink bool // every GPU has NVLink up
	NICs   int  // RDMA NICs
}

// ShapeOf reads a node's shape from its evidence.
func ShapeOf(ev *node.Evidence) Shape {
	s := Shape{GPUs: len(ev.GPUs), NICs: len(ev.NICs), NVLink: len(ev.GPUs) > 0}
	for _, g := range ev.GPUs {
		if g.NVLinks.Up == 0 {
			s.NVLink = false
		}
	}
	return s
}

// NCCLVersion is the NCCL the runs report ("2.28.3"), from NCCL's log or
// nccl-tests' header; "" when none says, or without runs.
func (m *Measurements) NCCLVersion() string {
	if m == nil {
		return ""
	}
	for _, r := range m.Runs {
		if r.Result.Log != nil && r.Result.Log.NCCLVersion != "" {
			return r.Result.Log.NCCLVersion
		}
		if r.Result.Tests != nil && r.Result.Tests.NCCLVersion != "" {
			return r.Result.Tests.NCCLVersion
		}
	}
	return ""
}

// Direct returns the direct run of an op.
func (m *Measurements) Direct(op string) (Measured, bool) {
	return m.Find(op, ModeDirect.Name)
}

// Find returns the run of an op in a mode.
func (m *Measurements) Find(op, mode string) (Measured, bool) {
	if m == nil {
		return Measured{}, false
	}
	for _, r := range m.Runs {
		if r.Op == op && r.Mode.Name == mode {
			return r, true
		}
	}
	return Measured{}, false
}

// LogName names a node run's log in bench.NCCLRunner's LogDir.
func LogName(op string, mode Mode) string { return op + "_perf-" + mode.Name + ".log" }

// BusBW is the run's bus bandwidth at the largest message size it
// measured (TestsResult.Largest): NCCL reaches its bandwidth only with
// large messages (small ones measure latency), and baselines state it
// there.
func (r Result) BusBW() float64 {
	if r.Tests == nil {
		return 0
	}
	row, _ := r.Tests.Largest()
	return row.BusBW()
}

// LargestSize is the largest message size the run printed.
func (r Result) LargestSize() int64 {
	if r.Tests == nil {
		return 0
	}
	row, _ := r.Tests.Largest()
	return row.Size
}

// Ratio compares a fallback with the direct run at the largest size both
// measured, since fallbacks stop at a smaller size.
func Ratio(fallback, direct Result) (float64, bool) {
	size := fallback.LargestSize()
	if size == 0 || direct.Tests == nil {
		return 0, false
	}
	d, ok := direct.Tests.BusBWAt(size)
	f, ok2 := fallback.Tests.BusBWAt(size)
	if !ok || !ok2 || d <= 0 {
		return 0, false
	}
	return f / d, true
}

// Report turns a run into results.json's form.
func (m Measured) Report(suite string, exp Expectation) results.Run {
	res := m.Result
	run := results.Run{
		Suite:      suite,
		Tool:       m.Op + "_perf",
		Op:         m.Op,
		Mode:       m.Mode.Name,
		Env:        m.Mode.Env,
		BusBW:      res.BusBW(),
		CPUPct:     res.CPUPct,
		CPUSeconds: res.CPUSeconds,
		Duration:   res.Duration.Seconds(),
	}
	if res.Err != nil {
		run.Error = res.Err.Error()
	}
	if res.Fabric != nil {
		run.Fabric = FabricSummary(*res.Fabric)
	}
	if res.Log != nil {
		run.Ranks = res.Log.Ranks
		run.Transports = res.Log.Transports
		run.Transport = res.Log.Dominant()
		v := res.Log.Verdict(exp)
		run.PathVerdict, run.Reasons = v.Verdict, v.Reasons
	}
	if res.Tests != nil {
		for _, row := range res.Tests.Rows {
			algbw := row.AlgBWOOP
			if row.AlgBWIP > algbw {
				algbw = row.AlgBWIP
			}
			run.Points = append(run.Points, results.Point{Size: row.Size, BusBW: row.BusBW(), AlgBW: algbw, TimeUS: row.TimeOOP, Wrong: row.Wrong})
		}
	}
	if v, ok := run.CPUPerGB(); ok {
		run.CPUSecondsPerGB = &v
	}
	return run
}

// TransportSummary renders class counts as "P2P/direct 48, SHM 8".
func TransportSummary(t map[string]int) string {
	var parts []string
	for c, n := range t {
		parts = append(parts, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// FabricSummary is what results.json keeps of the port counters during a
// run: the bytes each NIC moved and the counters that grew.
func FabricSummary(d node.FabricDelta) *results.Fabric {
	f := &results.Fabric{NICBytes: map[string]uint64{}}
	for _, t := range d.Traffic() {
		if t.Measured {
			f.NICBytes[t.NIC] = t.XmitBytes + t.RcvBytes
		} else {
			f.Unmeasured = append(f.Unmeasured, t.NIC)
		}
	}
	f.TotalBytes = d.TotalBytes()
	for _, g := range d.GrownErrors() {
		f.Errors = append(f.Errors, g.String())
		f.ErrorCounters = append(f.ErrorCounters, results.Counter{NIC: g.NIC, Port: g.Port, Name: g.Name, Delta: g.Delta, Reset: g.Reset})
	}
	for _, g := range d.Grown(node.ClassCongestion) {
		f.Congestion = append(f.Congestion, g.String())
	}
	for _, g := range d.Resets() {
		f.Resets = append(f.Resets, g.String())
	}
	f.Ports = len(d.Ports)
	return f
}

// CPUPerGB is the run's CPU seconds per GB of bus traffic
// (results.CPUPerGB); false for a failed or one-rank run, or where the
// process tree's CPU time was not measured.
func (r Result) CPUPerGB() (float64, bool) {
	if r.CPUSeconds == nil || r.Err != nil || r.Log != nil && r.Log.Ranks == 1 {
		return 0, false
	}
	return results.CPUPerGB(*r.CPUSeconds, r.BusBW(), r.Duration.Seconds())
}
