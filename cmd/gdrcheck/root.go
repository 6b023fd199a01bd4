package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/reports"
)

// options are the flags every command shares.
type options struct {
	hostRoot  string
	trustRoot bool
}

func newRootCmd() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "gdrcheck",
		Short: "Prove GPUDirect RDMA works on GPU nodes",
		Long: `gdrcheck proves, node by node, that GPUDirect RDMA is really in use: that
GPUs and RDMA NICs are wired for it, that the kernel's peer-memory path
works, and that NCCL takes the direct path rather than staging through host
memory. Results are JUnit for Jenkins, results.json, and tables for people.

Exit codes (every command that evaluates a node):
  0  every check passed
  1  a check failed
  2  the node could not be evaluated (no driver, unreadable host, bad input,
     an unknown command or argument), or a selected suite could not run here`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	// The version and the commit it was built from, one per line.
	cmd.SetVersionTemplate("gdrcheck {{.Version}}\ncommit " + commit + "\n")
	cmd.AddCommand(newRunCmd(o), newInventoryCmd(o), newSnapshotCmd(o), newAnalyzeCmd(), newBaselineCmd(), newSubmitCmd(), newJobCmd(), newCollectCmd(), newUndrainCmd(), newHealthCmd(o), newPrologCmd(o), newEpilogCmd(o), newReportCmd(), newCompareCmd(), newEmulatedRankCmd(), newDebugCmd())
	for _, c := range cmd.Commands() {
		strictArgs(c)
	}
	return cmd
}

// strictArgs makes a word gdrcheck does not know an error (exit 2) rather
// than help and exit 0, which a CI gate would read as a pass: a command
// with subcommands refuses an unknown one, suggesting the nearest, and a
// command that declares no arguments takes none. Cobra ignores both by
// default below the root.
func strictArgs(cmd *cobra.Command) {
	if cmd.HasSubCommands() {
		cmd.Args = cobra.ArbitraryArgs
		cmd.SuggestionsMinimumDistance = 2
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return fmt.Errorf("%s (gdrcheck %s --help lists them)", msg, c.Name())
		}
		for _, sub := range cmd.Commands() {
			strictArgs(sub)
		}
		return
	}
	if cmd.Args == nil {
		cmd.Args = cobra.NoArgs
	}
}

// addHostRoot gives a command that reads the host its --host-root flag;
// the commands that only read files (report, analyze, baseline) or drive
// Slurm have none, so it cannot be given and silently ignored.
func (o *options) addHostRoot(cmd *cobra.Command) {
	root := os.Getenv("GDRCHECK_HOST_ROOT")
	if root == "" {
		root = "/"
	}
	cmd.Flags().StringVar(&o.hostRoot, "host-root", root, "read sysfs and procfs under `DIR` (DIR/sys, DIR/proc) instead of /; a recorded node (gdrcheck snapshot) as a directory or a .ttar archive; default $GDRCHECK_HOST_ROOT, else /")
	cmd.Flags().BoolVar(&o.trustRoot, "trust-root", false, "read a --host-root directory that users other than you and root can write (owned by them, or group- or other-writable), trusting them not to change it during the run; without it such a directory is refused (docs/reference.md, threat model)")
}

// Help for --prom-textfile: on a node, and for a job or its directory.
const (
	promNodeHelp = "also write this node's GPUDirect evidence (mechanism, GPU<->NIC paths, PCIe links, BAR1, busbw, fallbacks, fabric errors, spec failures) as a Prometheus textfile to `PATH`, with the other files; PATH ends in .prom and usually lies in node_exporter's --collector.textfile.directory"
	promJobHelp  = "also write the job's verdict as a Prometheus textfile to `PATH`, with the other files: the allocation's series only, node=\"allocation\" (verdict, nodes by status, failing suite, mechanism, profile and driver, the scaling runs, the worst outliers), at most a few hundred for any node count; a node's own series come from its own gdrcheck run --prom-textfile. PATH ends in .prom and usually lies in node_exporter's --collector.textfile.directory"
)

// addPromTextfile gives a command its --prom-textfile flag.
func addPromTextfile(cmd *cobra.Command, path *string, help string) {
	cmd.Flags().StringVar(path, "prom-textfile", "", help)
}

// checkPromTextfile refuses a path node_exporter's textfile collector
// would never read, so a typo is not a silently missing metric.
func checkPromTextfile(path string) error {
	if path != "" && !strings.HasSuffix(path, reports.PromExt) {
		return fmt.Errorf("--prom-textfile %q: node_exporter's textfile collector reads only files ending in %s", path, reports.PromExt)
	}
	return nil
}

// root resolves --host-root (node.RootPolicy): the directory to read,
// and done, which removes what resolving it unpacked or copied.
func (o *options) root() (dir string, done func(), err error) { return o.policy().Resolve() }

func (o *options) policy() node.RootPolicy {
	return node.RootPolicy{Path: o.hostRoot, Trust: o.trustRoot}
}
