package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

const linkLayerSpec = "fabric / runs every rail port on the same link layer"

// flipRail puts one rail of the InfiniBand node in Ethernet mode, as a
// firmware reset that flips a VPI card's LINK_TYPE leaves it.
var flipRail = writeFile("sys/class/infiniband/mlx5_3/ports/1/link_layer", "Ethernet\n")

// runTree runs every suite but container on a node tree, replaying the
// H100 node's recorded nccl-tests runs, and returns its exit code and
// node.
func runTree(t *testing.T, root string, args ...string) (int, results.Node) {
	t.Helper()
	recs, _ := shapeRuns(healthyNode)
	var bins []string
	for k := range recs {
		if op, mode, _ := strings.Cut(k, "-"); mode == "direct" {
			bins = append(bins, op+"_perf")
		}
	}
	dir, env := fakebin.NCCLTests(t, bins, recs)
	out := t.TempDir()
	cmd := exec.Command(bin, append([]string{"run", "-q", "--host-root", root, "--out", out, "--nccl-tests-dir", dir}, args...)...)
	cmd.Env = append(append(os.Environ(), "SLURMD_NODENAME="), env...)
	r := runCmd(t, cmd)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return r.code, res.Nodes[0]
}

func specsOf(n results.Node) map[string]results.Spec {
	m := map[string]results.Spec{}
	for _, s := range n.Suites {
		for _, sp := range s.Specs {
			m[s.Name+" / "+sp.Name] = sp
		}
	}
	return m
}

// The healthy RoCE shape (the NDR node's GPUs and ConnectX-7s on 400 GbE,
// as Google's A3 Ultra runs them) is no NDR node: with the shipped
// profiles it matches none, its collectives saying so by the link layer,
// and fails nothing; against a profile that expects Ethernet it matches
// that one and passes every spec. The InfiniBand node it was made from
// still matches h100x8-ndr, and with one rail flipped still does (by
// the link layer most rails run), failing the link-layer spec alone.
func TestTheHealthyRoCEShapePassesWithTheShippedProfilesAndMatchesNoNDROne(t *testing.T) {
	t.Parallel()
	roceRoot := variantOf(t, roce)
	for _, tc := range []struct {
		name, profile string
		args          []string
	}{
		{"shipped profiles", "", []string{"--allow-missing-baseline"}},
		// h100x8-roce holds BAR1 alone: the collectives are reported.
		{"a RoCE profile", "h100x8-roce", append([]string{"--allow-missing-baseline"}, roceBaselines...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, n := runTree(t, roceRoot, tc.args...)
			got := specsOf(n)
			for name, sp := range got {
				if sp.State == results.StateFailed {
					t.Errorf("%s failed on the healthy RoCE shape: %s", name, sp.Message)
				}
			}
			if code != 0 || n.Profile != tc.profile {
				t.Errorf("exit %d, profile %q; want 0 and %q", code, n.Profile, tc.profile)
			}
			for _, name := range []string{linkLayerSpec, "fabric / gives NCCL a RoCE v2 GID on every RoCE rail port",
				"fabric / runs every RoCE rail port at the node's highest active MTU"} {
				if sp := got[name]; sp.State != results.StatePassed || len(sp.Warnings()) != 0 {
					t.Errorf("%s: %s %q %q, want a clean pass", name, sp.State, sp.Message, sp.Warnings())
				}
			}
			if sp := got[linkLayerSpec]; !strings.Contains(strings.Join(sp.Notes, "\n"), "all 8 rail ports on Ethernet") {
				t.Errorf("link layer notes %q", sp.Notes)
			}
			if tc.profile != "" {
				return
			}
			bw := got["collectives / reaches the baseline bus bandwidth at large messages"]
			want := `closest is h100x8-ndr (fixtures/baselines/h100x8-ndr.yaml), which differs in nic.link_layer: want InfiniBand, node has "Ethernet"`
			if !strings.Contains(strings.Join(bw.Notes, "\n"), want) {
				t.Errorf("the collectives' not-compared note does not name the link layer %q:\n%q", want, bw.Notes)
			}
		})
	}

	for _, tc := range []struct {
		name   string
		edit   func(*testing.T, string)
		failed []string
	}{
		{"the InfiniBand node", func(*testing.T, string) {}, nil},
		{"the InfiniBand node with one rail flipped to Ethernet", flipRail, []string{linkLayerSpec}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, n := runTree(t, variantOf(t, tc.edit))
			var failed []string
			for name, sp := range specsOf(n) {
				if sp.State == results.StateFailed {
					failed = append(failed, name)
				}
			}
			if n.Profile != "h100x8-ndr" || strings.Join(failed, ";") != strings.Join(tc.failed, ";") || code != min(len(failed), 1) {
				t.Errorf("profile %q, exit %d, failed %q; want h100x8-ndr failing %q", n.Profile, code, failed, tc.failed)
			}
			ll := specsOf(n)[linkLayerSpec]
			if !strings.Contains(strings.Join(ll.Notes, "\n"), "baseline h100x8-ndr expects InfiniBand, and matched the node by it") {
				t.Errorf("link layer notes %q", ll.Notes)
			}
			if tc.failed != nil && !strings.Contains(ll.Message, "mlxconfig -d 0000:3b:00.0 set LINK_TYPE_P1=1") {
				t.Errorf("the flipped rail's message lacks the fix: %q", ll.Message)
			}
		})
	}
}
