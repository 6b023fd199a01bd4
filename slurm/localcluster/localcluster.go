// Package localcluster runs a real Slurm cluster on loopback: one slurmctld
// and N slurmd (node1..nodeN) on 127.0.0.1, served by a private munged. Tests
// and `make run` use it to submit gdrcheck with the real sbatch and srun.
//
// The work is done by cluster.sh, which is embedded in this package and also
// usable by hand (see README.md). Starting needs root, because slurmd runs
// jobs as their users, and Debian's slurm-wlm and munge packages (Install runs
// apt-get for them).
//
// A job step learns which node it is on from SLURMD_NODENAME (node1..nodeN).
// Lines "nodeK NAME=VALUE" (or "* NAME=VALUE") in StateDir/nodes.env reach the
// environment of every task on nodeK through a TaskProlog; see WriteNodeEnv.
package localcluster

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed cluster.sh
var script []byte

const (
	// DefaultStateDir is used when Options.StateDir and $GDRCHECK_SLURM_STATE
	// are empty. It matches cluster.sh's default.
	DefaultStateDir = "/tmp/gdrcheck-slurm"
	// DefaultNodes is the number of slurmd started when Options.Nodes is 0.
	DefaultNodes = 4
	// Partition is the cluster's only partition, and the default one.
	Partition = "gpu"
)

// Options says which cluster to start. The zero value starts the default
// cluster of cluster.sh: four nodes in /tmp/gdrcheck-slurm on port 16817.
type Options struct {
	// StateDir holds slurm.conf, env.sh, nodes.env, logs, spool and pid
	// files. Empty means $GDRCHECK_SLURM_STATE, then DefaultStateDir.
	// One state dir holds at most one cluster: Start stops the one there.
	StateDir string
	// Nodes is the number of slurmd; 0 means DefaultNodes.
	Nodes int
	// Port is slurmctld's port on 127.0.0.1; slurmd nodeK listens on
	// Port+K. 0 means $GDRCHECK_SLURM_PORT, then 16817. Clusters that run
	// at the same time need different state dirs and port ranges.
	Port int
	// Script is the path of cluster.sh. Empty means the copy embedded in
	// this package, written to StateDir/cluster.sh.
	Script string
	// Install runs "cluster.sh install" first: apt-get installs slurm-wlm
	// and munge when they are missing, and does nothing otherwise.
	Install bool
	// Log receives cluster.sh's progress lines. Nil discards them; they
	// are part of the error either way when something fails.
	Log io.Writer
	// Hooks are the health loop's slurm.conf lines; the zero value has
	// none, as before.
	Hooks Hooks
}

// Hooks are the programs slurmd itself runs: HealthCheckProgram every
// HealthCheckInterval, Prolog before a job, Epilog after it. Each command
// is one line of shell words (a binary and its flags); cluster.sh wraps it
// in StateDir/hook-<name>.sh, since slurmd passes no arguments and makes
// the hook's environment itself. The wrapper exports SLURM_CONF and the
// node's nodes.env lines (WriteNodeEnv), so each node's hook replays that
// node's recording, and appends the hook's output to
// StateDir/log/hook-<name>-<node>.log.
type Hooks struct {
	Health         string        // HealthCheckProgram's command; empty: none
	HealthInterval time.Duration // HealthCheckInterval, whole seconds; needed with Health
	// HealthNodeState is HealthCheckNodeState (ANY, IDLE, ALLOC, MIXED,
	// CYCLE, comma separated); empty leaves Slurm's default.
	HealthNodeState     string
	Prolog              string        // Prolog's command; empty: none
	Epilog              string        // Epilog's command; empty: none
	PrologFlags         string        // PrologFlags (Alloc, Contain...); empty: none
	PrologEpilogTimeout time.Duration // PrologEpilogTimeout, whole seconds; zero: Slurm's default
	// SchedulerParameters (nohold_on_prolog_fail...); empty: none.
	SchedulerParameters string
}

// args are cluster.sh start's flags for h.
func (h Hooks) args() ([]string, error) {
	var a []string
	add := func(flag, v string) {
		if v != "" {
			a = append(a, flag, v)
		}
	}
	secs := func(d time.Duration) string {
		if d <= 0 {
			return ""
		}
		return strconv.Itoa(int(max(d.Round(time.Second), time.Second) / time.Second))
	}
	if h.Health != "" && h.HealthInterval <= 0 {
		return nil, fmt.Errorf("localcluster hooks: a health program needs a HealthInterval")
	}
	add("--health-program", h.Health)
	add("--health-interval", secs(h.HealthInterval))
	add("--health-node-state", h.HealthNodeState)
	add("--prolog", h.Prolog)
	add("--epilog", h.Epilog)
	add("--prolog-flags", h.PrologFlags)
	add("--prolog-epilog-timeout", secs(h.PrologEpilogTimeout))
	add("--scheduler-parameters", h.SchedulerParameters)
	return a, nil
}

// Cluster is a started cluster.
type Cluster struct {
	StateDir string   // where its config, logs and pid files are
	Nodes    []string // node1..nodeN, the names jobs see in SLURMD_NODENAME
	Conf     string   // its slurm.conf, the value of SLURM_CONF

	script string
	vars   []string // KEY=VALUE lines printed by "cluster.sh start"
	log    io.Writer
}

// Start stops any cluster left in opts.StateDir (with its jobs), starts a
// fresh one and returns once all its nodes are idle. Job IDs start at 1 again
// and no job or node state (such as a drain) survives from before.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = os.Getenv("GDRCHECK_SLURM_STATE")
	}
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("resolving state dir: %w", err)
	}
	nodes := opts.Nodes
	if nodes == 0 {
		nodes = DefaultNodes
	}
	if nodes < 0 {
		return nil, fmt.Errorf("starting local Slurm cluster: %d nodes", nodes)
	}
	c := &Cluster{StateDir: stateDir, script: opts.Script, log: opts.Log}
	if c.log == nil {
		c.log = io.Discard
	}
	if c.script == "" {
		if err := os.MkdirAll(stateDir, 0o755); err != nil {
			return nil, fmt.Errorf("creating state dir: %w", err)
		}
		c.script = filepath.Join(stateDir, "cluster.sh")
		if err := writeFileAtomic(c.script, script, 0o755); err != nil {
			return nil, err
		}
	}
	if opts.Install {
		if _, err := c.run(ctx, "install"); err != nil {
			return nil, err
		}
	}
	args := []string{"start", "--state-dir", stateDir, "--nodes", strconv.Itoa(nodes)}
	if opts.Port != 0 {
		args = append(args, "--port", strconv.Itoa(opts.Port))
	}
	hooks, err := opts.Hooks.args()
	if err != nil {
		return nil, err
	}
	args = append(args, hooks...)
	out, err := c.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	c.vars = parseVars(out)
	for _, kv := range c.vars {
		if v, ok := strings.CutPrefix(kv, "SLURM_CONF="); ok {
			c.Conf = v
		}
	}
	if c.Conf == "" {
		return nil, fmt.Errorf("cluster.sh start printed no SLURM_CONF: %q", out)
	}
	for k := 1; k <= nodes; k++ {
		c.Nodes = append(c.Nodes, "node"+strconv.Itoa(k))
	}
	return c, nil
}

// Stop cancels the cluster's jobs and stops its daemons. It is safe to call
// more than once.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.run(ctx, "stop", "--state-dir", c.StateDir)
	return err
}

// Vars is what a client needs to reach this cluster, as KEY=VALUE
// (SLURM_CONF=...). StateDir/env.sh exports the same for a shell.
func (c *Cluster) Vars() []string { return append([]string(nil), c.vars...) }

// Env is the environment for sbatch, srun, squeue and scontrol run against
// this cluster: this process's environment without variables that steer
// Slurm clients (SLURM_*, SBATCH_*, SRUN_*, ...; a test run inside a job of a
// real cluster has plenty), plus Vars. sbatch passes it on to the job.
func (c *Cluster) Env() []string {
	return append(withoutSlurm(os.Environ()), c.vars...)
}

// Command is exec.CommandContext with Env set to c.Env().
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.Env()
	return cmd
}

// WriteNodeEnv replaces StateDir/nodes.env: every task that then starts on a
// node in env gets those variables (env["node2"]["GDRCHECK_HOST_ROOT"] =
// "/fixtures/nodes/x"). The key "*" means every node. Values must not
// contain newlines. It can be called while the cluster runs.
func (c *Cluster) WriteNodeEnv(env map[string]map[string]string) error {
	var b strings.Builder
	b.WriteString("# Written by localcluster.WriteNodeEnv: NODE NAME=VALUE, NODE \"*\" is every node.\n")
	for _, node := range slices.Sorted(maps.Keys(env)) {
		for _, name := range slices.Sorted(maps.Keys(env[node])) {
			v := env[node][name]
			if strings.ContainsAny(node+name+v, "\n\r") || strings.ContainsAny(node+name, " \t=") {
				return fmt.Errorf("writing nodes.env: bad entry %q %q=%q", node, name, v)
			}
			fmt.Fprintf(&b, "%s %s=%s\n", node, name, v)
		}
	}
	return writeFileAtomic(filepath.Join(c.StateDir, "nodes.env"), []byte(b.String()), 0o644)
}

// run runs cluster.sh and returns its stdout; stderr goes to c.log and,
// when the script fails, into the error.
func (c *Cluster) run(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", append([]string{c.script}, args...)...)
	cmd.Env = withoutSlurm(os.Environ())
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(&stderr, c.log)
	// The daemons detach and close their descriptors; this only guards
	// against one that does not.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("running %s %s: %w\n%s", c.script, strings.Join(args, " "), err, lastLines(stderr.String(), 30))
	}
	return stdout.String(), nil
}

// slurmPrefixes are environment variables read by Slurm's client commands
// or set inside jobs and steps.
var slurmPrefixes = []string{"SLURM_", "SLURMD_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SINFO_", "SCANCEL_", "SCONTROL_", "SACCT_", "SPANK_"}

func withoutSlurm(env []string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		for _, p := range slurmPrefixes {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

func parseVars(out string) []string {
	var vars []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, _, ok := strings.Cut(line, "="); ok && k != "" && !strings.ContainsAny(k, " \t") {
			vars = append(vars, line)
		}
	}
	return vars
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return errors.Join(fmt.Errorf("writing %q: %w", path, err), os.Remove(tmp))
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("writing %q: %w", path, err), os.Remove(tmp))
	}
	return nil
}

// HookLog is the file the wrapper of a hook (health, prolog, epilog)
// appends that hook's output to on node.
func (c *Cluster) HookLog(hook, node string) string {
	return filepath.Join(c.StateDir, "log", "hook-"+hook+"-"+node+".log")
}
