package suites

import (
	"fmt"
	"strings"
	"text/template"

	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/node"
)

// The domain matchers the spec areas state their expectations with. A
// failure reads as the short, stable sentence admins know from the reports,
// never as a dump of Go values: Gomega fails `Expect(x).To(m)` with exactly
// m.FailureMessage(x), so give these no description (it would be prepended
// as a line of its own).

// HaveNoFindings succeeds on an empty list of findings ([]string), one
// sentence per thing found wrong. Its failure is the first finding alone,
// which stays the same across runs so the failure groups together in
// Jenkins, and, where there are more, " (and N more)" and then every
// finding, one a line.
func HaveNoFindings() types.GomegaMatcher {
	return sentence[[]string]{
		name:    "HaveNoFindings",
		match:   func(f []string) bool { return len(f) == 0 },
		failure: findingsMessage,
		negated: func([]string) string { return "expected findings, found none" },
	}
}

func findingsMessage(findings []string) string {
	switch len(findings) {
	case 0:
		return "no findings"
	case 1:
		return findings[0]
	}
	return fmt.Sprintf("%s (and %d more)\n%s", findings[0], len(findings)-1, strings.Join(findings, "\n"))
}

// MatchInventory succeeds when a node.Inventory has not drifted from the
// expected one stored in file: the GPUs, their UUIDs, rails and NUMA nodes.
// Its failure lists the drift as HaveNoFindings does, each sentence naming
// the file: "GPU 4 0000:98:00.0: rail mlx5_4 (SYS), expected mlx5_4 (PIX)
// (expected.yaml)".
func MatchInventory(want node.Inventory, file string) types.GomegaMatcher {
	drift := func(got node.Inventory) []string {
		d := node.Drift(want, got)
		for i := range d {
			d[i] += " (" + file + ")"
		}
		return d
	}
	return sentence[node.Inventory]{
		name:    "MatchInventory",
		match:   func(got node.Inventory) bool { return len(drift(got)) == 0 },
		failure: func(got node.Inventory) string { return findingsMessage(drift(got)) },
		negated: func(node.Inventory) string { return "expected the inventory to differ from " + file },
	}
}

// HaveAWorkingMechanism succeeds when a node.MechanismVerdict found a
// GPUDirect peer-memory path. Its failure names the first fact that rules
// out each path: "no GPUDirect peer-memory mechanism works: DMA-BUF: X is
// Y, need Z; peermem: ...", said to come from the registrations where NICs
// decided it. A cause the spec found (module signing refusing
// nvidia_peermem) follows the facts: "; cause: ...".
func HaveAWorkingMechanism(cause ...string) types.GomegaMatcher {
	return sentence[node.MechanismVerdict]{
		name:  "HaveAWorkingMechanism",
		match: func(v node.MechanismVerdict) bool { return v.Mechanism != node.MechanismNone },
		failure: func(v node.MechanismVerdict) string {
			d, _ := node.FirstFailure(v.DMABuf)
			p, _ := node.FirstFailure(v.Peermem)
			why := fmt.Sprintf("DMA-BUF: %s is %s, need %s; peermem: %s is %s, need %s", d.Name, d.Found, d.Need, p.Name, p.Found, p.Need)
			if v.DecidedBy == "registration" {
				why = "no GPU buffer registered with its rail NIC on either path; " + why
			}
			for _, c := range cause {
				if c != "" {
					why += "; cause: " + c
				}
			}
			return "no GPUDirect peer-memory mechanism works: " + why
		},
		negated: func(v node.MechanismVerdict) string {
			return "expected no GPUDirect peer-memory mechanism, found " + v.Mechanism
		},
	}
}

// HaveLibcuda succeeds when libcuda answered (node.CUDAFacts). Its failure
// is the given sentence and libcuda's error: "libcuda did not answer: ...".
func HaveLibcuda(failure string) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(c node.CUDAFacts) (bool, error) {
		return c.Available, nil
	}).WithTemplate("{{if .Failure}}{{.Data}}: {{.Actual.Error}}{{else}}expected libcuda not to answer, it did{{end}}", failure)
}

// HaveAttemptedRegistrations succeeds when the probe tried to register GPU
// memory with a NIC (node.VerbsFacts); a spec asks it only where RDMA
// devices exist. Its failure gives libibverbs' error, or "none".
func HaveAttemptedRegistrations() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(v node.VerbsFacts) (bool, error) {
		return len(v.Registrations) > 0, nil
	}).WithTemplate(`{{if .Failure}}RDMA devices exist but no registration was attempted: {{or .Actual.Error "none"}}{{else}}expected no registration, {{len .Actual.Registrations}} were attempted{{end}}`)
}

// HaveContainerFacts succeeds when the container suite's facts were
// collected (a non-nil *node.ContainerFacts).
func HaveContainerFacts() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(c *node.ContainerFacts) (bool, error) {
		return c != nil, nil
	}).WithTemplate("{{if .Failure}}no container facts were collected{{else}}expected no container facts, some were collected{{end}}")
}

// templateFuncs are what the matchers' templates may call besides Gomega's.
var templateFuncs = template.FuncMap{"bytes": bytesText}

var memlockTemplate = template.Must(template.New("memlock").Funcs(templateFuncs).Parse(
	`{{if .Failure}}RLIMIT_MEMLOCK is {{bytes .Actual.MemlockSoft}} (hard {{bytes .Actual.MemlockHard}}): RDMA registration pins host buffers (NCCL's proxy buffers, verbs queues); expected unlimited (docker --ulimit memlock=-1, Slurm PropagateResourceLimits, ulimit -l unlimited)` +
		`{{if .Actual.CapIPCLock}}; this process has CAP_IPC_LOCK and may pin past it, the workload's user may not{{end}}` +
		`{{else}}expected RLIMIT_MEMLOCK to be limited, it is unlimited{{end}}`))

// HaveUnlimitedMemlock succeeds when node.ContainerFacts show no
// RLIMIT_MEMLOCK. Its failure gives the soft and hard limits, why RDMA
// needs none and how to lift it, and whether this process's CAP_IPC_LOCK
// hides the limit.
func HaveUnlimitedMemlock() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(c node.ContainerFacts) (bool, error) {
		return c.Unlimited(), nil
	}).WithPrecompiledTemplate(memlockTemplate)
}

var capIPCLockTemplate = template.Must(template.New("cap_ipc_lock").Funcs(templateFuncs).Parse(
	`{{if .Failure}}CAP_IPC_LOCK is missing (CapEff {{.Actual.CapEff}}) and RLIMIT_MEMLOCK is {{bytes .Actual.MemlockSoft}}: registrations past the limit fail with ENOMEM; add the capability (docker --cap-add IPC_LOCK) or lift the limit` +
		`{{else}}expected CAP_IPC_LOCK to be missing, it is in CapEff {{.Actual.CapEff}}{{end}}`))

// HaveCapIPCLock succeeds when node.ContainerFacts show CAP_IPC_LOCK in
// the effective set; a spec asks it where memory locking is limited, which
// its failure states.
func HaveCapIPCLock() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(c node.ContainerFacts) (bool, error) {
		return c.CapIPCLock, nil
	}).WithPrecompiledTemplate(capIPCLockTemplate)
}

// bytesText writes a limit in the largest unit it is a whole number of;
// nil is unlimited.
func bytesText(v *uint64) string {
	if v == nil {
		return "unlimited"
	}
	switch {
	case *v >= 1<<30 && *v%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", *v>>30)
	case *v >= 1<<20 && *v%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", *v>>20)
	case *v >= 1<<10 && *v%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", *v>>10)
	}
	return fmt.Sprintf("%d bytes", *v)
}

// HaveCompletedDirect succeeds when *nccl.Measurements hold a direct run of
// op that did not fail. Its failure says "the direct <op>_perf run failed:"
// and why, or "not run".
func HaveCompletedDirect(op string) types.GomegaMatcher {
	return sentence[*nccl.Measurements]{
		name: "HaveCompletedDirect",
		match: func(m *nccl.Measurements) bool {
			d, ok := m.Direct(op)
			return ok && d.Result.Err == nil
		},
		failure: func(m *nccl.Measurements) string {
			why := "not run"
			if d, _ := m.Direct(op); d.Result.Err != nil {
				why = d.Result.Err.Error()
			}
			return "the direct " + op + "_perf run failed: " + why
		},
		negated: func(*nccl.Measurements) string {
			return "expected the direct " + op + "_perf run to fail, it completed"
		},
	}
}

// HaveCompleted succeeds when a forced nccl.Measured run did not fail. Its
// failure is "<mode> run failed: <error>".
func HaveCompleted() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(r nccl.Measured) (bool, error) {
		return r.Result.Err == nil, nil
	}).WithTemplate("{{if .Failure}}{{.Actual.Mode.Name}} run failed: {{.Actual.Result.Err}}{{else}}expected the {{.Actual.Mode.Name}} run to fail, it completed{{end}}")
}

// HaveNCCLLog succeeds when an nccl.Result carries NCCL's INFO log, the
// only place the path it took is told. Its failure names the run and, with
// a hint, the likely cause in parentheses: "all_reduce_perf printed no
// NCCL log: cannot tell the path (NCCL_DEBUG=INFO unset?)".
func HaveNCCLLog(run string, hint ...string) types.GomegaMatcher {
	data := struct{ Run, Hint string }{Run: run, Hint: strings.Join(hint, "; ")}
	return gcustom.MakeMatcher(func(r nccl.Result) (bool, error) {
		return r.Log != nil, nil
	}).WithTemplate("{{if .Failure}}{{.Data.Run}} printed no NCCL log: cannot tell the path{{with .Data.Hint}} ({{.}}){{end}}{{else}}expected {{.Data.Run}} to print no NCCL log, it did{{end}}", data)
}

// BeTheDirectReference succeeds on the nccl.Verdict of a run that took the
// direct path, against which forced fallbacks are judged. Its failure
// gives the verdict and its first reason.
func BeTheDirectReference() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(v nccl.Verdict) (bool, error) {
		return v.Verdict == nccl.VerdictDirect, nil
	}).WithTemplate("{{if .Failure}}the reference run is not direct ({{.Actual.Verdict}}): {{.Actual.Reason}}; forced fallbacks cannot be judged against it{{else}}expected the reference run not to be direct, it is{{end}}")
}

// ForcedFallback is what a run with a fallback forced showed against the
// direct run: the transport NCCL reported and the bandwidth kept.
type ForcedFallback struct {
	Env      []string // the variables that forced it, as they name it in messages
	Was, Now string   // dominant transport class of the direct and the forced run
	Ratio    float64  // forced busbw over direct busbw at a common size
	Compared bool     // false when the runs share no message size
	Limit    float64  // the largest Ratio that still counts as detected
	// ByTransport: the bandwidth is noted, not required (RatioLimit).
	ByTransport bool
}

// Missed lists the signs that did not show the fallback: the transport
// stayed the same, or the bandwidth could not be compared or kept too much.
func (f ForcedFallback) Missed() []string {
	var missed []string
	if f.Now == f.Was {
		missed = append(missed, fmt.Sprintf("transport stayed %s", f.Was))
	}
	switch {
	case f.ByTransport:
	case !f.Compared:
		missed = append(missed, "no common message size to compare bandwidth at")
	case f.Ratio >= f.Limit:
		missed = append(missed, fmt.Sprintf("busbw kept %.2f of the direct run (limit %.2f)", f.Ratio, f.Limit))
	}
	return missed
}

// BeDetected succeeds when a ForcedFallback shows both in the transport and
// in the bandwidth. Its failure is "forced fallback <env> not detected:"
// and every sign that missed it.
func BeDetected() types.GomegaMatcher {
	return sentence[ForcedFallback]{
		name:  "BeDetected",
		match: func(f ForcedFallback) bool { return len(f.Missed()) == 0 },
		failure: func(f ForcedFallback) string {
			return fmt.Sprintf("forced fallback %s not detected: %s", strings.Join(f.Env, " "), strings.Join(f.Missed(), "; "))
		},
		negated: func(f ForcedFallback) string {
			return fmt.Sprintf("expected forced fallback %s to go undetected, it was detected", strings.Join(f.Env, " "))
		},
	}
}

// HaveMatchedBaseline succeeds when a baseline profile matched the run
// (*Context). Its failure says which profile was looked for and how the
// closest differs, and that --allow-missing-baseline only reports.
func HaveMatchedBaseline() types.GomegaMatcher {
	return sentence[*Context]{
		name:    "HaveMatchedBaseline",
		match:   func(c *Context) bool { return c.Baseline != nil },
		failure: func(c *Context) string { return baselineAbsence(c) + " (--allow-missing-baseline only reports)" },
		negated: func(c *Context) string { return "expected no baseline to match, " + c.Baseline.Profile.Name + " did" },
	}
}

func baselineAbsence(c *Context) string {
	if c.BaselineErr != nil {
		return c.BaselineErr.Error()
	}
	return "no baseline matched this node"
}

// HaveNCCLRuns succeeds when nccl-tests ran (*Context); a spec asks it
// where the operator asked for them. Its failure says why they did not.
func HaveNCCLRuns() types.GomegaMatcher {
	return sentence[*Context]{
		name:    "HaveNCCLRuns",
		match:   func(c *Context) bool { return c.NCCL != nil },
		failure: ncclAbsence,
		negated: func(*Context) string { return "expected no nccl-tests runs, they ran" },
	}
}

func ncclAbsence(c *Context) string {
	if c.NCCLErr != nil {
		return c.NCCLErr.Error()
	}
	return "nccl-tests were not run"
}

// HaveCollectedEvidence succeeds when a node's *node.Evidence has no fatal
// problem. Its failure is "node evidence could not be collected:" and
// every problem that keeps the node from being evaluated, the sources
// that could not be used among them.
func HaveCollectedEvidence() types.GomegaMatcher {
	return sentence[*node.Evidence]{
		name:  "HaveCollectedEvidence",
		match: func(ev *node.Evidence) bool { return ev.Fatal() == nil },
		failure: func(ev *node.Evidence) string {
			return "node evidence could not be collected: " + ev.Incomplete().Error()
		},
		negated: func(*node.Evidence) string { return "expected the node evidence to be incomplete, it was collected" },
	}
}

// HaveCompleteEvidence succeeds when every source of a node's
// *node.Evidence could be used and the sources agree. Its failure is
// "node evidence is incomplete:" and each source's error with its likely
// cause: "NVML: initialising: ERROR_LIB_RM_VERSION_MISMATCH:
// Driver/library version mismatch: ...".
func HaveCompleteEvidence() types.GomegaMatcher {
	return sentence[*node.Evidence]{
		name:    "HaveCompleteEvidence",
		match:   func(ev *node.Evidence) bool { return ev.Incomplete() == nil },
		failure: func(ev *node.Evidence) string { return "node evidence is incomplete: " + ev.Incomplete().Error() },
		negated: func(*node.Evidence) string { return "expected the node evidence to be incomplete, it is complete" },
	}
}

// HaveScalingRuns succeeds when the allocation's multi-node runs were
// made (*Context). Its failure says why not.
func HaveScalingRuns() types.GomegaMatcher {
	return sentence[*Context]{
		name:    "HaveScalingRuns",
		match:   func(c *Context) bool { return c.ScalingErr == nil && c.Scaling != nil },
		failure: func(c *Context) string { return "no multi-node runs: " + fmt.Sprint(c.ScalingErr) },
		negated: func(*Context) string { return "expected no multi-node runs, they ran" },
	}
}

// sentence is a matcher over one kind of evidence whose failure message is
// a sentence computed from it, where a gcustom template cannot say it.
type sentence[T any] struct {
	name             string // for a misused matcher
	match            func(T) bool
	failure, negated func(T) string
}

func (s sentence[T]) Match(actual any) (bool, error) {
	v, ok := actual.(T)
	if !ok {
		var want T
		return false, fmt.Errorf("%s expects a %T, got %T", s.name, want, actual)
	}
	return s.match(v), nil
}

func (s sentence[T]) FailureMessage(actual any) string {
	v, _ := actual.(T)
	return s.failure(v)
}

func (s sentence[T]) NegatedFailureMessage(actual any) string {
	v, _ := actual.(T)
	return s.negated(v)
}
