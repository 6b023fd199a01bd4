package results

import (
	"encoding/json"
	"strings"
	"time"
)

// Schema names the results.json format; bump it when a field changes
// meaning. v2 added refs (refs.go): a merged job's node entries that
// stand for the node's own file.
const Schema = "gdrcheck.results/v2"

// Node statuses.
const (
	NodeEvaluated   = "evaluated"   // specs ran
	NodeUnevaluable = "unevaluable" // evidence could not be collected: exit 2
	NodeMissing     = "missing"     // the node never reported (Slurm step lost)
	NodeInterrupted = "interrupted" // a signal stopped the run before every spec ran: exit 2
)

// Spec states, as Ginkgo names them.
const (
	StatePassed  = "passed"
	StateFailed  = "failed"
	StateSkipped = "skipped"
	StatePending = "pending"
)

// Results is results.json.
type Results struct {
	Schema   string    `json:"schema"`
	Tool     Tool      `json:"tool"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Nodes    []Node    `json:"nodes"`
	// Runs are measurements across nodes (multi-node collectives,
	// scaling); node-local ones are in Node.Runs.
	Runs []Run `json:"runs,omitempty"`
	// groups are a merged job's folded nodes as read (folded.go), for
	// ReadFolded alone.
	groups []Node
}

// Tool says which gdrcheck made the results and how it was called.
type Tool struct {
	Version string   `json:"version"`
	Args    []string `json:"args,omitempty"`
	Suites  []string `json:"suites,omitempty"`
}

// Node is one node's run.
type Node struct {
	Name     string          `json:"name"`
	Status   string          `json:"status"`
	Reason   string          `json:"reason,omitempty"` // why unevaluable or missing
	Facts    []Fact          `json:"facts,omitempty"`  // GPU model, driver, profile...
	GPUs     []GPU           `json:"gpus,omitempty"`   // each GPU's rail, link and BAR1
	Suites   []Suite         `json:"suites"`
	Evidence json.RawMessage `json:"evidence,omitempty"` // harness/node.Evidence
	Runs     []Run           `json:"runs,omitempty"`     // measurements on this node alone
	Profile  string          `json:"profile,omitempty"`  // the baseline profile matched
	// Action is what remediation does about the node: the most
	// disruptive action of its failing and unevaluable specs, or of its
	// status where it was not evaluated (Settle sets it); empty for a
	// node with nothing to do.
	Action   Action    `json:"action,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Ref is, in a merged job's results.json, the node's own file that
	// stands for it (refs.go); Scan reads it in its place, so a node
	// never carries one past a read.
	Ref string `json:"ref,omitempty"`
	// Group is the alike nodes this one stands for in a folded job
	// (fold.go); never in results.json.
	Group *Group `json:"-"`

	// Steps are the run's steps that are not specs, each with its wall
	// time (steps.go), in the order they ran.
	Steps []Step `json:"steps,omitempty"`
}

// GPU is one GPU as monitoring and comparisons need it, without the raw
// evidence: its preferred rail NIC and the path to it, its PCIe link now
// and at most, and its BAR1 aperture.
type GPU struct {
	Index        int     `json:"index"` // NVML's; -1 where NVML did not see it
	BusID        string  `json:"bus_id"`
	Name         string  `json:"name,omitempty"`
	NUMA         int     `json:"numa_node"`
	NIC          string  `json:"nic,omitempty"`  // preferred rail NIC
	Path         string  `json:"path,omitempty"` // PIX, PXB, P2C, PHB, NODE, SYS
	PCIeGen      int     `json:"pcie_gen,omitempty"`
	PCIeMaxGen   int     `json:"pcie_max_gen,omitempty"`
	PCIeWidth    int     `json:"pcie_width,omitempty"`
	PCIeMaxWidth int     `json:"pcie_max_width,omitempty"`
	BAR1TotalMiB *uint64 `json:"bar1_total_mib,omitempty"`
	BAR1FreeMiB  *uint64 `json:"bar1_free_mib,omitempty"`
}

// Fact is a named node fact; a slice keeps the order people read them in.
type Fact struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Suite is one spec area (topology, kernel...) on one node.
type Suite struct {
	Name  string `json:"name"`
	Specs []Spec `json:"specs"`
}

// Spec is one It, or a failed setup node.
type Spec struct {
	Name     string  `json:"name"` // stable: no labels, no node type
	State    string  `json:"state"`
	Duration float64 `json:"duration_s"`
	Message  string  `json:"message,omitempty"` // failure or skip reason
	// SkipKind says why a skipped spec did not run: SkipNotApplicable
	// (the node's shape or the operator's settings rule it out) or
	// SkipCannotRun (it applies, but a tool, permission or driver was
	// missing here); empty for a spec that ran.
	SkipKind string   `json:"skip_kind,omitempty"`
	Location string   `json:"location,omitempty"`
	Output   string   `json:"output,omitempty"` // diagnostics captured for failures
	Metrics  []Metric `json:"metrics,omitempty"`
	Notes    []string `json:"notes,omitempty"` // the facts behind the verdict; WARNING: lines
	Setup    bool     `json:"setup,omitempty"` // BeforeSuite/AfterSuite
	// Action, Scope and Entity say what remediation does about a failing
	// or unevaluable spec (action.go), decided in suites/ with the cause:
	// Entity is what the scope names (a GPU's bus id, a NIC, "mlx5_3/1",
	// the node's name), several of one scope joined by ",".
	Action Action `json:"action,omitempty"`
	Scope  Scope  `json:"scope,omitempty"`
	Entity string `json:"entity,omitempty"`
}

// Warnings are the notes that qualify a pass.
func (s Spec) Warnings() []string {
	var w []string
	for _, n := range s.Notes {
		if strings.HasPrefix(n, "WARNING: ") {
			w = append(w, strings.TrimPrefix(n, "WARNING: "))
		}
	}
	return w
}

// Metric is a measured value, with its baseline where one applies.
type Metric struct {
	Name     string   `json:"name"`
	Value    float64  `json:"value"`
	Unit     string   `json:"unit,omitempty"`
	Baseline *float64 `json:"baseline,omitempty"`
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	Verdict  string   `json:"verdict,omitempty"` // pass, fail, info
	Subject  string   `json:"subject,omitempty"` // what was measured: a GPU, a NIC, a pair
}

// Counts are spec totals.
type Counts struct {
	Tests, Failed, Skipped, Passed int
}

// Counts totals a suite's specs.
func (s Suite) Counts() Counts {
	var c Counts
	for _, sp := range s.Specs {
		c.Tests++
		switch sp.State {
		case StatePassed:
			c.Passed++
		case StateSkipped, StatePending:
			c.Skipped++
		default:
			c.Failed++
		}
	}
	return c
}

// Counts totals a node's specs.
func (n Node) Counts() Counts {
	var c Counts
	for _, s := range n.Suites {
		sc := s.Counts()
		c.Tests += sc.Tests
		c.Passed += sc.Passed
		c.Skipped += sc.Skipped
		c.Failed += sc.Failed
	}
	return c
}

// Fact returns a fact's value.
func (n Node) Fact(name string) string {
	for _, f := range n.Facts {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Exit codes a CI gate can rely on.
const (
	ExitPassed      = 0 // every spec passed
	ExitFailed      = 1 // a spec failed
	ExitUnevaluable = 2 // a node could not be evaluated or never reported
)

// ExitCode is 2 if any node could not be evaluated, else 1 if any spec
// failed, else 2 if a selected suite could not run on a node
// (Suite.CannotRun: nccl-tests missing...), else 0. A failure outranks a
// suite that could not run: the node is known bad either way.
func (r *Results) ExitCode() int {
	code := ExitPassed
	for _, n := range r.Nodes {
		if n.Status != NodeEvaluated {
			return ExitUnevaluable
		}
		if n.Counts().Failed > 0 {
			code = ExitFailed
		}
	}
	if code == ExitPassed && len(r.CannotRun()) > 0 {
		return ExitUnevaluable
	}
	return code
}

// Run is one measured run of a benchmark (nccl-tests, perftest): what was
// forced, which path the library took, and the bandwidth per message size.
type Run struct {
	Suite string `json:"suite"` // the area that ran it: collectives, negative...
	Tool  string `json:"tool"`  // all_reduce_perf, ib_write_bw
	Op    string `json:"op"`    // all_reduce, all_gather, sendrecv...
	// Mode is what the run forced: "direct" for none, else the fallback
	// (p2p-disabled, p2p-shm-disabled, gdr-loc, ib-disabled, remote-hca).
	Mode  string   `json:"mode"`
	Env   []string `json:"env,omitempty"` // NCCL_*=... set for the run
	Nodes []string `json:"nodes,omitempty"`
	Ranks int      `json:"ranks,omitempty"`
	// Transport is the dominant transport class NCCL reported
	// (P2P/CUMEM, SHM, NET/IB/GDRDMA, NET/Socket...); Transports counts
	// every class.
	Transport   string         `json:"transport,omitempty"`
	Transports  map[string]int `json:"transports,omitempty"`
	PathVerdict string         `json:"path_verdict,omitempty"` // PathDirect, PathFallback or PathUnknown
	Reasons     []string       `json:"reasons,omitempty"`
	Points      []Point        `json:"points,omitempty"`
	// BusBW is the bus bandwidth at the large message sizes, in GB/s.
	BusBW float64 `json:"busbw_gbps"`
	// RatioToDirect is BusBW over the direct run's, for forced modes.
	RatioToDirect *float64 `json:"ratio_to_direct,omitempty"`
	CPUPct        *float64 `json:"cpu_pct,omitempty"` // host CPU use during the run
	// CPUSeconds is the user + system CPU time of the benchmark's process
	// tree (its rusage); CPUPerGB divides it by the bus traffic.
	CPUSeconds *float64 `json:"cpu_s,omitempty"`
	// CPUSecondsPerGB is CPUPerGB(), written for readers of results.json.
	CPUSecondsPerGB *float64 `json:"cpu_s_per_gb,omitempty"`
	Baseline        *Band    `json:"baseline,omitempty"`
	Error           string   `json:"error,omitempty"`
	Duration        float64  `json:"duration_s"`
	// Log is the raw output, relative to the results directory.
	Log string `json:"log,omitempty"`
	// Unit of BusBW when it is not GB/s (perftest reports Gb/s).
	Unit string `json:"unit,omitempty"`
	// Mem is where a perftest run's buffers lived: host, cuda,
	// cuda-dmabuf.
	Mem string `json:"mem,omitempty"`
	// Fabric is what the RDMA ports counted during the run.
	Fabric *Fabric `json:"fabric,omitempty"`
}

// Path verdicts of a run (Run.PathVerdict): what harness/nccl read from
// NCCL's channel lines against the topology.
const (
	PathDirect   = "direct"   // every connection took the direct path the topology allows
	PathFallback = "fallback" // some connection was staged through the host or left RDMA
	PathUnknown  = "unknown"  // the log shows no channel connections to judge
)

// OneRank says the run had a single NCCL rank, which moves nothing over a
// bus: nccl-tests prints busbw 0 for the reductions and a GPU's copy to
// itself for sendrecv. Neither is bus bandwidth to judge, compare or
// monitor.
func (r Run) OneRank() bool { return r.Ranks == 1 }

// Fabric is the RDMA port counters' story of one run.
type Fabric struct {
	Ports      int               `json:"ports"`                // ports sampled
	NICBytes   map[string]uint64 `json:"nic_bytes"`            // bytes sent and received per NIC
	TotalBytes uint64            `json:"total_bytes"`          // all NICs together
	Unmeasured []string          `json:"unmeasured,omitempty"` // NICs without data counters
	Errors     []string          `json:"errors,omitempty"`     // error and retransmit counters that grew: "mlx5_1 port 1 symbol_error +12"
	// ErrorCounters are Errors as numbers, for monitoring (the
	// Prometheus textfile) to read without parsing the sentences.
	ErrorCounters []Counter `json:"error_counters,omitempty"`
	Congestion    []string  `json:"congestion,omitempty"` // ECN/CNP counters that grew
	Resets        []string  `json:"resets,omitempty"`     // counters that went down (reset during the run)
}

// Counter is one port counter's growth during a run.
type Counter struct {
	NIC   string `json:"nic"`
	Port  uint   `json:"port"`
	Name  string `json:"name"`  // the sysfs counter: symbol_error, port_rcv_errors...
	Delta uint64 `json:"delta"` // after - before; after alone where it was reset
	Reset bool   `json:"reset,omitempty"`
}

// Point is one message size of a run.
type Point struct {
	Size   int64   `json:"size"`
	BusBW  float64 `json:"busbw_gbps"` // the better of out-of-place and in-place
	AlgBW  float64 `json:"algbw_gbps"`
	TimeUS float64 `json:"time_us"`
	Wrong  int64   `json:"wrong"`
}
