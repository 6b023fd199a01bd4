package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

func newInventoryCmd(o *options) *cobra.Command {
	var format, expect string
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Print the GPU <-> NIC rail map of this node",
		Long: `Inventory prints, for every GPU, its UUID and PCI bus id, its NUMA node and
local CPUs, its preferred (closest) RDMA NIC and port, and the PCIe path
class between them as nvidia-smi topo -m names it (PIX, PXB, PHB, NODE,
SYS); then the class of every GPU <-> NIC pair.

Store the YAML once and compare later: after a hardware swap,
  gdrcheck inventory --expect node42.yaml
reports every GPU that changed rail and exits 1.

The map is sysfs's: where NVML cannot be used (a driver/library version
mismatch after an upgrade, no driver libraries, a tree of sysfs alone) it
is printed without UUIDs, names and indexes, NVML's error goes to stderr as
a warning (and into "warnings" in YAML and JSON), and the exit code is 0.
It is 2 when the map is not complete: no sysfs, no GPU, or GPUs NVML lists
that sysfs does not have.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, done, err := o.root()
			if err != nil {
				return err
			}
			defer done()
			h, err := node.Open(root)
			if err != nil {
				if root != o.hostRoot {
					err = fmt.Errorf("%s: %w", o.hostRoot, err)
				}
				return &exitError{code: results.ExitUnevaluable, err: err}
			}
			ev := node.Collect(h, node.DefaultSources(h))
			ev.Relabel(o.hostRoot)
			inv := ev.Inventory()
			w := cmd.OutOrStdout()
			if err := writeInventory(w, inv, ev, format); err != nil {
				return err
			}
			mapErr := ev.MapError()
			for _, warn := range inv.Warnings {
				if mapErr == nil || warn != mapErr.Error() {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", warn)
				}
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
				fmt.Fprintf(cmd.ErrOrStderr(), "drift: %s\n", d)
			}
			return &exitError{code: results.ExitFailed, err: fmt.Errorf("%d difference(s) from %s", len(drift), expect)}
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, yaml or json")
	cmd.Flags().StringVar(&expect, "expect", "", "compare with the inventory stored in `FILE` and report drift (exit 1)")
	o.addHostRoot(cmd)
	return cmd
}

func writeInventory(w io.Writer, inv node.Inventory, ev *node.Evidence, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(inv, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(inv); err != nil {
			return err
		}
		return enc.Close()
	case "table":
		return inventoryTables(inv, ev).render(w)
	}
	return fmt.Errorf("--format %q: want table, yaml or json", format)
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

// inventoryTables are the rail map and a GPU x NIC matrix in the shape of
// nvidia-smi topo -m, so the two can be read side by side.
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
	if len(ev.NICs) == 0 {
		return out
	}
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
	return append(out, m)
}
