package bench

import (
	"strings"
	"testing"
)

func TestLaunchFillsItsPlaceholdersPerRun(t *testing.T) {
	l := SrunLaunch([]string{"--mpi=pmix"})
	words, err := l.For([]string{"gpu01", "gpu02"}, 8)
	got := strings.Join(words, " ")
	want := "srun --nodes=2 --ntasks=16 --ntasks-per-node=8 --nodelist=gpu[01-02] --kill-on-bad-exit=1 --mpi=pmix"
	if err != nil || got != want {
		t.Errorf("srun launch:\n got %s (%v)\nwant %s", got, err, want)
	}
	// Names without a shared number stay as they were.
	if words, _ := l.For([]string{"login", "head"}, 1); words[4] != "--nodelist=login,head" {
		t.Errorf("srun launch of two unnumbered nodes: %s", words[4])
	}
	e := EmulatedLaunch("/usr/bin/gdrcheck", 1)
	words, err = e.For(EmulatedNodes(4), 1)
	if got := strings.Join(words, " "); err != nil || got != "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 /usr/bin/gdrcheck emulated-rank --nodes emu[1-4] --gpus-per-node 1 --physical-gpus 1 --" {
		t.Errorf("emulated launch: %s (%v)", got, err)
	}
	// A name that could split the list or read as an option is refused.
	for _, bad := range []string{"a,b", "gpu[1]", "-x", "a b", "a\nb"} {
		if w, err := l.For([]string{"gpu01", bad}, 1); err == nil {
			t.Errorf("For(%q) = %q, want an error", bad, w)
		}
	}
}

func TestParseLaunchRejectsUnknownPlaceholders(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "empty launcher",
		"srun -N {node}":             "unknown placeholder {node}",
		"mpirun -np {ranks":          "unclosed {",
		"srun --nodelist={nodelist}": "",
	} {
		_, err := ParseLaunch(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseLaunch(%q): %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("ParseLaunch(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

// --nccl-launcher follows --launcher's rules through the same parser: a
// value of spaces (an empty CI variable) is no launcher, and a
// placeholder one node does not have ({ranks}) is refused, not passed on.
func TestParseNodeLaunchFollowsTheLauncherRules(t *testing.T) {
	for in, want := range map[string]string{
		" ":                                     "empty launcher",
		"\t":                                    "empty launcher",
		"mpirun -np {ranks}":                    "unknown placeholder {ranks} (known: {gpus})",
		"mpirun -np {gpus":                      "unclosed {",
		"mpirun --allow-run-as-root -np {gpus}": "",
	} {
		l, err := ParseNodeLaunch(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseNodeLaunch(%q): %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("ParseNodeLaunch(%q) = %v, %v; want an error saying %q", in, l, err, want)
		case want == "":
			if got := strings.Join(l.ForGPUs(8), " "); got != "mpirun --allow-run-as-root -np 8" {
				t.Errorf("ForGPUs(8) = %q", got)
			}
		}
	}
}
