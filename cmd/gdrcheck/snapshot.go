package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/harness/bench"
	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

func newSnapshotCmd(o *options) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "snapshot --out DIR|FILE.ttar",
		Short: "Record this node's evidence so it can be replayed elsewhere",
		Long: `Snapshot records what gdrcheck reads on this node: the sysfs and procfs
files of the PCI devices, RDMA devices, IOMMU groups and NVIDIA modules
(symlinks kept), NVML's and rdmamap's answers, and what the container
suite reads of this process: each GPU and RDMA device node with its type
and major:minor and whether it opened, memlock and capabilities. Replay it
on any machine, GPU or not:

  gdrcheck snapshot --out node42.ttar            # on the node, as root
  gdrcheck run --host-root node42.ttar           # anywhere
  gdrcheck inventory --host-root node42.ttar

An --out ending in .ttar writes one text archive (easy to attach to a
ticket); anything else writes a directory. Run it as root: PCI config space
(ACS) beyond 64 bytes is readable only by root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			if o.hostRoot != "/" {
				return fmt.Errorf("snapshot records the live host; --host-root %s is already a recording", o.hostRoot)
			}
			h, err := node.Open("/")
			if err != nil {
				return &exitError{code: results.ExitUnevaluable, err: err}
			}
			dir := out
			archive := strings.HasSuffix(out, ".ttar")
			if archive {
				dir, err = os.MkdirTemp(filepath.Dir(out), ".snapshot-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
			} else if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
				return fmt.Errorf("--out %s: directory exists and is not empty", dir)
			}
			meta, err := h.Snapshot(dir, node.DefaultSources(h), "gdrcheck "+version)
			if err != nil {
				return err
			}
			// The mpi suite's commands run here, on the live host,
			// so that a replay judges what they printed.
			if err := mpi.Record(dir, mpi.Collect("/", true, h.GDRCopy(), bench.BuildFacts{})); err != nil {
				return err
			}
			for _, p := range meta.Problems {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", reports.Terminal(p))
			}
			if archive {
				if err := writeArchive(out, dir); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %s into %s\n", reports.Terminal(meta.Hostname), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the recording to `DIR`, or to one archive if it ends in .ttar")
	o.addHostRoot(cmd)
	return cmd
}

// writeArchive packs dir into a ttar file atomically. A node's recording
// is a few hundred KiB, so it is packed in memory first.
func writeArchive(path, dir string) error {
	var buf bytes.Buffer
	if err := ttar.Write(&buf, dir); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return results.WriteFile(path, buf.Bytes())
}
