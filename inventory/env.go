package inventory

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/shellquote"
)

// WriteEnv writes a POSIX sh fragment that a launch wrapper sources: for
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
// (internal/shellquote) or a number. version names the gdrcheck that
// wrote it, in the header. A refused inventory writes RefusedEnv and
// returns an error wrapping ErrRefused.
func WriteEnv(w io.Writer, inv node.Inventory, version string) error {
	if err := checkMap(inv); err != nil {
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
		return refuseEnv(w, refused(qerr))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RefusedEnv is what WriteEnv writes for an inventory it refuses: the
// wrapper's `. <(gdrcheck inventory --format env) || exit 1` sees only
// the fragment's status, and an empty fragment would return 0 with
// nothing set. It holds no text from the inventory.
const RefusedEnv = `# gdrcheck refused this node's inventory (its stderr says why): nothing is set.
echo 'gdrcheck: inventory --format env refused this node'"'"'s inventory; nothing is set' >&2
return 1 2>/dev/null || exit 1
`

func refuseEnv(w io.Writer, err error) error {
	if _, werr := io.WriteString(w, RefusedEnv); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}
