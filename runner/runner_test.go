package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/knownbad"
)

// A root that cannot be opened makes the node unevaluable, named as the
// user gave it rather than as the directory an archive was unpacked to.
func TestHostUnreadableSaysWhyInTheUsersWords(t *testing.T) {
	root := filepath.Join(t.TempDir(), "unpacked")
	_, err := node.Open(root)
	if err == nil {
		t.Fatalf("node.Open(%q) opened a missing root", root)
	}
	for _, tc := range []struct {
		name, label, want string
	}{
		{"no label: the root", "", root},
		{"a label replaces the root", "dgx-01.ttar", "dgx-01.ttar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n results.Node
			hostUnreadable(Options{HostRoot: root, HostLabel: tc.label, NodeName: "n1"}, &n, err)
			if n.Name != "n1" || n.Status != results.NodeUnevaluable || !strings.Contains(n.Reason, tc.want) {
				t.Errorf("got %+v, want n1 unevaluable, the reason naming %q", n, tc.want)
			}
			if tc.label != "" && strings.Contains(n.Reason, root) {
				t.Errorf("reason %q names the unpacked root", n.Reason)
			}
		})
	}
}

func TestPrintKnownBadNamesTheCellAndWhereNCCLCameFrom(t *testing.T) {
	for _, tc := range []struct {
		node  string
		lines []string // prefixes, one per line
	}{
		{"h100x8-nccl221-peermem-only", []string{"known-bad combination (fail, NCCL from /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5): NVIDIA/nccl#1676: NCCL 2.21.5 is <=2.22.3"}},
		{"h100x8-nvswitch-cx7-pix", nil},
	} {
		t.Run(tc.node, func(t *testing.T) {
			f := knownbad.FromEvidence(fixture(t, tc.node, false), "")
			var b strings.Builder
			printKnownBad(&b, f)
			got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if b.Len() == 0 {
				got = nil
			}
			if len(got) != len(tc.lines) {
				t.Fatalf("printed %q, want %d lines", b.String(), len(tc.lines))
			}
			for i, l := range tc.lines {
				if !strings.HasPrefix(got[i], l) || !strings.Contains(got[i], "; fix: ") {
					t.Errorf("line %d %q: want it to start %q and say the fix", i, got[i], l)
				}
			}
			printKnownBad(nil, f) // no writer: nothing to print to
		})
	}
}

// printMisbuilds says per check what the mpi suite will fail or cannot
// judge, with whatever a command printed made safe for a terminal.
func TestPrintMisbuildsSaysWhatTheMPISuiteWillFind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		facts mpi.Facts
		want  []string // line prefixes, in order
	}{
		{"a recording without MPI: nothing judged", mpi.Collect(t.TempDir(), false, node.GDRCopy{}, nil),
			[]string{"MPI not judged: the recording has no gdrcheck/mpi.json", "MPICH not judged: ", "UCX not judged: no UCX found", "gdr_copy not judged: ", "UCX RDMA not judged: "}},
		{"an Open MPI without CUDA, its path holding an escape", mpi.Facts{Recorded: true, OMPIInfo: mpi.Command{
			Argv: []string{"ompi_info", "--parsable", "--all"}, Path: "/opt/\x1b[2Jmpi/bin/ompi_info",
			Output: "mca:opal:base:param:opal_built_with_cuda_support:value:false\n"}},
			[]string{"MPI misbuild: Open MPI (version unknown) (/opt/?[2Jmpi/bin/ompi_info) was built without CUDA support", "MPICH not judged: ", "UCX not judged: ", "gdr_copy not judged: ", "UCX RDMA not judged: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printMisbuilds(&b, tc.facts, []string{"mlx5_0"})
			got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if len(got) != len(tc.want) || strings.ContainsRune(b.String(), '\x1b') {
				t.Fatalf("printed %q, want %d lines and no escape", b.String(), len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("line %d %q: want it to start %q", i, got[i], w)
				}
			}
		})
	}
}

func TestPrintableReplacesWhatATerminalWouldObey(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, 4.1.5":          "plain text, 4.1.5",
		"\x1b[31mred\x1b[0m":         "?[31mred?[0m",
		"two\nlines\tand a tab\r":    "two?lines?and a tab?",
		"Ünïcödé stays":              "Ünïcödé stays",
		"a BEL \a and NUL \x00 gone": "a BEL ? and NUL ? gone",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInterruptedMarksANodeASignalStopped(t *testing.T) {
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("SIGTERM"))
	for _, tc := range []struct {
		name         string
		ctx          context.Context
		reason       string
		status, want string
	}{
		{"no context", nil, "", results.NodeEvaluated, ""},
		{"a live context", context.Background(), "", results.NodeEvaluated, ""},
		{"stopped", cancelled, "", results.NodeInterrupted, "SIGTERM before every spec ran: the report holds what ran, the rest is skipped"},
		{"stopped, keeping the reason it had", cancelled, "libcuda could not be used", results.NodeInterrupted,
			"SIGTERM before every spec ran: the report holds what ran, the rest is skipped; libcuda could not be used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := results.Node{Status: results.NodeEvaluated, Reason: tc.reason}
			interrupted(Options{Ctx: tc.ctx}, &n)
			want := tc.want
			if want == "" {
				want = tc.reason
			}
			if n.Status != tc.status || n.Reason != want {
				t.Errorf("got %s %q, want %s %q", n.Status, n.Reason, tc.status, want)
			}
		})
	}
}

func TestNICNamesOfAFixtureNode(t *testing.T) {
	want := []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"}
	if got := nicNames(fixture(t, "h100x8-nvswitch-cx7-pix", false)); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := nicNames(fixture(t, "h200x2-nv18-vm", false)); got != nil {
		t.Errorf("a node without NICs: got %v", got)
	}
}
