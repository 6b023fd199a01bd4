package slurm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// JobInfo is DIR/job.json, written by the leader when the job starts: what
// the merged report must account for.
type JobInfo struct {
	ID      string    `json:"id"`
	Nodes   []string  `json:"nodes"`
	Started time.Time `json:"started"`
	Restart int       `json:"restart,omitempty"` // SLURM_RESTART_COUNT of a requeued job
	Config  JobConfig `json:"config"`
	Version string    `json:"version"`
	// ContainerImage set means every node also reports as
	// "<node>-container" from inside it.
	ContainerImage string `json:"container_image,omitempty"`
}

// Step is one srun step the leader ran, kept in DIR/steps.json.
type Step struct {
	Name     string    `json:"name"`
	Nodes    []string  `json:"nodes"`
	Command  []string  `json:"command"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitempty"`
	ExitCode int       `json:"exit_code"`
	Error    string    `json:"error,omitempty"`
	// TimedOut marks a step the watchdog stopped; Cancelled one stopped
	// because the job was told to end (USR1, TERM).
	TimedOut  bool `json:"timed_out,omitempty"`
	Cancelled bool `json:"cancelled,omitempty"`
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return results.WriteFile(path, append(b, '\n'))
}

// Layout of a job directory.
const (
	jobFile     = "job.json"
	stepsFile   = "steps.json"
	nodesDir    = "nodes"
	scaleDir    = "scale"
	resultsFile = "results.json"
)

// NodeOut is where a node's `gdrcheck run` writes; {node} is replaced by
// the run itself from SLURMD_NODENAME.
func NodeOut(dir string) string { return filepath.Join(dir, nodesDir, "{node}") }

// Merged is a job directory merged into one report: results.json,
// streamed node by node into a staged file as the nodes were read, and the
// slim results (nodes without their raw evidence) that the tables, JUnit
// and HTML are made from. Write commits the set; Discard drops it.
type Merged struct {
	Results *results.Results
	set     results.FileSet
	job     reports.PromJob // what the allocation textfile says of the job
}

// Collect merges whatever a job left in dir: every node's results.json,
// the scaling suite's, and for each node the job was given but that never
// reported, a missing node with the reason (the step's fate, the last lines
// it printed, and note, e.g. the job's final state). It reads one node at a
// time and keeps only the slim copy, so a job of a thousand nodes never
// sits in memory whole.
func Collect(dir, note string) (*Merged, error) { return CollectAmended(dir, note, nil) }

// Amend changes a node as it is merged; runs are the cross-node runs where
// the node is the allocation. gdrcheck job --compare-to adds the compare
// suite through it.
type Amend func(n results.Node, runs []results.Run) results.Node

// Judge sees every node as it is merged, then judges the allocation as a
// whole: suites/allocation's Tally, handed in by cmd/gdrcheck, since
// slurm judges nothing itself.
type Judge interface {
	Add(n results.Node)
	// Suite is the verdict over the nodes added; false when there was
	// nothing to compare.
	Suite() (results.Suite, bool)
}

// CollectAmended is Collect with every node passed through amend (nil:
// none) before it is written.
func CollectAmended(dir, note string, amend Amend) (*Merged, error) {
	return CollectJudged(dir, note, amend, nil)
}

// CollectJudged is CollectAmended with judge (nil: none) shown every node;
// its suite goes on the allocation entry. A job without one (no scaling)
// gets an allocation entry for the suite only when the suite failed, so
// a healthy job's report keeps its shape.
func CollectJudged(dir, note string, amend Amend, judge Judge) (*Merged, error) {
	jd, err := openJobDir(dir)
	if err != nil {
		return nil, err
	}
	defer jd.Close()
	var job JobInfo
	if err := jd.readJSON(jobFile, &job); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := checkNodeNames(jd.path(jobFile), job.Nodes); err != nil {
		return nil, err
	}
	var steps []Step
	if err := jd.readJSON(stepsFile, &steps); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	expected := job.Nodes
	if len(expected) == 0 {
		ents, err := fs.ReadDir(jd.root.FS(), nodesDir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() {
				if err := hostlist.Valid(e.Name()); err != nil {
					return nil, fmt.Errorf("%s: a node's directory: %w", jd.path(nodesDir), err)
				}
				expected = append(expected, e.Name())
			}
		}
		if len(expected) == 0 {
			return nil, fmt.Errorf("%s: no job.json and no node results: not a gdrcheck job directory", dir)
		}
	}
	if job.ContainerImage != "" {
		for _, n := range job.Nodes {
			expected = append(expected, n+results.ContainerSuffix)
		}
	}
	res := &results.Results{Schema: results.Schema, Tool: results.Tool{Version: job.Version}, Started: job.Started}
	if len(job.Config.Suites) > 0 {
		res.Tool.Suites = job.Config.Suites
	}
	// Without job.json the textfile counts the node entries instead.
	m := &Merged{Results: res, job: reports.PromJob{ID: job.ID, Nodes: len(job.Nodes)}}
	// Past results.FoldAbove nodes, alike nodes fold into groups: the
	// reports of 16,384 nodes hold a few hundred in full.
	fold := results.NewFolder(0)
	allocated := false
	add := func(e *results.Encoder, n results.Node) error {
		if n.Name == AllocationNode {
			allocated = true
			if judge != nil {
				if s, ok := judge.Suite(); ok {
					n.Suites = append(n.Suites, s)
				}
			}
		} else if judge != nil {
			judge.Add(n)
		}
		if amend != nil {
			var runs []results.Run
			if n.Name == AllocationNode {
				runs = res.Runs
			}
			n = amend(n, runs)
		}
		if err := e.Node(n); err != nil {
			return err
		}
		fold.Add(n)
		return nil
	}
	err = m.set.AddFunc(filepath.Join(dir, resultsFile), func(w io.Writer) error {
		e := results.NewLineEncoder(w)
		next, stop := results.ReadAheadFunc(len(expected), func(i int) (*results.Results, error) {
			return jd.readResults(nodeFile(expected[i], resultsFile))
		})
		defer stop()
		for i, name := range expected {
			r, err := next(i)
			if err != nil {
				if err := add(e, missingNode(jd, name, steps, note, err)); err != nil {
					return err
				}
				continue
			}
			if why := foreignResults(name, r); why != "" {
				// Never merged: it would count another node twice and
				// this one not at all.
				n := results.Node{Name: name, Status: results.NodeUnevaluable, Reason: fmt.Sprintf("%s %s; node %s's own results are missing", jd.path(nodeFile(name, resultsFile)), why, name)}
				if err := add(e, n); err != nil {
					return err
				}
				continue
			}
			for _, n := range r.Nodes {
				// Raw logs are relative to the node's own directory.
				for i := range n.Runs {
					if n.Runs[i].Log != "" {
						n.Runs[i].Log = filepath.Join(nodesDir, name, n.Runs[i].Log)
					}
				}
				if err := add(e, n); err != nil {
					return err
				}
			}
			if res.Tool.Version == "" {
				res.Tool.Version = r.Tool.Version
			}
			if res.Started.IsZero() || r.Started.Before(res.Started) {
				res.Started = r.Started
			}
		}
		s, err := jd.readResults(path.Join(scaleDir, resultsFile))
		switch {
		case err == nil:
			for _, r := range s.Runs {
				if r.Log != "" {
					r.Log = filepath.Join(scaleDir, r.Log)
				}
				res.Runs = append(res.Runs, r)
			}
			for _, n := range s.Nodes {
				if err := add(e, n); err != nil {
					return err
				}
			}
		case scalingWanted(job, steps) || !errors.Is(err, os.ErrNotExist):
			// A scaling step that died must not read as a job
			// without one: the allocation is missing, saying why.
			reason, refused := scalingMissingReason(jd, steps, note, err)
			if err := add(e, results.Node{Name: AllocationNode, Status: missingStatus(refused), Reason: reason}); err != nil {
				return err
			}
		}
		if s, ok := judgeSuite(judge); ok && !allocated && s.Counts().Failed > 0 {
			if err := add(e, results.Node{Name: AllocationNode, Status: results.NodeEvaluated, Started: res.Started, Finished: time.Now().UTC()}); err != nil {
				return err
			}
		}
		res.Finished = time.Now().UTC()
		res.Nodes = fold.Nodes()
		return e.End(res)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func judgeSuite(j Judge) (results.Suite, bool) {
	if j == nil {
		return results.Suite{}, false
	}
	return j.Suite()
}

// Write renders junit.xml, report.html and the Prometheus textfile o asks
// for from the slim results and commits them with the staged
// results.json, which is renamed last. The textfile is the allocation
// form: the job as a whole, never its nodes' own series, which their own
// node_exporters serve.
func (m *Merged) Write(o reports.WriteOptions) error {
	o.PromJob = &m.job
	var set results.FileSet
	if err := reports.Stage(&set, filepath.Dir(m.resultsPath()), m.Results, o); err != nil {
		m.Discard()
		return err
	}
	set.Append(&m.set)
	return set.Commit()
}

func (m *Merged) resultsPath() string { return m.set.Path(0) }

// Discard removes the staged results.json.
func (m *Merged) Discard() { m.set.Abort() }

// foreignResults says why a node's results.json is not that node's: it
// must carry exactly one node, named as the node it is filed under (a
// copy of another node's file, or one naming a foreign node, is not);
// "" when it is the node's own.
func foreignResults(name string, r *results.Results) string {
	switch len(r.Nodes) {
	case 0:
		return "holds no node"
	case 1:
		if got := r.Nodes[0].Name; got != name {
			return fmt.Sprintf("reports node %q, not %s: a copy of another node's results or a foreign node's", bounded.ClipString(got, maxNodeName), name)
		}
		return ""
	}
	names := make([]string, 0, 3)
	for _, n := range r.Nodes[:min(len(r.Nodes), 3)] {
		names = append(names, fmt.Sprintf("%q", bounded.ClipString(n.Name, maxNodeName)))
	}
	return fmt.Sprintf("holds %d nodes (%s), where a node's results carry exactly one", len(r.Nodes), strings.Join(names, ", "))
}

// maxNodeName is how much of a foreign node name a reason quotes: more
// than any host name (253 bytes).
const maxNodeName = 256

// missingNode is a node without results, saying why: what happened to
// the step that should have produced them, and what the node printed
// last. A results.json or log that is a link or no regular file is
// refused, and makes the node unevaluable: something other than its step
// put it there.
func missingNode(jd *jobFiles, node string, steps []Step, note string, readErr error) results.Node {
	step := "node-suites"
	if strings.HasSuffix(node, results.ContainerSuffix) {
		step = "container-suite"
	}
	parts := []string{fmt.Sprintf("node %s never reported (%s)", node, shortErr(readErr))}
	for _, s := range steps {
		if s.Name == step && slices.Contains(s.Nodes, strings.TrimSuffix(node, results.ContainerSuffix)) {
			parts = append(parts, stepFate(s)...)
		}
	}
	parts, refused := withTail(jd, parts, note, path.Join(nodesDir, node+".log"))
	refused = refused || errors.Is(readErr, errNotRegular)
	return results.Node{Name: node, Status: missingStatus(refused), Reason: strings.Join(parts, "; ")}
}

// missingStatus is a node's status without results: missing, or
// unevaluable where a file of it was refused.
func missingStatus(refused bool) string {
	if refused {
		return results.NodeUnevaluable
	}
	return results.NodeMissing
}

// scalingWanted says whether the job meant to run the scaling suite, as
// Leader.Run decides it, or did start it.
func scalingWanted(job JobInfo, steps []Step) bool {
	for _, s := range steps {
		if s.Name == "scaling" {
			return true
		}
	}
	return job.Config.Scaling && wantsNCCL(job.Config.Suites)
}

// scalingMissingReason says why the allocation has no results: the
// scaling step's fate (steps.json) and the last lines it printed
// (scale/scaling.log).
func scalingMissingReason(jd *jobFiles, steps []Step, note string, readErr error) (string, bool) {
	parts := []string{fmt.Sprintf("the scaling suite never reported (%s)", shortErr(readErr))}
	found := false
	for _, s := range steps {
		if s.Name != "scaling" {
			continue
		}
		found = true
		if done := !s.Finished.IsZero() && !s.TimedOut && !s.Cancelled; done && s.ExitCode > 0 {
			// It ran and ended without results: its exit code is
			// the step's own failure (a failed spec, exit 1, would
			// have written them).
			parts = append(parts, fmt.Sprintf("the scaling step exited %d", s.ExitCode))
			continue
		}
		parts = append(parts, stepFate(s)...)
	}
	if !found {
		parts = append(parts, "the scaling step never started")
	}
	parts, refused := withTail(jd, parts, note, path.Join(scaleDir, scaleLogFile))
	return strings.Join(parts, "; "), refused || errors.Is(readErr, errNotRegular)
}

// stepFate says how a step ended, when that explains missing results.
func stepFate(s Step) []string {
	switch {
	case s.Finished.IsZero():
		return []string{"the " + s.Name + " step was still running when the job ended"}
	case s.TimedOut:
		return []string{fmt.Sprintf("the %s step hung and the watchdog stopped it after %s", s.Name, s.Finished.Sub(s.Started).Round(time.Second))}
	case s.Cancelled:
		return []string{"the " + s.Name + " step was cancelled when the job was told to end"}
	case s.Error != "":
		return []string{"the " + s.Name + " step failed: " + s.Error}
	}
	return nil
}

// withTail adds the note and the last lines of a log to a reason; a log
// that is no regular file is named instead, and refused says so.
func withTail(jd *jobFiles, parts []string, note, log string) (_ []string, refused bool) {
	if note != "" {
		parts = append(parts, note)
	}
	tail, err := jd.tail(log, 3)
	switch {
	case err != nil:
		parts = append(parts, "its log is refused: "+err.Error())
	case tail != "":
		parts = append(parts, "last output: "+tail)
	}
	return parts, err != nil
}

func shortErr(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "no results.json"
	}
	return err.Error()
}

// logTail returns the last n non-empty lines of a file the job itself
// wrote (the scaling step's log), joined, from its last 64 KiB.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	return tailOf(f, n)
}

// lastLines is the last n non-empty lines of b, joined; cut says b starts
// inside a line, which is dropped.
func lastLines(b []byte, n int, cut bool) string {
	if i := bytes.IndexByte(b, '\n'); cut && i >= 0 {
		b = b[i+1:] // from a line start
	}
	var lines []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if s := strings.TrimSpace(string(l)); s != "" {
			lines = append(lines, s)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// FailedNodes maps each node that failed or never reported to a short
// reason, for draining.
func FailedNodes(res *results.Results) map[string]string {
	out := map[string]string{}
	res.Each(func(n results.Node) {
		if n.Name == AllocationNode {
			blameNodes(n, res, out)
			return
		}
		if n.Status != results.NodeEvaluated {
			out[n.Name] = n.Status + ": " + n.Reason
			return
		}
		for _, s := range n.Suites {
			if s.Name == results.SuiteCompare {
				continue
			}
			for _, sp := range s.Specs {
				if sp.Failed() {
					if _, ok := out[n.Name]; !ok {
						out[n.Name] = s.Name + ": " + sp.Message
					}
				}
			}
		}
	})
	return out
}

// blameNodes adds the nodes the scaling suite named in a failed spec (a
// failed metric whose subject is a node of the job: slow in every pair,
// a severe outlier).
func blameNodes(alloc results.Node, res *results.Results, out map[string]string) {
	known := map[string]bool{}
	res.Each(func(n results.Node) { known[n.Name] = true })
	for _, s := range alloc.Suites {
		for _, sp := range s.Specs {
			if sp.State != results.StateFailed {
				continue
			}
			for _, m := range sp.Metrics {
				if m.Verdict == "fail" && known[m.Subject] && m.Subject != AllocationNode {
					if _, ok := out[m.Subject]; !ok {
						out[m.Subject] = s.Name + ": " + sp.Message
					}
				}
			}
		}
	}
}
