package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// AllocationNode names the report entry of the scaling suite.
const AllocationNode = results.AllocationNode

// Leader is the job inside the allocation: it runs in the batch step on
// the first node and drives everything else with srun.
type Leader struct {
	Client          Client
	Gdrcheck        string // this binary, as the nodes see it
	Out             string // the job directory
	JobID           string
	NodeList        string // SLURM_JOB_NODELIST
	Restart         int
	Config          JobConfig
	ContainerImage  string
	ContainerMounts string
	Progress        io.Writer
	Version         string
	// Amend, when set, changes every node as the report is merged (the
	// compare suite of --compare-to).
	Amend Amend
	// Judge, when set, judges the nodes against each other as the report
	// is merged (suites/allocation).
	Judge Judge

	steps []Step
}

func (l *Leader) logf(format string, a ...any) {
	if l.Progress != nil {
		fmt.Fprintf(l.Progress, "gdrcheck job: "+format+"\n", a...)
	}
}

// Run runs the job. ctx is cancelled when the job is told to end (USR1
// before the time limit, TERM on scancel): what runs is stopped and the
// merged report is still written.
func (l *Leader) Run(ctx context.Context) (*results.Results, error) {
	nodes, err := l.Client.Hostnames(context.Background(), l.NodeList)
	if err != nil {
		return nil, err
	}
	job := JobInfo{ID: l.JobID, Nodes: nodes, Started: time.Now().UTC(), Restart: l.Restart, Config: l.Config, Version: l.Version, ContainerImage: l.ContainerImage}
	if err := writeJSON(filepath.Join(l.Out, jobFile), job); err != nil {
		return nil, err
	}
	// A requeued job starts over: results of the earlier attempt would
	// otherwise pass for this one's.
	if l.Restart > 0 {
		os.RemoveAll(filepath.Join(l.Out, nodesDir))
		os.RemoveAll(filepath.Join(l.Out, scaleDir))
		l.logf("restart %d of job %s: earlier results removed", l.Restart, l.JobID)
	}
	if err := os.MkdirAll(filepath.Join(l.Out, nodesDir), 0o755); err != nil {
		return nil, err
	}

	l.logf("node suites on %s (%d nodes)", hostlist.Compress(nodes), len(nodes))
	l.nodeSuites(ctx, nodes)
	if l.ContainerImage != "" && ctx.Err() == nil {
		l.logf("container suite in %s", l.ContainerImage)
		l.containerSuites(ctx, nodes)
	}

	note := ""
	if ctx.Err() != nil {
		note = "the job was told to end (time limit near, or cancelled) before it finished"
	} else if l.Config.Scaling && wantsNCCL(l.Config.Suites) {
		if err := l.scale(ctx, nodes); err != nil {
			l.logf("multi-node collectives: %v", err)
		}
	}
	m, err := Collect(l.Out, CollectOptions{Note: note, Amend: l.Amend, Judge: l.Judge})
	if err != nil {
		return nil, err
	}
	// With {node} in PATH the node steps' textfiles and the job's
	// (on the first node) do not overwrite each other.
	prom := strings.ReplaceAll(l.Config.PromTextfile, "{node}", AllocationNode)
	if err := m.Write(reports.WriteOptions{PromTextfile: prom}); err != nil {
		return nil, err
	}
	res := m.Results
	if l.Config.DrainOnFail {
		failed := FailedNodes(res)
		if len(failed) > 0 {
			done, err := l.Client.Drain(context.Background(), failed)
			for _, d := range done {
				l.logf("%s %s: %s", d.Action, d.Node, d.Why)
			}
			if err != nil {
				l.logf("draining: %v", err)
			}
		}
	}
	return res, nil
}

func wantsNCCL(suites []string) bool {
	if len(suites) == 0 {
		return true
	}
	for _, s := range suites {
		if s == "collectives" || s == "negative" {
			return true
		}
	}
	return false
}

// srun runs one step, stopped by ctx or the watchdog with SIGTERM (srun
// then cancels the step on every node), and records it in steps.json.
func (l *Leader) srun(ctx context.Context, name string, nodes []string, timeout time.Duration, args []string, stdout io.Writer) Step {
	s := Step{Name: name, Nodes: nodes, Command: append([]string{"srun"}, args...), Started: time.Now().UTC()}
	l.steps = append(l.steps, s)
	i := len(l.steps) - 1
	_ = writeJSON(filepath.Join(l.Out, stepsFile), l.steps)

	wctx := ctx
	var cancel context.CancelFunc = func() {}
	if timeout > 0 {
		wctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	cmd := exec.CommandContext(wctx, "srun", args...)
	cmd.Env = append(os.Environ(), l.Client.Env...)
	cmd.Stdout, cmd.Stderr = stdout, stdout
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	err := cmd.Run()
	s.Finished = time.Now().UTC()
	switch {
	case ctx.Err() != nil:
		s.Cancelled = true
		s.Error = "cancelled: the job was told to end"
	case wctx.Err() == context.DeadlineExceeded:
		s.TimedOut = true
		s.Error = fmt.Sprintf("watchdog: no end after %s", timeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			s.ExitCode = ee.ExitCode()
		}
		s.Error = err.Error()
	}
	l.steps[i] = s
	_ = writeJSON(filepath.Join(l.Out, stepsFile), l.steps)
	return s
}

// nodeSuites fans the node suites out, one task per node, each writing its
// own results.json; a task that fails does not stop the others. With a
// container image the container suite runs on the host too, so the report
// can set the two side by side.
func (l *Leader) nodeSuites(ctx context.Context, nodes []string) {
	s := l.srun(ctx, "node-suites", nodes, l.stepTimeout(), l.nodeSuitesArgs(nodes), io.Discard)
	if s.Error != "" {
		l.logf("node suites: %s", s.Error)
	}
}

// nodeSuitesArgs are the node step's srun arguments and command.
func (l *Leader) nodeSuitesArgs(nodes []string) []string {
	c := l.Config
	suites := c.Suites
	if l.ContainerImage != "" && len(suites) > 0 && !slices.Contains(suites, "container") {
		suites = append(append([]string{}, suites...), "container")
	}
	if l.ContainerImage != "" && len(c.Suites) == 0 {
		suites = append(defaultSuites(), "container")
	}
	run := l.runArgs(NodeOut(l.Out), "", suites)
	if c.PromTextfile != "" {
		// Each node writes its own textfile at PATH on itself, its
		// series labelled with its name, for its own node_exporter.
		// The container step does not: PATH may not be mounted in the
		// image, and it would replace the host's.
		run = append(run, "--prom-textfile", c.PromTextfile)
	}
	return append(l.stepArgs(nodes, "%N.log"), run...)
}

// containerSuites runs the container suite inside the workload's image
// (pyxis), gdrcheck and the job directory mounted in, each node reporting
// as "<node>-container".
func (l *Leader) containerSuites(ctx context.Context, nodes []string) {
	args := append(l.stepArgs(nodes, "%N"+results.ContainerSuffix+".log"), l.containerArgs()...)
	run := l.runArgs(filepath.Join(l.Out, nodesDir, "{node}"+results.ContainerSuffix), "{node}"+results.ContainerSuffix, []string{"container"})
	s := l.srun(ctx, "container-suite", nodes, l.stepTimeout(), append(args, run...), io.Discard)
	if s.Error != "" {
		l.logf("container suite: %s", s.Error)
	}
}

// stepArgs are the srun options of a one-task-per-node step.
func (l *Leader) stepArgs(nodes []string, logName string) []string {
	return []string{
		"--nodes=" + strconv.Itoa(len(nodes)), "--ntasks=" + strconv.Itoa(len(nodes)), "--ntasks-per-node=1",
		"--kill-on-bad-exit=0", "--output=" + filepath.Join(l.Out, nodesDir, logName),
	}
}

// containerArgs are pyxis' options: the image, and gdrcheck and the job
// directory mounted at the same paths.
func (l *Leader) containerArgs() []string {
	mounts := l.Gdrcheck + ":" + l.Gdrcheck + "," + l.Out + ":" + l.Out
	if l.ContainerMounts != "" {
		mounts += "," + l.ContainerMounts
	}
	return []string{"--container-image=" + l.ContainerImage, "--container-mounts=" + mounts}
}

// runArgs is the gdrcheck run command of a node step.
func (l *Leader) runArgs(out, nodeName string, suites []string) []string {
	c := l.Config
	run := []string{l.Gdrcheck, "run", "-q", "--out", out}
	if nodeName != "" {
		run = append(run, "--node-name", nodeName)
	}
	if len(suites) > 0 {
		run = append(run, "--suites", strings.Join(suites, ","))
	}
	run = append(run, c.runOptionArgs(toRun)...)
	// The suites give up before the watchdog does, so a slow node still
	// reports what it has.
	return append(run, "--timeout", (l.stepTimeout() * 9 / 10).String())
}

func (l *Leader) stepTimeout() time.Duration {
	if l.Config.StepTimeout > 0 {
		return l.Config.StepTimeout
	}
	return time.Hour
}

// defaultSuites are run's defaults, named so container can be added.
func defaultSuites() []string {
	return []string{"bar1", "collectives", "kernel", "negative", "topology"}
}

// Files of the scaling step in DIR/scale.
const (
	scaleNodesFile = "nodes.txt"   // the nodes, one a line (--nodes-file)
	scaleLogFile   = "scaling.log" // what the step printed
)

// scale runs the scaling suite from the leader, as a gdrcheck run of its
// own (Ginkgo runs once per process): all_reduce across 1, 2, 4 ... N
// nodes through srun, and the pairwise rounds where they are needed. The
// job only schedules it; the suite judges. What it needs of the nodes
// (their GPUs and the baseline they matched) comes from their
// results.json. The nodes go by file, whatever their number, and what
// the step prints goes to scale/scaling.log, so that a step that dies
// leaves its last words for the merged report. The step is recorded in
// steps.json even when it cannot start.
func (l *Leader) scale(ctx context.Context, nodes []string) error {
	s := Step{Name: "scaling", Nodes: nodes, Started: time.Now().UTC()}
	l.steps = append(l.steps, s)
	i := len(l.steps) - 1
	defer func() { _ = writeJSON(filepath.Join(l.Out, stepsFile), l.steps) }()
	args, err := l.prepareScale(nodes)
	if err != nil {
		s.Finished, s.Error = time.Now().UTC(), "not started: "+err.Error()
		l.steps[i] = s
		return err
	}
	s.Command = append([]string{l.Gdrcheck}, args...)
	l.steps[i] = s
	_ = writeJSON(filepath.Join(l.Out, stepsFile), l.steps)
	logPath := filepath.Join(l.Out, scaleDir, scaleLogFile)
	out, err := os.Create(logPath)
	if err != nil {
		s.Finished, s.Error = time.Now().UTC(), "not started: "+err.Error()
		l.steps[i] = s
		return err
	}
	defer out.Close()
	l.logf("scaling suite across %s (%d nodes), output in %s", hostlist.Compress(nodes), len(nodes), logPath)
	cmd := exec.CommandContext(ctx, l.Gdrcheck, args...)
	cmd.Env = append(os.Environ(), l.Client.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Told to end, the suite stops its runs and still writes its report.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	err = cmd.Run()
	s.Finished = time.Now().UTC()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		s.Cancelled, s.Error = true, "cancelled: the job was told to end"
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		s.ExitCode = 1 // a failed spec: the report says which
	case err != nil:
		s.Error = err.Error()
		if errors.As(err, &ee) {
			s.ExitCode = ee.ExitCode()
		}
	}
	l.steps[i] = s
	if s.Error != "" {
		if tail := logTail(logPath, 3); tail != "" {
			return fmt.Errorf("scaling suite: %s; last output: %s", s.Error, tail)
		}
		return fmt.Errorf("scaling suite: %s", s.Error)
	}
	return nil
}

// prepareScale writes the node file and returns the step's arguments.
func (l *Leader) prepareScale(nodes []string) ([]string, error) {
	first, err := l.firstNode(nodes)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(l.Out, scaleDir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(out, scaleNodesFile)
	if err := hostlist.WriteFile(file, nodes); err != nil {
		return nil, err
	}
	return l.scaleArgs(file, first), nil
}

// scaleArgs is the scaling step's command line: the nodes by file, so no
// argument grows with them. Without -q: its progress names each run's
// nodes and log, in scale/scaling.log.
func (l *Leader) scaleArgs(nodesFile string, first results.Node) []string {
	c := l.Config
	gpus := c.GPUsPerNode
	if gpus == 0 {
		gpus, _ = strconv.Atoi(first.Fact("gpus"))
	}
	args := []string{"run", "--suites", "scaling", "--out", filepath.Join(l.Out, scaleDir), "--node-name", AllocationNode,
		"--nodes-file", nodesFile, "--node-results", filepath.Join(l.Out, nodesDir)}
	if gpus > 0 {
		args = append(args, "--gpus-per-node", strconv.Itoa(gpus))
	}
	if first.Profile != "" {
		args = append(args, "--baseline-profile", first.Profile)
	}
	return append(args, c.runOptionArgs(toScale)...)
}

func (l *Leader) firstNode(nodes []string) (results.Node, error) {
	for _, n := range nodes {
		r, err := results.Read(filepath.Join(l.Out, nodesDir, n, resultsFile))
		if err == nil && len(r.Nodes) > 0 && r.Nodes[0].Status == results.NodeEvaluated {
			return r.Nodes[0], nil
		}
	}
	return results.Node{}, fmt.Errorf("no node reported evidence to size the multi-node runs")
}
