package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

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
// streamed node by node into a staged file as the nodes were read (the
// failing ones in full, the others as refs to their own files), and the
// slim results (nodes without their raw evidence) that the tables, JUnit
// and HTML are made from. Write commits the set; Discard drops it.
type Merged struct {
	Results *results.Results
	set     results.FileSet
	job     reports.PromJob // what the allocation textfile says of the job
}

// CollectOptions says how a job directory is merged; the zero value
// merges it as it is.
type CollectOptions struct {
	// Note is added to the reason of every node that never reported,
	// e.g. the job's final state.
	Note string
	// Amend (nil: none) changes every node before it is written.
	Amend Amend
	// Judge (nil: none) is shown every node; its suite goes on the
	// allocation entry.
	Judge Judge
}

// Amend changes a node as it is merged, adding suites only (a node
// merged as a ref is its own file plus the suites added); runs are the
// cross-node runs where the node is the allocation. gdrcheck job --compare-to adds the compare
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

// Collect merges whatever a job left in dir: every node's results.json,
// the scaling suite's, and for each node the job was given but that never
// reported, a missing node with the reason (the step's fate, the last lines
// it printed, and opt.Note). It reads one node at a time and keeps only
// the slim copy, so a job of a thousand nodes never sits in memory whole.
// A job without a scaling suite gets an allocation entry for the judge's
// suite only when that suite failed, so a healthy job's report keeps its
// shape.
func Collect(dir string, opt CollectOptions) (*Merged, error) {
	jd, err := openJobDir(dir)
	if err != nil {
		return nil, err
	}
	defer jd.Close()
	job, steps, err := readJob(jd)
	if err != nil {
		return nil, err
	}
	expected, err := expectedNodes(jd, job)
	if err != nil {
		return nil, err
	}
	res := &results.Results{Schema: results.Schema, Tool: results.Tool{Version: job.Version}, Started: job.Started}
	if len(job.Config.Suites) > 0 {
		res.Tool.Suites = job.Config.Suites
	}
	// Without job.json the textfile counts the node entries instead.
	m := &Merged{Results: res, job: reports.PromJob{ID: job.ID, Nodes: len(job.Nodes)}}
	err = m.set.AddFunc(filepath.Join(dir, resultsFile), func(w io.Writer) error {
		mg := &merger{jd: jd, job: job, steps: steps, opt: opt, res: res,
			enc: results.NewLineEncoder(w),
			// Past results.FoldAbove nodes, alike nodes fold into
			// groups: the reports of 16,384 nodes hold a few hundred
			// in full.
			fold: results.NewFolder(0)}
		return mg.write(expected)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// readJob reads job.json and steps.json; a job directory may lack
// either (a leader that died early, a copy of the nodes only).
func readJob(jd *jobFiles) (JobInfo, []Step, error) {
	var job JobInfo
	if err := jd.readJSON(jobFile, &job); err != nil && !errors.Is(err, os.ErrNotExist) {
		return job, nil, err
	}
	if err := checkNodeNames(jd.path(jobFile), job.Nodes); err != nil {
		return job, nil, err
	}
	var steps []Step
	if err := jd.readJSON(stepsFile, &steps); err != nil && !errors.Is(err, os.ErrNotExist) {
		return job, nil, err
	}
	return job, steps, nil
}

// expectedNodes is every node the merged report must account for: the
// job's nodes (each twice with a container image), or without job.json
// the node directories found.
func expectedNodes(jd *jobFiles, job JobInfo) ([]string, error) {
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
			return nil, fmt.Errorf("%s: no job.json and no node results: not a gdrcheck job directory", jd.dir)
		}
	}
	if job.ContainerImage != "" {
		for _, n := range job.Nodes {
			expected = append(expected, n+results.ContainerSuffix)
		}
	}
	return expected, nil
}

// merger streams one job directory into the staged results.json.
type merger struct {
	jd    *jobFiles
	job   JobInfo
	steps []Step
	opt   CollectOptions
	res   *results.Results
	enc   *results.Encoder
	fold  *results.Folder
	// allocated is set once the allocation's entry is written.
	allocated bool
}

// write merges each expected node, then the allocation, and ends the
// stream with the slim results.
func (mg *merger) write(expected []string) error {
	if err := mg.mergeNodes(expected); err != nil {
		return err
	}
	if err := mg.mergeAllocation(); err != nil {
		return err
	}
	mg.res.Finished = time.Now().UTC()
	mg.res.Nodes = mg.fold.Nodes()
	return mg.enc.EndFolded(mg.res, mg.res.Nodes)
}

// add shows n to the judge, amends it, writes it in full and keeps its
// slim copy. The allocation's entry carries the judge's suite instead.
func (mg *merger) add(n results.Node) error { return mg.addAs(n, false) }

// addOwn is add of a node read from its own file, nodes/<name>/results.json,
// which the merged results.json refers to instead where nothing in it
// failed.
func (mg *merger) addOwn(n results.Node) error { return mg.addAs(n, true) }

func (mg *merger) addAs(n results.Node, own bool) error {
	judge := mg.opt.Judge
	if n.Name == AllocationNode {
		mg.allocated = true
		if judge != nil {
			if s, ok := judge.Suite(); ok {
				n.Suites = append(n.Suites, s)
			}
		}
	} else if judge != nil {
		judge.Add(n)
	}
	had := len(n.Suites)
	if mg.opt.Amend != nil {
		var runs []results.Run
		if n.Name == AllocationNode {
			runs = mg.res.Runs
		}
		n = mg.opt.Amend(n, runs)
	}
	if err := mg.put(n, own, had); err != nil {
		return err
	}
	mg.fold.Add(n)
	return nil
}

// put writes n in full where a person reads it in the merged file (it
// failed, a suite could not run on it, or no file of its own holds it:
// a node that never reported), else a ref to its own file with the
// suites the merge added (Amend only adds suites).
func (mg *merger) put(n results.Node, own bool, had int) error {
	if own && n.Name != AllocationNode && !n.Failed() && !cannotRun(n) && len(n.Suites) >= had {
		return mg.enc.Ref(n.Name, n.Suites[had:])
	}
	return mg.enc.Node(n)
}

func cannotRun(n results.Node) bool {
	for _, s := range n.Suites {
		if s.CannotRun() {
			return true
		}
	}
	return false
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

// FailedNodes maps each node that failed or never reported to a short
// reason ending in the node's action, for draining: "kernel: no
// GPUDirect peer-memory mechanism works... action=RELOAD_DRIVER".
func FailedNodes(res *results.Results) map[string]string {
	causes, actions := failedNodes(res)
	for n, c := range causes {
		causes[n] = DrainReason(c, actions[n])
	}
	return causes
}

// failedNodes is FailedNodes' causes and each node's action: the node's
// own, or for a node the allocation's specs blame, that spec's.
func failedNodes(res *results.Results) (map[string]string, map[string]results.Action) {
	out := map[string]string{}
	actions := map[string]results.Action{}
	res.Each(func(n results.Node) {
		if n.Name == AllocationNode {
			blameNodes(n, res, out, actions)
			return
		}
		actions[n.Name] = results.MostDisruptive(actions[n.Name], n.Action)
		if n.Status != results.NodeEvaluated {
			out[n.Name] = n.Status + ": " + n.Reason
			return
		}
		if _, ok := out[n.Name]; !ok {
			if c := nodeCause(n); c != "" {
				out[n.Name] = c
			}
		}
	})
	return out, actions
}

// nodeCause is a failing node's drain cause: the first failed spec that
// asks the node's action, so the cause and the action agree, else the
// first failed spec; the compare suite's regressions are no cause.
func nodeCause(n results.Node) string {
	first := ""
	for _, s := range n.Suites {
		if s.Name == results.SuiteCompare {
			continue
		}
		for _, sp := range s.Specs {
			if !sp.Failed() {
				continue
			}
			c := s.Name + ": " + sp.Message
			if sp.Action == n.Action {
				return c
			}
			if first == "" {
				first = c
			}
		}
	}
	return first
}

// blameNodes adds the nodes the scaling suite named in a failed spec (a
// failed metric whose subject is a node of the job: slow in every pair,
// a severe outlier).
func blameNodes(alloc results.Node, res *results.Results, out map[string]string, actions map[string]results.Action) {
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
						actions[m.Subject] = results.MostDisruptive(actions[m.Subject], sp.Action)
					}
				}
			}
		}
	}
}
