package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Every count and range flag has a bound: refused before anything runs,
// exit 2, the flag named. Each of these once panicked (makeslice), ran out
// of memory, looped for ever or ran a launcher of no words.
func TestCountAndRangeFlagsAreBounded(t *testing.T) {
	t.Parallel()
	scaling := []string{"run", "-q", "--suites", "scaling", "--out", t.TempDir()}
	cores := runtime.NumCPU()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(scaling, "--emulate-nodes", "9223372036854775807"), fmt.Sprintf("--emulate-nodes 9223372036854775807: at most %d, the CPU cores of this machine", cores)},
		{append(scaling, "--emulate-nodes", "2000000000"), fmt.Sprintf("--emulate-nodes 2000000000: at most %d", cores)},
		{append(scaling, "--emulate-nodes", fmt.Sprint(cores+1)), fmt.Sprintf("--emulate-nodes %d: at most %d", cores+1, cores)},
		{append(scaling, "--emulate-nodes", "-5"), "--emulate-nodes -5: emulate at least 2 nodes"},
		{append(scaling, "--nodes", "n[9223372036854775806-9223372036854775807]"), "--nodes: "},
		{append(scaling, "--nodes", "n[1-16385]"), "--nodes: \"n[1-16385]\": more than 16384 names, the largest allocation gdrcheck is built for"},
		{append(scaling, "--nodes", "n[1-16384],m1"), "more than 16384 names"},
		{append(scaling, "--nodes", "n[1-4]", "--gpus-per-node", "65"), "--gpus-per-node 65: want 1 to 64"},
		{[]string{"run", "-q", "--host-root", nodes + "h200x2-nv18-vm.ttar", "--out", t.TempDir(), "--nccl-launcher", " "}, `--nccl-launcher " ": empty launcher`},
		{[]string{"run", "-q", "--host-root", nodes + "h200x2-nv18-vm.ttar", "--out", t.TempDir(), "--nccl-launcher", "mpirun -np {ranks}"}, "--nccl-launcher \"mpirun -np {ranks}\": launcher word \"{ranks}\": unknown placeholder {ranks} (known: {gpus})"},
		{[]string{"submit", "-N", "16385", "-p", "gpu", "--out", t.TempDir()}, "--nodes 16385: want 1 to 16384"},
		{[]string{"submit", "-N", "2", "-p", "gpu", "--out", t.TempDir(), "--gpus-per-node", "1000"}, "--gpus-per-node 1000: want 1 to 64"},
	} {
		r := gdrcheck(t, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 saying %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
}
