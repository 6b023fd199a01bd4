package localcluster

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The test cluster lives apart from the default one (/tmp/gdrcheck-slurm,
// port 16817) so that `make run` and `go test` do not stop each other's.
const (
	testStateDir = "/tmp/gdrcheck-slurm-localcluster-test"
	testPort     = 26817
)

// startTestCluster skips unless the test can run Slurm daemons, installs
// Slurm if it is missing, and starts a four-node cluster that is stopped when
// the test ends.
func startTestCluster(t *testing.T) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Slurm daemons; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: slurmd runs job steps as their users")
	}
	_, err := exec.LookPath("slurmctld")
	if _, aptErr := exec.LookPath("apt-get"); err != nil && aptErr != nil {
		t.Skip("Slurm is not installed and there is no apt-get to install it")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, Options{StateDir: testStateDir, Port: testPort, Install: true, Log: tlog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up in %v", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func TestCluster(t *testing.T) {
	c := startTestCluster(t)
	if want := []string{"node1", "node2", "node3", "node4"}; !slices.Equal(c.Nodes, want) {
		t.Fatalf("Nodes = %q, want %q", c.Nodes, want)
	}
	if !slices.Contains(c.Env(), "SLURM_CONF="+filepath.Join(testStateDir, "slurm.conf")) {
		t.Fatalf("Env() has no SLURM_CONF for %s", testStateDir)
	}

	t.Run("each task sees its node in SLURMD_NODENAME", func(t *testing.T) {
		out := run(t, c, "srun", "-N4", "-l", "printenv", "SLURMD_NODENAME")
		got := byTask(t, out)
		want := map[string]string{"0": "node1", "1": "node2", "2": "node3", "3": "node4"}
		if !maps.Equal(got, want) {
			t.Errorf("srun -N4 -l printenv SLURMD_NODENAME: got %v, want %v\n%s", got, want, out)
		}
	})

	t.Run("nodes.env reaches the tasks of its node", func(t *testing.T) {
		err := c.WriteNodeEnv(map[string]map[string]string{
			"node3": {"GDRCHECK_TEST_ROOT": "/fixtures/nodes/node3 with space"},
			"*":     {"GDRCHECK_TEST_ALL": "yes"},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(filepath.Join(c.StateDir, "nodes.env")) })
		out := run(t, c, "srun", "-N4", "-l", "sh", "-c", `echo "$GDRCHECK_TEST_ALL:${GDRCHECK_TEST_ROOT:-}"`)
		got := byTask(t, out)
		want := map[string]string{"0": "yes:", "1": "yes:", "2": "yes:/fixtures/nodes/node3 with space", "3": "yes:"}
		if !maps.Equal(got, want) {
			t.Errorf("got %v, want %v\n%s", got, want, out)
		}
	})

	t.Run("a batch job runs one step task per node and completes", func(t *testing.T) {
		dir := t.TempDir()
		jobScript := filepath.Join(dir, "job.sh")
		body := "#!/bin/sh\nsrun --ntasks-per-node=1 sh -c 'echo \"$SLURM_JOB_ID\" > " + dir + "/out-$SLURMD_NODENAME'\n"
		if err := os.WriteFile(jobScript, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		out := run(t, c, "sbatch", "--parsable", "--wait", "-N4", "-J", "localcluster-test",
			"-o", filepath.Join(dir, "slurm-%j.out"), "-D", dir, jobScript)
		jobID, _, _ := strings.Cut(strings.TrimSpace(out), ";")
		for _, node := range c.Nodes {
			b, err := os.ReadFile(filepath.Join(dir, "out-"+node))
			if err != nil {
				t.Errorf("no file from %s: %v", node, err)
			} else if strings.TrimSpace(string(b)) != jobID {
				t.Errorf("out-%s holds %q, want job %s", node, b, jobID)
			}
		}
		job := showJob(t, c, jobID)
		for k, want := range map[string]string{"JobState": "COMPLETED", "ExitCode": "0:0", "NumNodes": "4", "NodeList": "node[1-4]", "Partition": Partition} {
			if job[k] != want {
				t.Errorf("job %s: %s=%q, want %q", jobID, k, job[k], want)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "slurm-"+jobID+".out"))
			t.Logf("job output:\n%s", b)
		}
	})

	t.Run("a second Start replaces a running cluster", func(t *testing.T) {
		// The way a crashed earlier run leaves things: daemons up, a job
		// running, a node drained.
		run(t, c, "sbatch", "-N1", "-o", "/dev/null", "--wrap", "sleep 600")
		run(t, c, "scontrol", "update", "NodeName=node2", "State=DRAIN", "Reason=gdrcheck: test")
		c2 := startTestCluster(t)
		out := run(t, c2, "sinfo", "-h", "-N", "-o", "%N %T")
		if want := "node1 idle\nnode2 idle\nnode3 idle\nnode4 idle"; strings.TrimSpace(out) != want {
			t.Errorf("sinfo after restart:\n%s\nwant\n%s", out, want)
		}
		if out := run(t, c2, "squeue", "-h"); out != "" {
			t.Errorf("squeue after restart shows old jobs:\n%s", out)
		}
	})
}

func TestEnvDropsCallerSlurmVariables(t *testing.T) {
	t.Setenv("SLURM_JOB_ID", "4242")
	t.Setenv("SBATCH_PARTITION", "batch")
	t.Setenv("SLURM_CONF", "/etc/slurm/slurm.conf")
	c := &Cluster{vars: []string{"SLURM_CONF=/tmp/x/slurm.conf"}}
	env := c.Env()
	for _, kv := range env {
		if strings.HasPrefix(kv, "SLURM_") && kv != "SLURM_CONF=/tmp/x/slurm.conf" || strings.HasPrefix(kv, "SBATCH_") {
			t.Errorf("Env() keeps %q", kv)
		}
	}
	if !slices.Contains(env, "SLURM_CONF=/tmp/x/slurm.conf") {
		t.Errorf("Env() lacks the cluster's SLURM_CONF: %q", env)
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) && os.Getenv("PATH") != "" {
		t.Error("Env() dropped PATH")
	}
}

func TestParseVars(t *testing.T) {
	got := parseVars("SLURM_CONF=/tmp/a/slurm.conf\n\nnoise line = x\nFOO=\n")
	want := []string{"SLURM_CONF=/tmp/a/slurm.conf", "FOO="}
	if !slices.Equal(got, want) {
		t.Errorf("parseVars = %q, want %q", got, want)
	}
}

// run runs a Slurm client command against c and returns its stdout.
func run(t *testing.T, c *Cluster, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := c.Command(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// byTask parses `srun -l` output ("3: text") into task -> text.
func byTask(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for line := range strings.Lines(out) {
		task, text, ok := strings.Cut(strings.TrimRight(line, "\n"), ": ")
		if !ok {
			t.Fatalf("srun -l line without a task label: %q", line)
		}
		m[strings.TrimSpace(task)] = text
	}
	return m
}

// showJob parses `scontrol show job -o ID` into its KEY=VALUE fields.
// Values with spaces (Reason=..., Comment=...) are cut at the space; the
// fields checked here have none.
func showJob(t *testing.T, c *Cluster, id string) map[string]string {
	t.Helper()
	out := run(t, c, "scontrol", "show", "job", "-o", id)
	job := map[string]string{}
	for _, f := range strings.Fields(out) {
		if k, v, ok := strings.Cut(f, "="); ok {
			job[k] = v
		}
	}
	return job
}

// tlog sends cluster.sh's progress lines to the test log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
