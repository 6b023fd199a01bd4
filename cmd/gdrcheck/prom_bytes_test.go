package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// One invalid UTF-8 byte in a recorded string that becomes a label value
// costs nothing: the run exits as the clean recording does, writes its
// whole set, and the textfile passes promtool with the byte as U+FFFD
// (the JUnit rule, reports/sanitize.go).
func TestOneInvalidByteInARecordedStringCostsNoTextfile(t *testing.T) {
	t.Parallel()
	replace := func(rel, old, new string) func(t *testing.T, root string) {
		return func(t *testing.T, root string) {
			p := filepath.Join(root, rel)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(old)) {
				t.Fatalf("%s holds no %q", rel, old)
			}
			if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		what  string
		edit  func(t *testing.T, root string)
		code  int
		label string // as the textfile must hold it
	}{
		{"hostname", replace("proc/sys/kernel/hostname", "h100-node", "h100-\xffnode"), 0, `node="h100-` + "\uFFFD" + `node"`},
		{"kernel release", replace("proc/sys/kernel/osrelease", "6.8.0-60", "6.8.0-\xff60"), 0, `kernel="6.8.0-` + "\uFFFD" + `60-generic"`},
		{"driver version", replace("gdrcheck/nvml.json", `"580.95.05"`, "\"580.\xff95.05\""), 0, `driver="580.` + "\uFFFD" + `95.05"`},
		{"GPU name", replace("gdrcheck/nvml.json", "NVIDIA H100 80GB", "NVIDIA H100 \xff80GB"), 0, `name="NVIDIA H100 ` + "\uFFFD" + `80GB HBM3"`},
		{"MOFED version", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "sys/module/mlx5_core"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeRecorded(t, root, "sys/module/mlx5_core/version", "24.10-\xff1.1.4")
		}, 0, `mofed="24.10-` + "\uFFFD" + `1.1.4"`},
		// A NIC's name is a directory's: the host root's walk refuses
		// it (exit 2, the node unevaluable), and the set is still
		// written whole.
		{"NIC name", func(t *testing.T, root string) { renameNIC(t, root, "mlx5_\xff0") }, 2, `status="unevaluable"`},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			root := hostileRoot(t, func(root string) { c.edit(t, root) })
			out := t.TempDir()
			prom := filepath.Join(t.TempDir(), "gdrcheck.prom")
			r := gdrcheck(t, "run", "-q", "--host-root", root, "--suites", "topology,kernel", "--out", out, "--prom-textfile", prom)
			if r.code != c.code {
				t.Errorf("exit %d, want %d:\n%s", r.code, c.code, r.stderr)
			}
			res, err := results.Read(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatalf("no results.json: %v\n%s", err, r.stderr)
			}
			validateJUnit(t, filepath.Join(out, "junit.xml"))
			if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
				t.Error(err)
			}
			checkPromtool(t, prom)
			checkPromAgrees(t, prom, res)
			b, err := os.ReadFile(prom)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), c.label) {
				t.Errorf("the textfile holds no %s:\n%s", c.label, b)
			}
		})
	}
}
