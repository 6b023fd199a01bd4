package slurm

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/internal/shellquote"
)

// Submission is what `gdrcheck submit` asks of Slurm: the allocation and
// what the job does in it.
type Submission struct {
	// Allocation.
	Nodes         int
	Partition     string
	Account       string
	QOS           string
	Time          string // sbatch --time
	Reservation   string
	Constraint    string
	GPUsPerNode   int
	Exclusive     bool
	SbatchArgs    []string // extra --option[=value] words
	JobName       string
	SignalSeconds int // USR1 this long before the time limit, so the report is written

	// The job.
	Gdrcheck        string // path of the gdrcheck binary on the nodes
	Out             string // results directory on a shared filesystem; job-<id> goes below it
	Job             JobConfig
	ContainerImage  string // pyxis --container-image for the node suites
	ContainerMounts string // pyxis --container-mounts
}

// optionWord is an extra sbatch option: --name or --name=value, with no
// whitespace or quotes, so it is safe on an #SBATCH line as Slurm parses
// them.
var optionWord = regexp.MustCompile(`^--[a-z][a-z0-9-]*(=[^\s'"\\]+)?$`)

// MaxGPUsPerNode bounds --gpus-per-node: the largest GPU nodes built hold
// 16 GPUs (HGX-2); four times that leaves room, and keeps a run's ranks
// (nodes × GPUs) far inside an int.
const MaxGPUsPerNode = 64

// maxSignalSeconds is the most seconds sbatch --signal=SIG@TIME takes.
const maxSignalSeconds = 65535

// CheckGPUsPerNode refuses a --gpus-per-node outside 0 (the default) to
// MaxGPUsPerNode, naming the flag.
func CheckGPUsPerNode(n int) error {
	if n < 0 || n > MaxGPUsPerNode {
		return fmt.Errorf("--gpus-per-node %d: want 1 to %d (0: the default)", n, MaxGPUsPerNode)
	}
	return nil
}

// Validate refuses anything that could change the script's meaning or
// that Slurm would reject, naming the flag and the value.
func (s *Submission) Validate() error {
	if s.Nodes < 1 || s.Nodes > hostlist.MaxNodes {
		return fmt.Errorf("--nodes %d: want 1 to %d, the largest allocation gdrcheck is built for", s.Nodes, hostlist.MaxNodes)
	}
	if s.SignalSeconds < 0 || s.SignalSeconds > maxSignalSeconds {
		return fmt.Errorf("--signal-seconds %d: want 0 to %d (sbatch --signal's limit)", s.SignalSeconds, maxSignalSeconds)
	}
	for flag, v := range map[string]string{"partition": s.Partition, "account": s.Account, "qos": s.QOS, "reservation": s.Reservation, "job-name": s.JobName} {
		if err := checkName(flag, v); err != nil {
			return err
		}
	}
	if s.Time != "" && !slurmTime.MatchString(s.Time) {
		return fmt.Errorf("--time %q: not a Slurm time limit (minutes, H:M:S, D-H:M:S)", s.Time)
	}
	if s.Constraint != "" && !slurmConstraint.MatchString(s.Constraint) {
		return fmt.Errorf("--constraint %q: only feature names and & | , [ ] ( ) * are allowed", s.Constraint)
	}
	if err := CheckGPUsPerNode(s.GPUsPerNode); err != nil {
		return err
	}
	for _, a := range s.SbatchArgs {
		if !optionWord.MatchString(a) {
			return fmt.Errorf("--sbatch-arg %q: must be one --option or --option=value without spaces or quotes", a)
		}
	}
	for flag, v := range map[string]string{"gdrcheck": s.Gdrcheck, "out": s.Out, "container-image": s.ContainerImage, "container-mounts": s.ContainerMounts} {
		if err := checkWord(flag, v); err != nil {
			return err
		}
	}
	if s.Gdrcheck == "" || s.Out == "" {
		return fmt.Errorf("the gdrcheck path and --out are required")
	}
	return s.Job.Validate()
}

// SbatchArgv is the sbatch command line that submits the script (read
// from standard input). Options are separate argv words: no shell sees
// them.
func (s *Submission) SbatchArgv() []string {
	return []string{"sbatch", "--parsable", "--output=" + strings.TrimSuffix(s.Out, "/") + "/slurm-%j.out"}
}

var script = template.Must(template.New("sbatch").Parse(`#!/bin/bash
# gdrcheck {{.Version}}: one allocation, node suites on every node, then the
# multi-node collectives from the leader; the merged report is written on
# any exit, and on USR1 {{.Signal}} s before the time limit.
# Submit with: {{.Submit}} < this-script
#SBATCH --job-name={{.JobName}}
#SBATCH --nodes={{.Nodes}}
#SBATCH --ntasks-per-node=1
{{- range .Options}}
#SBATCH {{.}}
{{- end}}
#SBATCH --signal=B:USR1@{{.Signal}}
exec {{.Exec}}
`))

// Render writes the batch script. The batch step execs `gdrcheck job`,
// which receives USR1 itself: it cancels what runs and writes the report.
func (s *Submission) Render(version string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	if s.Job.GPUsPerNode == 0 {
		s.Job.GPUsPerNode = s.GPUsPerNode
	}
	var opts []string
	add := func(k, v string) {
		if v != "" {
			opts = append(opts, k+"="+v)
		}
	}
	add("--partition", s.Partition)
	add("--account", s.Account)
	add("--qos", s.QOS)
	add("--time", s.Time)
	add("--reservation", s.Reservation)
	add("--constraint", s.Constraint)
	if s.GPUsPerNode > 0 {
		add("--gpus-per-node", strconv.Itoa(s.GPUsPerNode))
	}
	if s.Exclusive {
		opts = append(opts, "--exclusive")
	}
	opts = append(opts, s.SbatchArgs...)
	name := s.JobName
	if name == "" {
		name = "gdrcheck"
	}
	sig := s.SignalSeconds
	if sig <= 0 {
		sig = 120
	}
	// Every word is quoted; the job directory's "$SLURM_JOB_ID" is the
	// one expansion the script means.
	var words wordList
	execLine := []string{words.quote(s.Gdrcheck), "job", "--out", words.quote(strings.TrimSuffix(s.Out, "/")) + `/job-"$SLURM_JOB_ID"`}
	for _, a := range s.Job.Args() {
		execLine = append(execLine, words.quote(a))
	}
	if s.ContainerImage != "" {
		execLine = append(execLine, "--container-image", words.quote(s.ContainerImage))
	}
	if s.ContainerMounts != "" {
		execLine = append(execLine, "--container-mounts", words.quote(s.ContainerMounts))
	}
	var submit []string
	for _, a := range s.SbatchArgv() {
		submit = append(submit, words.quote(a))
	}
	if words.err != nil {
		return "", fmt.Errorf("the batch script: %w", words.err)
	}
	var b bytes.Buffer
	err := script.Execute(&b, map[string]any{
		"Version": version, "JobName": name, "Nodes": s.Nodes, "Options": opts, "Signal": sig,
		"Exec": strings.Join(execLine, " "), "Submit": strings.Join(submit, " "),
	})
	return b.String(), err
}

// wordList quotes words for the script and keeps the first word sh could
// not hold.
type wordList struct{ err error }

func (l *wordList) quote(s string) string {
	q, err := shellquote.Word(s)
	if err != nil && l.err == nil {
		l.err = err
	}
	return q
}

// JobConfig is what the job does inside the allocation; it travels as
// `gdrcheck job` flags.
type JobConfig struct {
	Suites               []string
	NCCLTestsDir         string
	PerftestDir          string
	BaselineDir          string
	GPUsPerNode          int           // ranks per node for the multi-node collectives
	StepTimeout          time.Duration // watchdog of the node suites step
	NCCLSrunArgs         []string      // e.g. --mpi=pmix for MPI-built nccl-tests
	Scaling              bool          // run the multi-node collectives
	ScalingPairs         string        // when the pairwise rounds run: auto, always, never
	DrainOnFail          bool
	AllowMissingBaseline bool
	// CompareTo is a results.json, run or job directory the merged
	// report is compared with (gdrcheck compare); CompareTolerance
	// overrides the baselines' bands in that comparison.
	CompareTo        string
	CompareTolerance float64
	PromTextfile     string // the job's Prometheus textfile, on the first node
}
