package reports

import (
	"cmp"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/results"
)

// The allocation form of the textfile (collect, and a job when it ends)
// says what the job says as a whole and holds no node's own series: those
// belong on each node's node_exporter (gdrcheck run --prom-textfile), and
// one file of every node's 146 series is 2.4 million series at 16,384
// nodes, where one target serves about a thousand and a sample_limit
// rejects the scrape whole. So every family here is bounded whatever the
// node count: nodes counted by status, failing suite, mechanism, profile
// and driver, specs summed, the scaling runs and the allocation's own
// specs, and the worst outliers the scaling suite named: 664 series at
// most with the bounds below (a job's usual file has about 60).
//
// Every series is node="allocation", as the scaling series always were:
// the file lands on the job's first node, beside that node's own file in
// the same textfile directory, so the families both carry (build_info,
// specs, spec_failures) differ by node there instead of colliding, and
// share their HELP, which node_exporter requires of one family across
// files.

// PromJob is what the allocation textfile says of a job beyond its
// results.
type PromJob struct {
	ID    string // the Slurm job id
	Nodes int    // the nodes the job was given; 0 counts the node entries
}

// Bounds of the allocation textfile. Names and facts come from the nodes'
// results.json, untrusted strings, so no label takes them unbounded.
const (
	maxLabelValues = 20  // distinct values of a node-given label (profile, driver...); the rest are "other"
	maxSuites      = 30  // distinct suite names; the rest are "other"
	maxScalingRuns = 64  // scaling runs rendered, in results.json's order
	maxOutliers    = 50  // outlier series, the worst first
	maxLabelBytes  = 128 // a longer value is cut between characters and ends in "..."
	otherValue     = "other"
)

// forEachNode calls f with each node entry of r but the allocation's, and
// the number of the job's nodes the entry stands for. Every count of nodes
// in the allocation textfile goes through here, so that none assumes an
// entry is one node.
func forEachNode(r *results.Results, f func(n results.Node, weight int)) {
	for _, n := range r.Nodes {
		if n.Name != results.AllocationNode {
			f(n, nodeWeight(n))
		}
	}
}

// nodeWeight is how many of the job's nodes n stands for: a folded job's
// representative counts for its group (results/fold.go), whose members
// share its status, facts and every spec's state (a variable only so
// that a test can show every count follows it).
var nodeWeight = func(n results.Node) int { return n.Size() }

// jobMetrics are the allocation form's families: the per-node form's
// (only those it sets are written) and the job's own.
type jobMetrics struct {
	*promMetrics
	exitCode, verdict, allocated, ended                  *promVec
	nodes, failedNodes, containerNodes, containerFailed  *promVec
	jobSpecs, peerMemoryNodes, profileNodes, driverNodes *promVec
	actionNodes                                          *promVec
	outlier, outliersOmitted                             *promVec
}

func newJobMetrics() *jobMetrics {
	m := &jobMetrics{promMetrics: newPromMetrics()}
	p := m.promMetrics
	m.exitCode = p.vec("gdrcheck_job_exit_code", "The job's exit code: 0 every spec passed, 1 a spec failed, 2 a node could not be evaluated or never reported.")
	m.verdict = p.vec("gdrcheck_job_verdict_info", "The job's verdict (pass, fail, unevaluable: exit code 0, 1, 2) and its Slurm job id (value 1).", "job_id", "verdict")
	m.allocated = p.vec("gdrcheck_job_allocated_nodes", "The nodes the job was given.")
	m.ended = p.vec("gdrcheck_job_end_timestamp_seconds", "When the job's report was merged, in seconds since the epoch.")
	m.nodes = p.vec("gdrcheck_job_nodes", "The job's nodes by status (evaluated, unevaluable, missing, interrupted).", "status")
	m.failedNodes = p.vec("gdrcheck_job_failed_nodes", "The job's nodes on which a spec of the suite failed.", "suite")
	m.containerNodes = p.vec("gdrcheck_job_container_nodes", "The job's runs inside the workload's container (<node>-container) by status.", "status")
	m.containerFailed = p.vec("gdrcheck_job_container_failed_nodes", "The job's runs inside the workload's container on which a spec of the suite failed.", "suite")
	m.jobSpecs = p.vec("gdrcheck_job_specs", "Specs of a suite by state (passed, failed, skipped), summed over the job's nodes.", "suite", "state")
	m.peerMemoryNodes = p.vec("gdrcheck_job_peer_memory_nodes", "The job's nodes by the GPUDirect peer-memory mechanism that works (dmabuf, peermem, none; unknown where not probed) and nvidia_peermem's state: the 20 commonest pairs, the rest other.", "mechanism", "peermem")
	m.profileNodes = p.vec("gdrcheck_job_profile_nodes", "The job's nodes by the baseline profile they matched (unknown where none): the 20 commonest, the rest other.", "profile")
	m.actionNodes = p.vec("gdrcheck_job_action_nodes", "The job's nodes by remediation action (NONE, RERUN, FIX_CONFIG, RELOAD_DRIVER, RESET_GPU, REBOOT, REIMAGE, INVESTIGATE, CHECK_CABLE, REPLACE): the most disruptive of each node's failures.", "action")
	m.driverNodes = p.vec("gdrcheck_job_driver_nodes", "The job's nodes by NVIDIA driver version (unknown where not read): the 20 commonest, the rest other.", "driver")
	m.outlier = p.vec("gdrcheck_scaling_outlier", "A node the scaling suite named, by the metric that named it (busbw_robust_z: its robust z-score; slow_in_every_pair: 1) and verdict (fail, suspect): the 50 worst.", "outlier", "metric", "verdict")
	m.outliersOmitted = p.vec("gdrcheck_scaling_outliers_omitted", "Outliers the scaling suite named beyond the 50 the textfile holds.")
	return m
}

// WriteAllocationPrometheus writes the allocation form of r's textfile:
// the job as a whole, bounded whatever its node count.
func WriteAllocationPrometheus(w io.Writer, r *results.Results, job PromJob) error {
	m := newJobMetrics()
	m.job(r, job)
	return m.write(w)
}

// StageAllocationPrometheus stages the allocation form for path into set,
// as StagePrometheus does the per-node form.
func StageAllocationPrometheus(set *results.FileSet, path string, r *results.Results, job PromJob) error {
	return set.AddFunc(path, func(w io.Writer) error { return WriteAllocationPrometheus(w, r, job) })
}

func (m *jobMetrics) job(r *results.Results, job PromJob) {
	const alloc = results.AllocationNode
	m.build.set(1, alloc, labelValue(r.Tool.Version))
	code := r.ExitCode()
	m.exitCode.set(float64(code), alloc)
	m.verdict.set(1, alloc, labelValue(job.ID), verdictName(code))
	if t, ok := timestamp(r.Finished); ok {
		m.ended.set(t, alloc)
	}

	present := tally{}
	forEachNode(r, func(n results.Node, w int) {
		for _, s := range n.Suites {
			present.add(w, s.Name)
		}
	})
	suite := capNames(present, maxSuites)
	hosts, containers := newNodeCounts(), newNodeCounts()
	specs := specStates{}
	peer, profile, driver, action := tally{}, tally{}, tally{}, tally{}
	forEachNode(r, func(n results.Node, w int) {
		for _, s := range n.Suites {
			specs.add(suite(s.Name), s.Counts(), w)
		}
		// A run inside the container is not another node.
		if strings.HasSuffix(n.Name, results.ContainerSuffix) {
			containers.add(n, w, suite)
			return
		}
		hosts.add(n, w, suite)
		peer.add(w, orUnknown(n.Fact("mechanism")), orUnknown(n.Fact("peermem")))
		profile.add(w, orUnknown(n.Profile))
		driver.add(w, orUnknown(n.Fact("driver")))
		if n.Action != "" {
			action.add(w, string(n.Action))
		}
	})
	allocated := job.Nodes
	if allocated == 0 {
		allocated = hosts.entries
	}
	m.allocated.set(float64(allocated), alloc)
	hosts.render(m.nodes, m.failedNodes)
	if containers.entries > 0 {
		containers.render(m.containerNodes, m.containerFailed)
	}
	specs.render(m.jobSpecs)
	for _, t := range []struct {
		v *promVec
		t tally
	}{{m.peerMemoryNodes, peer}, {m.profileNodes, profile}, {m.driverNodes, driver}, {m.actionNodes, action}} {
		for _, row := range t.t.top(maxLabelValues) {
			t.v.set(float64(row.n), append([]string{alloc}, row.values...)...)
		}
	}

	m.scaling(scalingRuns(r.Runs))
	for _, n := range r.Nodes {
		if n.Name == alloc {
			m.allocation(r, n)
			break
		}
	}
}

// allocation renders the scaling suite's own specs and the nodes it named.
func (m *jobMetrics) allocation(r *results.Results, n results.Node) {
	const alloc = results.AllocationNode
	names := tally{}
	for _, s := range n.Suites {
		names.add(1, s.Name)
	}
	suite := capNames(names, maxSuites)
	specs := specStates{}
	for _, s := range n.Suites {
		specs.add(suite(s.Name), s.Counts(), 1)
	}
	specs.render(m.specs)
	for k, c := range specs {
		if k.state == results.StateFailed {
			m.specFailures.set(float64(c), alloc, k.suite)
		}
	}
	out := outliers(r, n)
	for _, o := range out[:min(len(out), maxOutliers)] {
		m.outlier.set(o.value, alloc, o.node, o.metric, o.verdict)
	}
	m.outliersOmitted.set(float64(max(0, len(out)-maxOutliers)), alloc)
}

func verdictName(code int) string {
	switch code {
	case results.ExitPassed:
		return "pass"
	case results.ExitFailed:
		return "fail"
	}
	return "unevaluable"
}

// statusName is a node's status as a label: one of the four, else other.
func statusName(s string) string {
	switch s {
	case results.NodeEvaluated, results.NodeUnevaluable, results.NodeMissing, results.NodeInterrupted:
		return s
	}
	return otherValue
}

// nodeCounts count node entries by status and by the suites that failed
// on them.
type nodeCounts struct {
	entries int
	status  map[string]int
	suites  map[string]bool // every suite seen, so that none failing reads 0
	failed  map[string]int
}

func newNodeCounts() *nodeCounts {
	return &nodeCounts{status: map[string]int{}, suites: map[string]bool{}, failed: map[string]int{}}
}

func (c *nodeCounts) add(n results.Node, w int, suite func(string) string) {
	c.entries += w
	c.status[statusName(n.Status)] += w
	failed := map[string]bool{}
	for _, s := range n.Suites {
		name := suite(s.Name)
		c.suites[name] = true
		// Once per node, also where two suites became "other".
		if s.Counts().Failed > 0 && !failed[name] {
			failed[name] = true
			c.failed[name] += w
		}
	}
}

// render sets every status (0 where no node has it, other only where one
// has) and every suite seen.
func (c *nodeCounts) render(status, failed *promVec) {
	for _, s := range []string{results.NodeEvaluated, results.NodeUnevaluable, results.NodeMissing, results.NodeInterrupted} {
		status.set(float64(c.status[s]), results.AllocationNode, s)
	}
	if k := c.status[otherValue]; k > 0 {
		status.set(float64(k), results.AllocationNode, otherValue)
	}
	for s := range c.suites {
		failed.set(float64(c.failed[s]), results.AllocationNode, s)
	}
}

// specStates sum specs by suite and state.
type specStates map[struct{ suite, state string }]int

func (s specStates) add(suite string, c results.Counts, w int) {
	for state, k := range map[string]int{results.StatePassed: c.Passed, results.StateFailed: c.Failed, results.StateSkipped: c.Skipped} {
		s[struct{ suite, state string }{suite, state}] += k * w
	}
}

func (s specStates) render(v *promVec) {
	for k, c := range s {
		v.set(float64(c), results.AllocationNode, k.suite, k.state)
	}
}

// outlier is a node the scaling suite named in a metric of its specs.
type outlier struct {
	node, metric, verdict string
	value                 float64
}

// outliers are the nodes the allocation's specs named: a metric whose
// subject is a node of the job, verdict fail, or suspect where the suite
// only warned (busbw_robust_z's "info"). Worst first: fails, then the
// lowest value (the most negative z-score), then by name.
func outliers(r *results.Results, alloc results.Node) []outlier {
	// The job's nodes, folded or not, and as the runs across nodes name
	// them.
	known := map[string]bool{}
	r.Each(func(n results.Node) { known[n.Name] = true })
	for _, run := range r.Runs {
		for _, n := range run.Nodes {
			known[n] = true
		}
	}
	index := map[[2]string]int{}
	var out []outlier
	for _, s := range alloc.Suites {
		for _, sp := range s.Specs {
			for _, mt := range sp.Metrics {
				if !known[mt.Subject] || mt.Subject == results.AllocationNode || mt.Verdict == "pass" {
					continue
				}
				o := outlier{node: labelValue(mt.Subject), metric: labelValue(mt.Name), verdict: "suspect", value: mt.Value}
				if mt.Verdict == "fail" {
					o.verdict = "fail"
				}
				k := [2]string{o.node, o.metric}
				if i, ok := index[k]; !ok {
					index[k] = len(out)
					out = append(out, o)
				} else if compareOutliers(o, out[i]) < 0 {
					out[i] = o
				}
			}
		}
	}
	slices.SortFunc(out, compareOutliers)
	return out
}

func compareOutliers(a, b outlier) int {
	rank := func(o outlier) int {
		if o.verdict == "fail" {
			return 0
		}
		return 1
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.value, b.value), cmp.Compare(a.node, b.node), cmp.Compare(a.metric, b.metric))
}

// scalingRuns are the runs the scaling series render: at most
// maxScalingRuns, their op and transport made label values.
func scalingRuns(runs []results.Run) []results.Run {
	var out []results.Run
	for _, run := range runs {
		if run.Suite != scaleSuite {
			continue
		}
		if len(out) == maxScalingRuns {
			break
		}
		run.Op, run.Transport = labelValue(run.Op), labelValue(run.Transport)
		out = append(out, run)
	}
	return out
}

// tally counts nodes by label values that came from them, which may be
// any number of distinct strings.
type tally map[string]*tallyRow

type tallyRow struct {
	values []string
	n      int
}

func (t tally) add(n int, values ...string) {
	vs := make([]string, len(values))
	for i, v := range values {
		vs[i] = labelValue(v)
	}
	// labelValue leaves no NUL (cleanText escapes it), so keys are distinct.
	k := strings.Join(vs, "\x00")
	if row, ok := t[k]; ok {
		row.n += n
		return
	}
	t[k] = &tallyRow{values: vs, n: n}
}

// top returns the limit rows that count the most nodes (ties by value, so
// the file is stable) and the rest summed into one row whose values are
// all "other", or into a kept row that already is.
func (t tally) top(limit int) []tallyRow {
	rows := make([]tallyRow, 0, len(t))
	for _, r := range t {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b tallyRow) int {
		return cmp.Or(cmp.Compare(b.n, a.n), slices.Compare(a.values, b.values))
	})
	if len(rows) <= limit {
		return rows
	}
	rest := tallyRow{values: make([]string, len(rows[0].values))}
	for i := range rest.values {
		rest.values[i] = otherValue
	}
	for _, r := range rows[limit:] {
		rest.n += r.n
	}
	kept := rows[:limit:limit]
	for i := range kept {
		if slices.Equal(kept[i].values, rest.values) {
			kept[i].n += rest.n
			return kept
		}
	}
	return append(kept, rest)
}

// capNames maps a name to itself where it is among the limit names t
// counts most, else to "other".
func capNames(t tally, limit int) func(string) string {
	keep := map[string]bool{}
	for _, row := range t.top(limit) {
		keep[row.values[0]] = true
	}
	return func(s string) string {
		if s = labelValue(s); keep[s] {
			return s
		}
		return otherValue
	}
}

// labelValue makes a string from the results one bounded label value:
// cleanText's rule (invalid UTF-8 becomes U+FFFD, a control character its
// escape), tab, newline and carriage return a space, so that an alert's
// text stays one line and no line-based reader splits the sample, and at
// most maxLabelBytes (Prometheus' label_value_length_limit refuses a
// scrape whole). client_golang escapes the quotes and backslashes left.
func labelValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, cleanText(s))
	if len(s) > maxLabelBytes {
		cut := maxLabelBytes - len("...")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
