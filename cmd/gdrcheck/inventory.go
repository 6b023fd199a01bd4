package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/inventory"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/overrides"
)

func newInventoryCmd(o *options) *cobra.Command {
	var format, expect string
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Print the GPU <-> NIC rail map of this node",
		Long: `Inventory prints, for every GPU, its UUID and PCI bus id, its NUMA node and
local CPUs, its preferred (closest) RDMA NIC and port, and the PCIe path
class between them as nvidia-smi topo -m names it (PIX, PXB, PHB, NODE,
SYS); then the class of every GPU <-> NIC pair; then the NCCL_*, UCX_* and
MCA settings a job here would inherit (the environment, NCCL_CONF_FILE or
~/.nccl.conf, /etc/nccl.conf, the MCA parameter files), each with where it
came from and whether it fits the node, as the topology suite's override
audit judges it.

Store the YAML once and compare later: after a hardware swap,
  gdrcheck inventory --expect node42.yaml
reports every GPU that changed rail and exits 1.

The map is sysfs's: where NVML cannot be used (a driver/library version
mismatch after an upgrade, no driver libraries, a tree of sysfs alone) it
is printed without UUIDs, names and indexes, NVML's error goes to stderr as
a warning (and into "warnings" in YAML and JSON), and the exit code is 0.
It is 2 when the map is not complete: no sysfs, no GPU, or GPUs NVML lists
that sysfs does not have.

Two formats are made for schedulers and launchers. --format gres prints
Slurm gres.conf lines, one per GPU, for a node's gres.conf (or a file it
includes):
  Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-55 # GPU 0 0000:18:00.0 NUMA 0, rail mlx5_0:1 PIX
File= is /dev/nvidia<device minor>; Cores= are Slurm's core indexes (core 0
the first core of the first socket, hardware threads not counted) of the
GPU's local CPUs, left out where sysfs has no CPU topology or the GPU is
local to every core; the comment names the GPU's rail NIC and path class.
A GPU whose device minor is unknown gets a comment instead of a line, and
the exit code is 2.

Both maps carry only checked fields: a host name that is not a node name,
or a GPU's bus id, UUID, local_cpulist or rail NIC not of its source's
form, is refused with exit 2 naming the field, and no map is written
(--format env then writes a fragment that only fails).

--format env prints POSIX sh for a launch wrapper to source: for the local
rank (LOCAL_RANK, else SLURM_LOCALID, else OMPI_COMM_WORLD_LOCAL_RANK),
rank r on GPU r in NVML index order, it exports NCCL_IB_HCA (=mlx5_0:1,
the rail NIC and port, matched exactly), UCX_NET_DEVICES (mlx5_0:1),
GDRCHECK_CPUS (the GPU's local CPUs, for taskset -c or numactl -C),
GDRCHECK_NUMA_NODE, GDRCHECK_GPU_INDEX, GDRCHECK_GPU_UUID and
GDRCHECK_GPU_BUS_ID. A GPU without an RDMA NIC sets no NCCL_IB_HCA; an
unknown rank is an error on stderr and a non-zero return. In an srun
wrapper:
  . <(gdrcheck inventory --format env) || exit 1
  exec taskset -c "$GDRCHECK_CPUS" "$@"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.inventory(cmd, format, expect) },
	}
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, yaml, json, gres (Slurm gres.conf lines) or env (sh for a launch wrapper)")
	cmd.Flags().StringVar(&expect, "expect", "", "compare with the inventory stored in `FILE` and report drift (exit 1)")
	o.addHostRoot(cmd)
	return cmd
}

// inventory prints the node's rail map in format and, with expect,
// reports its drift from the one stored there.
func (o *options) inventory(cmd *cobra.Command, format, expect string) error {
	root, done, err := o.root()
	if err != nil {
		return err
	}
	defer done()
	h, err := o.policy().Open(root)
	if err != nil {
		return &exitError{code: results.ExitUnevaluable, err: err}
	}
	ev := node.Collect(h, node.DefaultSources(h))
	ev.Relabel(o.hostRoot)
	inv := ev.Inventory()
	judgeOverrides(&inv, ev)
	w := cmd.OutOrStdout()
	// A gres map without a GPU's line is still written, and
	// exits 2 below like a map that is not complete.
	partial := writeInventory(w, inv, ev, format)
	if partial != nil && !errors.Is(partial, inventory.ErrNoMinor) {
		return partial
	}
	mapErr := ev.MapError()
	for _, warn := range inv.Warnings {
		if mapErr == nil || warn != mapErr.Error() {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", reports.Terminal(warn))
		}
	}
	if mapErr == nil {
		mapErr = partial
	}
	if mapErr != nil {
		return &exitError{code: results.ExitUnevaluable, err: mapErr}
	}
	if expect == "" {
		return nil
	}
	want, err := readInventory(expect)
	if err != nil {
		return err
	}
	drift := node.Drift(want, inv)
	if len(drift) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "inventory matches %s\n", expect)
		return nil
	}
	for _, d := range drift {
		fmt.Fprintf(cmd.ErrOrStderr(), "drift: %s\n", reports.Terminal(d))
	}
	return &exitError{code: results.ExitFailed, err: fmt.Errorf("%d difference(s) from %s", len(drift), expect)}
}

func writeInventory(w io.Writer, inv node.Inventory, ev *node.Evidence, format string) error {
	var err error
	switch format {
	case "json":
		return inventory.WriteJSON(w, inv)
	case "yaml":
		return inventory.WriteYAML(w, inv)
	case "table":
		return inventoryTables(inv, ev).render(w)
	case "gres":
		err = inventory.WriteGres(w, inv, ev, version)
	case "env":
		err = inventory.WriteEnv(w, inv, version)
	default:
		return fmt.Errorf("--format %q: want table, yaml, json, gres or env", format)
	}
	if errors.Is(err, inventory.ErrRefused) {
		return fmt.Errorf("--format %s: %w", format, err)
	}
	return err
}

type tables []reports.Table

func (ts tables) render(w io.Writer) error {
	for _, t := range ts {
		if err := t.Render(w, reports.FormatText); err != nil {
			return err
		}
	}
	return nil
}

// inventoryTables are the rail map, a GPU x NIC matrix in the shape of
// nvidia-smi topo -m (so the two can be read side by side) and the
// settings a job inherits.
func inventoryTables(inv node.Inventory, ev *node.Evidence) tables {
	rails := reports.Table{
		Title:  "GPU rails on " + inv.Node,
		Header: []string{"gpu", "bus id", "uuid", "numa", "cpus", "nic", "port", "netdev", "path"},
	}
	for _, g := range inv.GPUs {
		idx := strconv.Itoa(g.Index)
		if g.Index < 0 {
			idx = "-"
		}
		rails.Rows = append(rails.Rows, []string{idx, g.BusID, orDash(g.UUID), strconv.Itoa(g.NUMANode), orDash(g.CPUList), orDash(g.PreferredNIC), orDash(g.PreferredPort), orDash(g.NetDev), orDash(string(g.Path))})
	}
	out := tables{rails}
	if len(ev.NICs) > 0 {
		out = append(out, pathMatrix(ev))
	}
	return append(out, overrideTable(inv)...)
}

// pathMatrix is the GPU x NIC matrix of nvidia-smi topo -m, the preferred
// NIC of each GPU starred.
func pathMatrix(ev *node.Evidence) reports.Table {
	m := reports.Table{Title: "GPU <-> NIC paths", Header: []string{""}}
	for _, n := range ev.NICs {
		m.Header = append(m.Header, n.Name)
	}
	for _, g := range ev.GPUs {
		name := fmt.Sprintf("GPU%d", g.Index)
		if g.Index < 0 {
			name = "GPU " + g.BusID
		}
		row := []string{name}
		for _, n := range ev.NICs {
			cell := "-"
			for _, p := range ev.Paths {
				if p.GPU == g.BusID && p.NIC == n.Name {
					cell = string(p.Class)
					if p.Preferred {
						cell += "*"
					}
				}
			}
			row = append(row, cell)
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}

// judgeOverrides writes the override audit's word beside each inherited
// setting: the judgement is the topology spec's (suites/overrides), made
// on the same evidence.
func judgeOverrides(inv *node.Inventory, ev *node.Evidence) {
	js := overrides.Judge(ev)
	for i := range inv.Overrides {
		if i < len(js) && js[i].Setting == inv.Overrides[i].Setting {
			inv.Overrides[i].Fit, inv.Overrides[i].Why = string(js[i].Verdict), js[i].Why
		}
	}
}

// overrideTable lists the inherited settings: name, value, where from
// (environment, or file:line) and the audit's word.
func overrideTable(inv node.Inventory) tables {
	if len(inv.Overrides) == 0 {
		return nil
	}
	t := reports.Table{Title: "NCCL, UCX and MCA settings a job on " + inv.Node + " inherits",
		Header: []string{"name", "value", "from", "fits"}}
	for _, o := range inv.Overrides {
		from := o.Source
		if o.Line > 0 {
			from = fmt.Sprintf("%s:%d", o.Source, o.Line)
		}
		fit := orDash(o.Fit)
		if o.Why != "" {
			fit += ": " + o.Why
		}
		t.Rows = append(t.Rows, []string{o.Name, o.Value, from, fit})
	}
	return tables{t}
}
