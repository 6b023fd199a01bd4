package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
)

// Launch starts the ranks of one run across a set of nodes: a command
// prefix whose words may hold {nodes} (how many), {ranks} (nodes × GPUs),
// {gpus} (per node) and {nodelist} (the names in Slurm's hostlist form,
// gpu[00001-16384]). The Slurm job passes srun with its MPI plugin
// options; on one box the emulated-node launcher (EmulatedLaunch) plays
// the nodes.
//
// {nodelist} is the compressed hostlist rather than srun's file form
// (--nodelist=PATH) because it needs no file per run and every Slurm
// command takes it, and because it is the form Slurm itself hands a job
// (SLURM_JOB_NODELIST, one environment string under the same 128 KiB
// limit): names that do not compress into one argument would break Slurm
// first. Names without a shared pattern stay comma-separated, as before.
type Launch []string

// MaxArg is the longest argv or environment string Linux execs
// (MAX_ARG_STRLEN, 32 pages, its terminating NUL counted).
const MaxArg = 128 << 10

// ParseLaunch splits a launcher template (--launcher) into words: each
// placeholder is one of {nodes} {ranks} {gpus} {nodelist}.
func ParseLaunch(s string) (Launch, error) {
	return parseTemplate(s, "srun --nodes={nodes} --ntasks={ranks} --nodelist={nodelist}", "{nodes}", "{ranks}", "{gpus}", "{nodelist}")
}

// ParseNodeLaunch splits the template that starts one node's nccl-tests
// processes (--nccl-launcher), by the rules of ParseLaunch: one node has
// one placeholder, {gpus}, its GPUs (one process each).
func ParseNodeLaunch(s string) (Launch, error) {
	return parseTemplate(s, "mpirun --allow-run-as-root -np {gpus}", "{gpus}")
}

// ParseMPILaunch splits the template that starts the mpi suite's two
// benchmark ranks (--mpi-launcher, --mpi-internode-launcher) by the rules
// of ParseLaunch: its one placeholder is {ranks}, the two ranks.
func ParseMPILaunch(s string) (Launch, error) {
	return parseTemplate(s, "mpirun --mca pml ucx -np {ranks}", "{ranks}")
}

// ForGPUs fills a node launcher's {gpus}.
func (l Launch) ForGPUs(gpus int) []string {
	out := make([]string, len(l))
	for i, w := range l {
		out[i] = strings.ReplaceAll(w, "{gpus}", strconv.Itoa(gpus))
	}
	return out
}

// parseTemplate splits a launcher template into words and refuses one of
// no words (an empty or all-space value, as an unset CI variable leaves)
// and a placeholder other than the known ones, which would reach the
// command line as it is.
func parseTemplate(s, example string, known ...string) (Launch, error) {
	l := Launch(strings.Fields(s))
	if len(l) == 0 {
		return nil, fmt.Errorf("empty launcher: want a command such as %q", example)
	}
	for _, w := range l {
		for rest := w; ; {
			i := strings.Index(rest, "{")
			if i < 0 {
				break
			}
			j := strings.Index(rest[i:], "}")
			if j < 0 {
				return nil, fmt.Errorf("launcher word %q: unclosed {", w)
			}
			if p := rest[i : i+j+1]; !slices.Contains(known, p) {
				return nil, fmt.Errorf("launcher word %q: unknown placeholder %s (known: %s)", w, p, strings.Join(known, " "))
			}
			rest = rest[i+j+1:]
		}
	}
	return l, nil
}

// SrunLaunch is the Slurm job's launcher: explicit task counts (a step
// otherwise inherits the job's), the node list, and extra srun options
// such as --mpi=pmix for MPI-built nccl-tests.
func SrunLaunch(extra []string) Launch {
	l := Launch{"srun", "--nodes={nodes}", "--ntasks={ranks}", "--ntasks-per-node={gpus}", "--nodelist={nodelist}", "--kill-on-bad-exit=1"}
	return append(l, extra...)
}

// For fills the placeholders for one run. It refuses a node name that
// is not one (hostlist.Valid) and a word the kernel would not exec.
// {nodelist} keeps the nodes' order (hostlist.Encode): emulated ranks
// find their node by position in it.
func (l Launch) For(nodes []string, gpus int) ([]string, error) {
	list, err := hostlist.Encode(nodes)
	if err != nil {
		return nil, fmt.Errorf("launcher: %w", err)
	}
	r := strings.NewReplacer("{nodes}", strconv.Itoa(len(nodes)), "{ranks}", strconv.Itoa(len(nodes)*gpus),
		"{gpus}", strconv.Itoa(gpus), "{nodelist}", list)
	out := make([]string, len(l))
	for i, w := range l {
		out[i] = r.Replace(w)
		if err := fitsArg(out[i]); err != nil {
			return nil, fmt.Errorf("launcher word %q: %w", l[i], err)
		}
	}
	return out, nil
}

// fitsArg refuses a string over MaxArg, which exec would fail with E2BIG
// ("argument list too long").
func fitsArg(s string) error {
	if len(s)+1 > MaxArg {
		return fmt.Errorf("%d bytes, over Linux's %d-byte limit on one argument: the node names do not compress into a hostlist (give them a shared prefix and number)", len(s), MaxArg-1)
	}
	return nil
}
