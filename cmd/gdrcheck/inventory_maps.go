package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/shellquote"
	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

// The two maps schedulers and launchers consume: gres.conf lines for
// Slurm's placement, and a shell fragment that gives each local rank its
// rail NIC and CPUs. slurmd and sh read them as code, and the inventory
// comes from a node or a recording, so both are built, not printed: every
// identifier is checked for its source's form first (Inventory.CheckFields;
// a bad one is refused with exit 2 and no map is written), every sh value
// is quoted, and a comment holds only generated text and values cleaned
// by the terminal's rule (comment), in which no newline survives to end
// the line.

// checkMap refuses an inventory whose identifiers a map cannot carry.
func checkMap(format string, inv node.Inventory) error {
	if err := inv.CheckFields(); err != nil {
		return &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--format %s: %w; the map is not written", format, err)}
	}
	return nil
}

// comment is s made safe for the rest of a "#" line: the tables' rule,
// with newline and carriage return shown as \n and \r.
func comment(s string) string { return reports.Terminal(s) }

// errNoMinor says a gres line was left out: without the minor the File=
// would name a guess, and a wrong File= binds a job to another GPU.
var errNoMinor = errors.New("device minor unknown")

// writeGres writes one gres.conf line per GPU, in /dev/nvidiaN order:
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
// Each line is generated from checked fields only: Type= matches
// gresTypeOK, File= is built from a number, Cores= from numbers.
func writeGres(w io.Writer, inv node.Inventory, ev *node.Evidence) error {
	if err := checkMap("gres", inv); err != nil {
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
		return fmt.Errorf("%w for GPU(s) %s: their gres.conf lines are left out", errNoMinor, strings.Join(missing, ", "))
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

// writeEnv writes a POSIX sh fragment that a launch wrapper sources: for
// the local rank (LOCAL_RANK, else SLURM_LOCALID, else
// OMPI_COMM_WORLD_LOCAL_RANK) it exports the rank's GPU, its CPUs and NUMA
// node, and its rail NIC for NCCL (NCCL_IB_HCA, "=" for the exact device
// and :port) and UCX (UCX_NET_DEVICES). Rank r is GPU r in NVML index
// order; where NVML did not index every GPU, in PCI bus order, which is
// NVML's own on a whole node. CUDA_VISIBLE_DEVICES is left alone: Slurm
// sets it for GPU jobs, and programs that pick cuda:LOCAL_RANK need every
// GPU visible. An unknown or missing rank is an error on stderr and a
// non-zero return (exit, where the fragment is run rather than sourced).
//
// Its statements are the rank's assignment, one case on it, exports, and
// echo, unset, return and exit; every value is a quoted word
// (internal/shellquote) or a number.
func writeEnv(w io.Writer, inv node.Inventory) error {
	if err := checkMap("env", inv); err != nil {
		return refuseEnv(w, err)
	}
	var qerr error
	quote := func(s string) string {
		q, err := shellquote.Word(s)
		if err != nil && qerr == nil {
			qerr = err
		}
		return q
	}
	gpus := append([]node.InventoryGPU(nil), inv.GPUs...)
	indexed := true
	for _, g := range gpus {
		indexed = indexed && g.Index >= 0
	}
	order := "NVML index order"
	if indexed {
		sort.SliceStable(gpus, func(i, j int) bool { return gpus[i].Index < gpus[j].Index })
	} else {
		order = "PCI bus order (NVML did not index every GPU)"
		sort.SliceStable(gpus, func(i, j int) bool { return gpus[i].BusID < gpus[j].BusID })
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "# %s\n", comment(fmt.Sprintf("%s: launch environment from gdrcheck %s, local rank r on GPU r in %s.", inv.Node, version, order)))
	b.WriteString("# Source it in each rank's wrapper: . <(gdrcheck inventory --format env)\n")
	b.WriteString("_gdrcheck_rank=${LOCAL_RANK:-${SLURM_LOCALID:-${OMPI_COMM_WORLD_LOCAL_RANK:-}}}\n")
	b.WriteString("case $_gdrcheck_rank in\n")
	for r, g := range gpus {
		fmt.Fprintf(b, "%d)\n", r)
		about := g.Label()
		if g.Name != "" {
			about += " " + g.Name
		}
		// The GPU's name is free text from NVML: cleaned, never a word.
		fmt.Fprintf(b, "\t# %s\n", comment(about+": "+railNote(g)))
		export := func(k, v string) { fmt.Fprintf(b, "\texport %s=%s\n", k, quote(v)) }
		if g.Index >= 0 {
			export("GDRCHECK_GPU_INDEX", strconv.Itoa(g.Index))
		}
		if g.UUID != "" {
			export("GDRCHECK_GPU_UUID", g.UUID)
		}
		export("GDRCHECK_GPU_BUS_ID", g.BusID)
		if g.CPUList != "" {
			export("GDRCHECK_CPUS", g.CPUList)
		}
		if g.NUMANode >= 0 {
			export("GDRCHECK_NUMA_NODE", strconv.Itoa(g.NUMANode))
		}
		switch {
		case g.PreferredNIC == "":
			b.WriteString("\t# no RDMA NIC: NCCL_IB_HCA and UCX_NET_DEVICES are not set\n")
		case g.PreferredPort == "":
			b.WriteString("\t# the NIC lists no port: UCX_NET_DEVICES is not set\n")
			export("NCCL_IB_HCA", "="+g.PreferredNIC)
		default:
			export("NCCL_IB_HCA", "="+g.PreferredPort)
			export("UCX_NET_DEVICES", g.PreferredPort)
		}
		b.WriteString("\t;;\n")
	}
	from := "set LOCAL_RANK, SLURM_LOCALID or OMPI_COMM_WORLD_LOCAL_RANK"
	fail := func(msg string) {
		fmt.Fprintf(b, "\techo %s >&2\n\tunset _gdrcheck_rank\n\treturn 1 2>/dev/null || exit 1\n\t;;\n", msg)
	}
	b.WriteString("'')\n")
	fail(quote("gdrcheck: no local rank: " + from))
	b.WriteString("*)\n")
	if len(gpus) == 0 {
		fail(quote(fmt.Sprintf("gdrcheck: %s has no NVIDIA GPU for local rank ", inv.Node)) + `"$_gdrcheck_rank"`)
	} else {
		ranks := "0"
		if len(gpus) > 1 {
			ranks += "-" + strconv.Itoa(len(gpus)-1)
		}
		fail(quote("gdrcheck: local rank ") + `"$_gdrcheck_rank"` + quote(fmt.Sprintf(" is not one of the %d GPU(s) of %s (%s); %s", len(gpus), inv.Node, ranks, from)))
	}
	b.WriteString("esac\nunset _gdrcheck_rank\n")
	if qerr != nil {
		return refuseEnv(w, &exitError{code: results.ExitUnevaluable, err: fmt.Errorf("--format env: %w; the map is not written", qerr)})
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// refusedEnv is what env writes for an inventory it refuses: the
// wrapper's `. <(gdrcheck inventory --format env) || exit 1` sees only
// the fragment's status, and an empty fragment would return 0 with
// nothing set. It holds no text from the inventory.
const refusedEnv = `# gdrcheck refused this node's inventory (its stderr says why): nothing is set.
echo 'gdrcheck: inventory --format env refused this node'"'"'s inventory; nothing is set' >&2
return 1 2>/dev/null || exit 1
`

func refuseEnv(w io.Writer, err error) error {
	if _, werr := io.WriteString(w, refusedEnv); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}
