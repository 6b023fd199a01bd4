package nccl_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

func TestNodeCountsAndPairings(t *testing.T) {
	for n, want := range map[int]string{4: "[1 2 4]", 6: "[1 2 4 6]", 1: "[1]", 8: "[1 2 4 8]"} {
		if got := fmt.Sprint(nccl.NodeCounts(n)); got != want {
			t.Errorf("NodeCounts(%d) = %s, want %s", n, got, want)
		}
	}
	// Each node meets two partners: a then b, d then a.
	if got := fmt.Sprint(nccl.Pairings([]string{"a", "b", "c", "d"})); got != "[[[a b] [c d]] [[b c] [d a]]]" {
		t.Errorf("pairings = %s", got)
	}
	// An odd count leaves one node out of each round, a different one.
	if got := fmt.Sprint(nccl.Pairings([]string{"a", "b", "c"})); got != "[[[a b]] [[b c]]]" {
		t.Errorf("pairings of 3 = %s", got)
	}
}

func TestLaunchFillsItsPlaceholdersPerRun(t *testing.T) {
	l := nccl.SrunLaunch([]string{"--mpi=pmix"})
	got := strings.Join(l.For([]string{"gpu01", "gpu02"}, 8), " ")
	want := "srun --nodes=2 --ntasks=16 --ntasks-per-node=8 --nodelist=gpu01,gpu02 --kill-on-bad-exit=1 --mpi=pmix"
	if got != want {
		t.Errorf("srun launch:\n got %s\nwant %s", got, want)
	}
	e := nccl.EmulatedLaunch("/usr/bin/gdrcheck", 1)
	if got := strings.Join(e.For(nccl.EmulatedNodes(4), 1), " "); got != "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 /usr/bin/gdrcheck emulated-rank --nodes emu1,emu2,emu3,emu4 --gpus-per-node 1 --physical-gpus 1 --" {
		t.Errorf("emulated launch: %s", got)
	}
}

func TestParseLaunchRejectsUnknownPlaceholders(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "empty launcher",
		"srun -N {node}":             "unknown placeholder {node}",
		"mpirun -np {ranks":          "unclosed {",
		"srun --nodelist={nodelist}": "",
	} {
		_, err := nccl.ParseLaunch(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseLaunch(%q): %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("ParseLaunch(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}
