package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
)

// The shell steps of examples/, run as the pipelines run them, against
// recorded nodes: the canary before the upgrade is the healthy H100 node,
// after it the same node with the closed modules and no nvidia_peermem.
// The examples cannot rot: a renamed flag or a changed exit code fails
// here.

const (
	healthy = "h100x8-nvswitch-cx7-pix"
	broken  = "h100x8-proprietary-no-peermem"
)

type step struct {
	name, script string
	upgrade      bool // the site's upgrade: what follows runs on the node after it
	allowed      []int
}

// jenkinsSteps are the sh steps of examples/Jenkinsfile, in order.
func jenkinsSteps(t *testing.T) []step {
	t.Helper()
	b, err := os.ReadFile("../../examples/Jenkinsfile")
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	for _, m := range regexp.MustCompile(`sh '([^']*)'`).FindAllStringSubmatch(string(b), -1) {
		s := step{name: "sh", script: m[1], upgrade: strings.Contains(m[1], "UPGRADE_COMMAND")}
		if strings.Contains(m[1], "upgrade-gate.sh after") {
			s.allowed = []int{1} // inside catchError: the comparison still runs
		}
		steps = append(steps, s)
	}
	if len(steps) != 4 {
		t.Fatalf("examples/Jenkinsfile: %d sh steps, want before, upgrade, after, compare", len(steps))
	}
	return steps
}

// gitlabSteps are the script lines of examples/.gitlab-ci.yml, stage by
// stage, and its variables.
func gitlabSteps(t *testing.T) ([]step, map[string]string) {
	t.Helper()
	b, err := os.ReadFile("../../examples/.gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("examples/.gitlab-ci.yml: %v", err)
	}
	var stages []string
	var vars map[string]string
	if n, ok := doc["stages"]; !ok || n.Decode(&stages) != nil {
		t.Fatal("examples/.gitlab-ci.yml: no stages list")
	}
	if n, ok := doc["variables"]; ok {
		if err := n.Decode(&vars); err != nil {
			t.Fatal(err)
		}
	}
	type job struct {
		Stage        string   `yaml:"stage"`
		Script       []string `yaml:"script"`
		AllowFailure struct {
			ExitCodes []int `yaml:"exit_codes"`
		} `yaml:"allow_failure"`
	}
	var steps []step
	for _, stage := range stages {
		for name, n := range doc {
			var j job
			if n.Kind != yaml.MappingNode || n.Decode(&j) != nil || j.Stage != stage {
				continue
			}
			for _, s := range j.Script {
				steps = append(steps, step{name: name, script: s, upgrade: strings.Contains(s, "UPGRADE_COMMAND"), allowed: j.AllowFailure.ExitCodes})
			}
		}
	}
	if len(steps) != 4 {
		t.Fatalf("examples/.gitlab-ci.yml: %d script lines, want before, upgrade, after, compare", len(steps))
	}
	return steps, vars
}

// runSteps runs the steps in the checkout's root, as a CI runner does,
// and returns each one's exit code. The upgrade itself is `true`; after
// it, the node is the after root.
func runSteps(t *testing.T, steps []step, vars map[string]string, after string) (codes []int, gate string) {
	t.Helper()
	gate = filepath.Join(t.TempDir(), "gate")
	root := healthy
	for _, s := range steps {
		if s.upgrade {
			root = after
		}
		cmd := exec.Command("sh", "-ec", s.script)
		cmd.Dir = "../.."
		cmd.Env = os.Environ()
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Env = append(cmd.Env, "GDRCHECK="+bin, "GATE_DIR="+gate, "UPGRADE_COMMAND=true", "GATE_ARGS=-q",
			"GDRCHECK_HOST_ROOT="+abs(t, nodes+root+".ttar"), "SLURMD_NODENAME=canary")
		r := runCmd(t, cmd)
		t.Logf("%s: %s: exit %d", s.name, s.script, r.code)
		codes = append(codes, r.code)
		if r.code != 0 && !slices.Contains(s.allowed, r.code) {
			break // the pipeline stops here
		}
	}
	return codes, gate
}

func TestExamplePipelinesGateAnUpgrade(t *testing.T) {
	t.Parallel()
	gl, vars := gitlabSteps(t)
	for _, p := range []struct {
		name  string
		steps []step
	}{{"Jenkinsfile", jenkinsSteps(t)}, {".gitlab-ci.yml", gl}} {
		t.Run(p.name+" healthy upgrade", func(t *testing.T) {
			codes, gate := runSteps(t, p.steps, vars, healthy)
			if fmt.Sprint(codes) != "[0 0 0 0]" {
				t.Fatalf("exit codes %v, want every step 0", codes)
			}
			validateJUnit(t, filepath.Join(gate, "after", "junit.xml"))
			validateJUnit(t, filepath.Join(gate, "compare.xml"))
			for _, f := range []string{"before/report.html", "after/report.html", "compare.html", "compare.md"} {
				if _, err := os.Stat(filepath.Join(gate, f)); err != nil {
					t.Errorf("the pipeline archives %s: %v", f, err)
				}
			}
		})
		t.Run(p.name+" upgrade that loses peer memory", func(t *testing.T) {
			codes, gate := runSteps(t, p.steps, vars, broken)
			if fmt.Sprint(codes) != "[0 0 1 1]" {
				t.Fatalf("exit codes %v, want the gate after and the comparison to fail (1)", codes)
			}
			b, err := os.ReadFile(filepath.Join(gate, "compare.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"kernel modules open -> proprietary", "peer-memory mechanism dmabuf -> none"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("compare.md does not say %q:\n%s", want, b)
				}
			}
			validateJUnit(t, filepath.Join(gate, "compare.xml"))
		})
	}
}

// examples/slurm/weekly.sh from cron, twice on the local Slurm cluster:
// the first job passes and becomes last-pass; in the second, node3 lost
// its peer memory: it is drained for the kernel suite, the comparison
// with last-pass names what changed, and last-pass stays the first job.
func TestExampleWeeklySlurmJobComparesWithTheLastPass(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	jobs := t.TempDir()
	weekly := func(roots map[string]string) (result, string) {
		env := map[string]map[string]string{"*": {}}
		for n, root := range roots {
			env[n] = map[string]string{"GDRCHECK_HOST_ROOT": abs(t, nodes+root+".ttar")}
		}
		if err := c.WriteNodeEnv(env); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("../../examples/slurm/weekly.sh")
		cmd.Env = append(c.Env(), "GDRCHECK="+bin, "GDRCHECK_JOBS="+jobs, "GDRCHECK_NODES=4", "GDRCHECK_PARTITION=gpu",
			"GDRCHECK_SUBMIT_ARGS=--suites topology,kernel,bar1 --poll 1s")
		r := runCmd(t, cmd)
		last, _ := os.Readlink(filepath.Join(jobs, "last-pass"))
		return r, last
	}
	all := func(root string) map[string]string {
		return map[string]string{"node1": root, "node2": root, "node3": root, "node4": root}
	}
	r, first := weekly(all(healthy))
	if r.code != 0 || first == "" {
		t.Fatalf("the first week: exit %d, last-pass %q\n%s\n%s", r.code, first, r.stdout, r.stderr)
	}
	roots := all(healthy)
	roots["node3"] = broken
	r, last := weekly(roots)
	if r.code != results.ExitFailed {
		t.Fatalf("the second week: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if last != first {
		t.Errorf("last-pass %s after a failed week, want %s still", last, first)
	}
	for _, want := range []string{"Compared with the run before", "kernel modules open -> proprietary", "  node3: kernel: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the second week's output lacks %q:\n%s", want, r.stdout)
		}
	}
	nodesNow, err := slurm.Client{Env: c.Vars()}.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodesNow {
		if drained := strings.Contains(n["State"], "DRAIN"); drained != (n["NodeName"] == "node3") {
			t.Errorf("%s: state %s (%s)", n["NodeName"], n["State"], n["Reason"])
		}
	}
	undrain := exec.Command(bin, "undrain")
	undrain.Env = c.Env()
	if out, err := undrain.CombinedOutput(); err != nil {
		t.Errorf("undrain: %v %s", err, out)
	}
}
