package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/runner"
	"github.com/gdrcheck/gdrcheck/slurm"
	"github.com/gdrcheck/gdrcheck/suites"
)

type runOptions struct {
	suites          []string
	out             string
	nodeName        string
	maxPath         string
	allowCrossNUMA  bool
	expect          string
	timeout         time.Duration
	format          string
	quiet           bool
	verbose         bool
	tcProps         bool
	ncclDir         string
	ncclTimeout     time.Duration
	baselineDir     string
	allowMissing    bool
	ncclLauncher    string
	perftestDir     string
	mpiBenchDir     string
	mpiLauncher     string
	mpiInternode    string
	mpiTimeout      time.Duration
	mpiFactsTimeout time.Duration
	ucxPerftest     string
	scaling         runner.ScalingOptions
	emulateNodes    int
	nodes           []string
	nodesFile       string
	scalingArgs     string
	cmp             compareTo
	promTextfile    string
	lockTimeout     time.Duration
}

func newRunCmd(o *options) *cobra.Command {
	r := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the node suites on this node (no Slurm)",
		Long: `Run collects this node's evidence once (NVML, sysfs, procfs) and runs the
selected spec suites against it in-process. It writes DIR/junit.xml,
DIR/results.json, DIR/report.html and the benchmarks' DIR/logs/ as one set
(atomically) and prints a summary table. One run at a time writes into
DIR: a second waits for the first, up to --lock-timeout. With
--prom-textfile PATH it also writes the node's GPUDirect evidence for
node_exporter's textfile collector, in the same set; every series carries
a node label, the name the node reports under, and {node} in PATH (as in
--out) is that name.

Suites:
` + suites.LabelHelp() + `
The quick gate before a driver or kernel upgrade is
  gdrcheck run --suites topology,kernel,bar1
and after it, compared with the run before (gdrcheck compare):
  gdrcheck run --suites topology,kernel,bar1 --out after --compare-to before

Exit 0 when every spec passed, 1 when a spec failed, 2 when the node could
not be evaluated (unreadable host, no GPU, bad input) or only in part (NVML,
libcuda or libibverbs unusable: the verdicts sysfs and procfs allow are
still reported, and the library's error with its likely cause), or when a
selected suite could not run here (nccl-tests not installed: the run says
what to install or which flag to set). A suite whose specs all skipped is
SKIP; checks that do not apply to the node's shape (one GPU) leave the
exit code alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return r.run(cmd, o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&r.suites, "suites", nil, "comma-separated suites to run (default: all but container)")
	f.StringVar(&r.out, "out", "gdrcheck-results", "write junit.xml, results.json and report.html into `DIR`")
	f.StringVar(&r.nodeName, "node-name", "", "name of this node in the report (default: $SLURMD_NODENAME, then the host name)")
	f.StringVar(&r.maxPath, "max-gdr-path", "PXB", "farthest GPU<->NIC PCIe path accepted for GPUDirect: PIX, PXB, PHB, NODE or SYS")
	f.BoolVar(&r.allowCrossNUMA, "allow-cross-numa", false, "accept a GPU whose preferred NIC sits on another NUMA node")
	f.StringVar(&r.expect, "expect", "", "compare the GPU<->NIC inventory with the one stored in `FILE` (gdrcheck inventory --format yaml)")
	f.DurationVar(&r.timeout, "timeout", time.Hour, "give up on the suites after this long")
	f.StringVar(&r.format, "format", "text", "table format: text or markdown")
	f.BoolVarP(&r.quiet, "quiet", "q", false, "no progress on stderr")
	f.BoolVarP(&r.verbose, "verbose", "v", false, "also Ginkgo's own report on stderr: each failure with its source location (its skipped count includes the specs of suites not selected); and a table of the slowest steps and specs, from the durations results.json records")
	f.BoolVar(&r.tcProps, "junit-testcase-properties", false, "add <properties> to JUnit testcases (Jenkins JUnit plugin keepProperties; not valid xUnit junit-10.xsd)")
	f.StringVar(&r.ncclDir, "nccl-tests-dir", "", "`DIR` holding the cluster's nccl-tests binaries (all_reduce_perf...); default: PATH")
	f.DurationVar(&r.ncclTimeout, "nccl-timeout", 10*time.Minute, "give up on one nccl-tests run after this long")
	f.StringVar(&r.ncclLauncher, "nccl-launcher", "", "start nccl-tests through `CMD`, one process per GPU, e.g. \"mpirun --allow-run-as-root -np {gpus}\" (nccl-tests built with MPI=1); default: one process driving every GPU")
	f.StringVar(&r.perftestDir, "perftest-dir", "", "`DIR` holding perftest (ib_write_bw) for the fabric suite's loopback runs; default: PATH")
	f.StringVar(&r.mpiBenchDir, "mpi-bench-dir", "", "mpi: `DIR` holding the cluster's osu_bw and osu_latency (OSU micro-benchmarks built --enable-cuda), else ucx_perftest (run as a server and its client inside the node, under the inter-node launcher built --with-mpi); default: PATH")
	f.StringVar(&r.mpiLauncher, "mpi-launcher", "", "mpi: start an intra-node run's two ranks with `CMD`, a template of {ranks} (default \""+runner.DefaultMPILauncher+"\"; MPICH: \"mpiexec -n {ranks}\")")
	f.StringVar(&r.mpiInternode, "mpi-internode-launcher", "", "mpi: start an inter-node run's two ranks, one on this node and one on another, with `CMD`, e.g. \"mpirun --mca pml ucx -np {ranks} --host node1,node2\" or \"srun -N 2 --ntasks-per-node=1\"; default: no inter-node runs")
	f.StringVar(&r.ucxPerftest, "ucx-perftest", "", "mpi: prove UCX's GPU path inside the node with this `FILE`, UCX's ucx_perftest (built --with-cuda), started as a server and its client on localhost: no MPI needed; the ucx_info beside FILE, where there is one, is the UCX judged (default: a ucx_perftest on PATH or in --mpi-bench-dir, where there are no OSU micro-benchmarks)")
	f.DurationVar(&r.mpiTimeout, "mpi-timeout", 5*time.Minute, "mpi: give up on one benchmark run after this long")
	f.DurationVar(&r.mpiFactsTimeout, "mpi-facts-timeout", time.Minute, "mpi: give up on each build-facts command (ompi_info, ucx_info, mpichversion) after this long; it and its children are killed")
	f.StringVar(&r.baselineDir, "baseline-dir", "", "`DIR` of baseline YAML files (default: the baselines shipped with gdrcheck)")
	f.BoolVar(&r.allowMissing, "allow-missing-baseline", false, "report measurements of a node no baseline matches instead of failing them")
	// The scaling suite: an allocation, not this node.
	f.StringArrayVar(&r.nodes, "nodes", nil, "scaling: the allocation's nodes in order, a Slurm hostlist (node1,node2 or gpu[00001-16384]; repeatable)")
	f.StringVar(&r.nodesFile, "nodes-file", "", "scaling: read the allocation's nodes from `FILE`, one name (or hostlist) a line, for lists too long for one argument")
	f.IntVar(&r.emulateNodes, "emulate-nodes", 0, "scaling: play `N` nodes on this machine (one UTS namespace, hostname and NCCL_HOSTID per node; root and mpirun needed), to rehearse a job on one box")
	f.IntVar(&r.scaling.GPUsPerNode, "gpus-per-node", 0, "scaling: ranks per node (default: what the nodes reported in --node-results, else 1)")
	f.StringVar(&r.scaling.Launch, "launcher", "", "scaling: start the ranks of a run with `CMD`, a template of {nodes} {ranks} {gpus} {nodelist} ({nodelist}: a Slurm hostlist, gpu[001-064]; default: srun --nodes={nodes} --ntasks={ranks} --ntasks-per-node={gpus} --nodelist={nodelist}, or mpirun through emulated nodes)")
	f.StringArrayVar(&r.scaling.SrunArgs, "srun-arg", nil, "scaling: extra srun option for the default launcher, e.g. --mpi=pmix (repeatable)")
	f.StringVar(&r.scaling.NodeResults, "node-results", "", "scaling: `DIR` holding each node's results.json of the node suites (DIR/<node>/results.json), for outliers and the baseline")
	f.StringVar(&r.scaling.Profile, "baseline-profile", "", "scaling: judge with this baseline profile (default: the one the nodes matched)")
	f.StringVar(&r.scalingArgs, "scaling-args", "", "scaling: all_reduce_perf arguments, e.g. \"-b 8 -e 256M -f 2\" for a quick rehearsal (default -b 8 -e 2G -f 2; -g 1 is added)")
	f.StringVar(&r.scaling.Pairs, "scaling-pairs", runner.PairsAuto, "scaling: when to re-pair the nodes to name a slow one: auto (a run below its baseline band, or no baseline), always, never")
	r.cmp.flags(f)
	addPromTextfile(cmd, &r.promTextfile, promNodeHelp)
	addLockTimeout(cmd, &r.lockTimeout, "DIR (--out)")
	o.addHostRoot(cmd)
	return cmd
}

func (r *runOptions) run(cmd *cobra.Command, o *options) error {
	cfg, err := r.config()
	if err != nil {
		return err
	}
	if err := r.cmp.load(); err != nil {
		return err
	}
	if err := r.checkLaunchers(); err != nil {
		return err
	}
	root, done, err := o.root()
	if err != nil {
		return err
	}
	defer done()
	if r.format != reports.FormatText && r.format != reports.FormatMarkdown {
		return fmt.Errorf("--format %q: want text or markdown", r.format)
	}
	if err := checkPromTextfile(r.promTextfile); err != nil {
		return err
	}
	// Under srun every node writes its own directory and textfile:
	// {node} is this node's name.
	r.nodeName = strings.ReplaceAll(r.nodeName, "{node}", runner.NodeName("", ""))
	r.out = strings.ReplaceAll(r.out, "{node}", runner.NodeName(r.nodeName, ""))
	r.promTextfile = strings.ReplaceAll(r.promTextfile, "{node}", runner.NodeName(r.nodeName, ""))
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// One run at a time into DIR, and its logs/ staged with the reports:
	// the set on disk is always one run's.
	release, err := lockOut(cmd, r.out, r.lockTimeout)
	if err != nil {
		return err
	}
	defer release()
	removeStaleLogs(r.out)
	var set results.FileSet
	defer set.Abort()
	logDir, err := set.AddDir(filepath.Join(r.out, "logs"))
	if err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var progress io.Writer = stderr
	if r.quiet {
		progress = nil
	}
	if r.quiet && r.verbose {
		return fmt.Errorf("--quiet and --verbose: give one")
	}
	selected := r.suites
	if len(selected) == 0 {
		selected = suites.Defaults()
	}
	if err := r.scalingOptions(selected); err != nil {
		return err
	}
	r.printBanner(stdout, o.hostRoot, selected)
	res, ev, err := runner.Run(r.runnerOptions(cmd, cfg, root, o.hostRoot, progress, logDir))
	if err != nil {
		return err
	}
	if ev != nil {
		fmt.Fprintln(stdout, reports.Wrap(fmt.Sprintf("node %s: driver %s, kernel %s, %d GPU(s), %d RDMA NIC(s)", reports.Terminal(res.Nodes[0].Name), reports.Terminal(orDash(ev.Host.DriverVersion)), reports.Terminal(orDash(ev.Host.Kernel)), len(ev.GPUs), len(ev.NICs))))
	}
	r.cmp.before.Apply(res)
	wo := reports.WriteOptions{JUnit: reports.JUnitOptions{TestcaseProperties: r.tcProps}, PromTextfile: r.promTextfile}
	if err := reports.WriteAllWith(&set, r.out, res, wo); err != nil {
		return err
	}
	if err := printTables(stdout, res, r.format); err != nil {
		return err
	}
	if r.verbose {
		if err := printTimings(stdout, res, r.format); err != nil {
			return err
		}
	}
	printPaths(stdout, r.out)
	printPromPath(stdout, r.promTextfile)
	if code := res.ExitCode(); code != results.ExitPassed {
		return &exitError{code: code}
	}
	return nil
}

// checkLaunchers refuses an MPI launcher template that cannot be parsed,
// naming its flag, before anything runs.
func (r *runOptions) checkLaunchers() error {
	for flag, v := range map[string]string{"--mpi-launcher": r.mpiLauncher, "--mpi-internode-launcher": r.mpiInternode} {
		if v == "" {
			continue
		}
		if _, err := bench.ParseMPILaunch(v); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
	}
	return nil
}

// printBanner says what this run is about to do.
func (r *runOptions) printBanner(stdout io.Writer, hostRoot string, selected []string) {
	if r.scaling.Emulate {
		fmt.Fprintf(stdout, "gdrcheck %s: suite scaling across %d emulated nodes (%s) on this machine\n", version, len(r.scaling.Nodes), hostlist.Compress(r.scaling.Nodes))
	} else if slices.Contains(selected, suites.ScalingArea) {
		fmt.Fprintf(stdout, "gdrcheck %s: suite scaling across %s (%d nodes)\n", version, hostlist.Compress(r.scaling.Nodes), len(r.scaling.Nodes))
	} else {
		fmt.Fprintln(stdout, reports.Wrap(fmt.Sprintf("gdrcheck %s: host root %s, suites %s", version, hostRoot, strings.Join(selected, ","))))
	}
}

// runnerOptions maps the flags onto one node's run.
func (r *runOptions) runnerOptions(cmd *cobra.Command, cfg suites.Config, root, label string, progress io.Writer, logDir string) runner.Options {
	return runner.Options{
		HostRoot:  root,
		HostLabel: label,
		Suites:    r.suites,
		NodeName:  r.nodeName,
		Config:    cfg,
		Progress:  progress,
		Verbose:   r.verbose,
		Timeout:   r.timeout,
		Version:   version,
		Args:      os.Args[1:],

		NCCLTestsDir:    r.ncclDir,
		NCCLTimeout:     r.ncclTimeout,
		NCCLLauncher:    r.ncclLauncher,
		PerftestDir:     r.perftestDir,
		MPIBenchDir:     r.mpiBenchDir,
		MPILauncher:     r.mpiLauncher,
		MPITimeout:      r.mpiTimeout,
		MPIFactsTimeout: r.mpiFactsTimeout,
		UCXPerftest:     r.ucxPerftest,
		LogDir:          logDir,
		LogRef:          "logs",
		BaselineDir:     r.baselineDir,
		Scaling:         r.scaling,
		Ctx:             cmd.Context(),

		MPIInternodeLauncher: r.mpiInternode,
	}
}

func (r *runOptions) config() (suites.Config, error) {
	cfg := suites.DefaultConfig()
	if err := suites.CheckLabels(r.suites); err != nil {
		return cfg, fmt.Errorf("--suites: %w", err)
	}
	c, err := node.ParsePathClass(strings.ToUpper(r.maxPath))
	if err != nil {
		return cfg, fmt.Errorf("--max-gdr-path: %w", err)
	}
	cfg.MaxGDRPath = c
	if r.ncclLauncher != "" {
		// The rules of --launcher: all spaces (a CI variable of
		// nothing) is no launcher, and an unknown placeholder would
		// reach the command line.
		if _, err := bench.ParseNodeLaunch(r.ncclLauncher); err != nil {
			return cfg, fmt.Errorf("--nccl-launcher %q: %w", r.ncclLauncher, err)
		}
	}
	cfg.AllowCrossNUMA = r.allowCrossNUMA
	cfg.AllowMissingBaseline = r.allowMissing
	// Asked for by name, or pointed at: missing nccl-tests is then a
	// failure rather than a skip.
	cfg.RequireNCCLTests = r.ncclDir != "" || suites.NeedNCCL(r.suites)
	if r.expect != "" {
		inv, err := readInventory(r.expect)
		if err != nil {
			return cfg, err
		}
		cfg.Expect, cfg.ExpectFile = &inv, r.expect
	}
	return cfg, nil
}

func readInventory(path string) (node.Inventory, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return node.Inventory{}, fmt.Errorf("--expect %s: is a directory; give the file gdrcheck inventory --format yaml wrote", path)
	}
	b, err := bounded.ReadFile(path, node.InventoryLimit)
	if err != nil {
		return node.Inventory{}, fmt.Errorf("--expect: %w", err)
	}
	inv, err := node.ParseInventory(b)
	if err != nil {
		return inv, fmt.Errorf("--expect %s: %w", path, err)
	}
	return inv, nil
}

func printTables(w io.Writer, res *results.Results, format string) error {
	fmt.Fprintln(w)
	if res.Folded() {
		fmt.Fprintf(w, "%s\n\n", reports.VerdictLine(res))
	}
	for i, t := range reports.ConsoleTables(res) {
		if len(t.Rows) == 0 && (i > 0 || res.Folded()) {
			continue
		}
		if err := t.Render(w, format); err != nil {
			return err
		}
	}
	if !res.Folded() {
		reports.WriteFailures(w, res, format)
	}
	reports.WriteSkips(w, res, format)
	if res.Folded() {
		fmt.Fprintln(w, "A node's full detail: gdrcheck report DIR --node NAME")
	}
	return nil
}

// printTimings shows each node's slowest steps and specs, for -v.
func printTimings(w io.Writer, res *results.Results, format string) error {
	for _, n := range res.Nodes {
		if len(n.Steps) == 0 {
			continue
		}
		fmt.Fprintln(w)
		if err := reports.TimingTable(n, 12).Render(w, format); err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printPaths says where the reports are.
func printPaths(w io.Writer, dir string) {
	fmt.Fprintf(w, "JUnit:   %s\nResults: %s\nHTML:    %s\n", filepath.Join(dir, "junit.xml"), filepath.Join(dir, "results.json"), filepath.Join(dir, "report.html"))
}

// printPromPath says where the Prometheus textfile is, when one was written.
func printPromPath(w io.Writer, path string) {
	if path != "" {
		fmt.Fprintf(w, "Prom:    %s\n", path)
	}
}

// scalingOptions checks the scaling flags against the suites selected and
// fills in the nodes: emulated, from --nodes, or from --nodes-file.
func (r *runOptions) scalingOptions(selected []string) error {
	scaling := slices.Contains(selected, suites.ScalingArea)
	given := len(r.nodes) > 0 || r.nodesFile != ""
	set := given || r.emulateNodes > 0 || r.scaling.NodeResults != "" || r.scaling.Launch != "" || r.scaling.Profile != "" || r.scalingArgs != ""
	switch {
	case !scaling && set:
		return fmt.Errorf("--nodes, --nodes-file, --emulate-nodes, --node-results, --launcher, --baseline-profile and --scaling-args belong to the scaling suite (--suites scaling)")
	case !scaling:
		return nil
	case len(r.nodes) > 0 && r.nodesFile != "":
		return fmt.Errorf("--nodes and --nodes-file both name the nodes: give one")
	case r.emulateNodes > 0 && given:
		return fmt.Errorf("--emulate-nodes names its own nodes (emu1 ...): drop --nodes")
	case r.emulateNodes < 0 || r.emulateNodes == 1:
		return fmt.Errorf("--emulate-nodes %d: emulate at least 2 nodes", r.emulateNodes)
	case r.emulateNodes > maxEmulated():
		// Each emulated node is a namespace with a rank process at least:
		// more than the cores only queue, and a count without bound
		// allocates before anything runs.
		return fmt.Errorf("--emulate-nodes %d: at most %d, the CPU cores of this machine", r.emulateNodes, maxEmulated())
	case r.emulateNodes > 0:
		r.scaling.Nodes, r.scaling.Emulate = bench.EmulatedNodes(r.emulateNodes), true
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		r.scaling.Self = exe
	case !given:
		return fmt.Errorf("--suites scaling judges an allocation: give its nodes (--nodes node1,node2,..., --nodes-file FILE) or --emulate-nodes N")
	case r.nodesFile != "":
		nodes, err := hostlist.ReadFile(r.nodesFile)
		if err != nil {
			return fmt.Errorf("--nodes-file: %w", err)
		}
		r.scaling.Nodes = nodes
	default:
		nodes, err := hostlist.ExpandAll(r.nodes)
		if err != nil {
			return fmt.Errorf("--nodes: %w", err)
		}
		r.scaling.Nodes = nodes
	}
	if err := slurm.CheckGPUsPerNode(r.scaling.GPUsPerNode); err != nil {
		return err
	}
	r.scaling.Args = strings.Fields(r.scalingArgs)
	return nil
}

// maxEmulated is the most nodes --emulate-nodes plays: one per CPU core,
// and never more than the largest allocation.
func maxEmulated() int { return min(runtime.NumCPU(), hostlist.MaxNodes) }
