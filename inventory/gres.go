package inventory

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// ErrNoMinor says a gres line was left out: without the minor the File=
// would name a guess, and a wrong File= binds a job to another GPU.
var ErrNoMinor = errors.New("device minor unknown")

// WriteGres writes one gres.conf line per GPU, in /dev/nvidiaN order:
//
//	Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-55 # GPU 0 0000:18:00.0 NUMA 0, rail mlx5_0:1 PIX
//
// File= is /dev/nvidia<minor>, the minor NVML or the driver's
// proc/driver/nvidia/gpus/<bus id>/information gave, never the NVML index:
// the two differ where the driver probed the GPUs in another order.
// Cores= are Slurm's core indexes, not CPU ids: gres.conf(5) counts cores
// logically, core 0 the first core of the first socket, threads not
// counted, which is hwloc's logical core order; the GPU's local_cpulist is
// mapped through the CPU topology to them (Evidence.CPUCores). Where the
// topology is unknown, or the GPU is local to every core (gres.conf(5):
// then leave Cores out), the line has none and its comment says why.
//
// version names the gdrcheck that wrote it, in the header. Each line is
// generated from checked fields only: Type= matches gresTypeOK, File= is
// built from a number, Cores= from numbers. A refused inventory writes
// nothing and returns an error wrapping ErrRefused; a GPU left out, one
// wrapping ErrNoMinor after the rest is written.
func WriteGres(w io.Writer, inv node.Inventory, ev *node.Evidence, version string) error {
	if err := checkMap(inv); err != nil {
		return err
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "# %s\n", comment(fmt.Sprintf("%s: gres.conf lines from gdrcheck %s", inv.Node, version)))
	gpus := append([]node.InventoryGPU(nil), inv.GPUs...)
	facts := gpuFacts(ev)
	minor := func(g node.InventoryGPU) int {
		if m := facts[g.BusID].Minor; m != nil {
			return *m
		}
		return 1 << 30
	}
	sort.SliceStable(gpus, func(i, j int) bool { return minor(gpus[i]) < minor(gpus[j]) })
	var missing []string
	for _, g := range gpus {
		f := facts[g.BusID]
		who := g.Label()
		if f.Minor == nil {
			missing = append(missing, g.BusID)
			fmt.Fprintf(b, "# %s\n", comment(fmt.Sprintf("%s: left out: its device minor (N of /dev/nvidiaN) is unknown: NVML did not give it and proc/driver/nvidia/gpus/%s/information is missing", who, g.BusID)))
			continue
		}
		line := "Name=gpu"
		var notes []string
		if typ := gresType(gpuModel(f)); typ != "" {
			line += " Type=" + typ
		} else {
			notes = append(notes, "no Type: model unknown")
		}
		line += fmt.Sprintf(" File=/dev/nvidia%d", *f.Minor)
		cores, why := gresCores(ev.CPUCores, g.CPUList)
		if cores != "" {
			line += " Cores=" + cores
		} else {
			notes = append(notes, why)
		}
		about := who
		if g.NUMANode >= 0 {
			about += fmt.Sprintf(" NUMA %d", g.NUMANode)
		}
		about += ", " + railNote(g)
		notes = append([]string{about}, notes...)
		fmt.Fprintf(b, "%s # %s\n", line, comment(strings.Join(notes, "; ")))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w for GPU(s) %s: their gres.conf lines are left out", ErrNoMinor, strings.Join(missing, ", "))
	}
	return nil
}

func gpuFacts(ev *node.Evidence) map[string]node.GPU {
	m := map[string]node.GPU{}
	for _, g := range ev.GPUs {
		m[g.BusID] = g
	}
	return m
}

// gpuModel is NVML's name, else the driver's.
func gpuModel(g node.GPU) string {
	if g.Name != "" {
		return g.Name
	}
	return g.Model
}

func railNote(g node.InventoryGPU) string {
	if g.PreferredNIC == "" {
		return "no RDMA NIC"
	}
	port := g.PreferredPort
	if port == "" {
		port = g.PreferredNIC
	}
	return fmt.Sprintf("rail %s %s", port, g.Path)
}

var (
	memorySuffix = regexp.MustCompile(`[_-][0-9]+gb([_-].*)?$`)
	gresTypeOK   = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
)

// gresType is the Type= of a GPU model: "NVIDIA H100 80GB HBM3" is h100.
// Slurm's AutoDetect names a GPU by its model lower-cased with spaces as
// underscores (nvidia_h100_80gb_hbm3), and gres.conf(5) wants a
// configured Type to be a substring of that; so the vendor prefix and the
// memory size onward are cut, and the rest kept as written
// (a100-sxm4, h100_pcie, rtx_6000_ada_generation). "" where unknown.
func gresType(model string) string {
	t := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(model)), " ", "_")
	t = strings.TrimPrefix(t, "nvidia_")
	t = memorySuffix.ReplaceAllString(t, "")
	if !gresTypeOK.MatchString(t) {
		return ""
	}
	return t
}

// gresCores is the Cores= value of a GPU's local CPUs, or "" and why not.
func gresCores(cores []node.CPUCore, cpuList string) (string, string) {
	if len(cores) == 0 {
		return "", "no Cores: sysfs has no CPU topology"
	}
	if cpuList == "" {
		return "", "no Cores: no local_cpulist"
	}
	idx, err := node.CoreIndexes(cores, cpuList)
	if err != nil {
		return "", "no Cores: " + err.Error()
	}
	if len(idx) == len(cores) {
		return "", "no Cores: local to every core"
	}
	return node.FormatCPUList(idx), ""
}
