package arch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// arrowRule forbids packages (and those below them) to pkgs.
type arrowRule struct {
	pkgs      string
	direct    bool // only the packages' own imports (Ginkgo itself uses os/exec)
	forbidden []string
	why       string
}

// noProcessPackages start no process: the parsers over io.Reader, and
// harness/mpi, whose commands harness/bench runs.
var noProcessPackages = []string{"./harness/nccl/...", "./harness/perftest/...", "./harness/ucx/...", "./harness/osu/...", "./harness/mpi/..."}

// The arrows of DESIGN.md: data flows node evidence -> suites -> results ->
// reports, and nothing flows back. Checked on the whole import graph, in the
// style of crane's depcheck.
func TestImportArrows(t *testing.T) {
	rules := []arrowRule{
		{"./suites/...", true, []string{"os/exec", "syscall", "github.com/NVIDIA/go-nvml/pkg/nvml", "github.com/prometheus/procfs"},
			"specs only read evidence: they never shell out, read /sys or call NVML"},
		{"./suites/...", false, []string{"github.com/gdrcheck/gdrcheck/slurm", "github.com/gdrcheck/gdrcheck/runner", "github.com/gdrcheck/gdrcheck/harness/bench"},
			"specs never launch: they never submit jobs, run the runner or start a benchmark"},
		{"./reports/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/gdrcheck/gdrcheck/harness", "github.com/onsi/ginkgo/v2", "github.com/onsi/gomega"},
			"reports are pure functions of results.json"},
		{"./results/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/gdrcheck/gdrcheck/harness", "github.com/gdrcheck/gdrcheck/reports", "github.com/gdrcheck/gdrcheck/slurm", "github.com/onsi/ginkgo/v2"},
			"results is the ground floor: it imports nothing of the pipeline"},
		{"./harness/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/gdrcheck/gdrcheck/runner", "github.com/gdrcheck/gdrcheck/slurm", "github.com/gdrcheck/gdrcheck/reports", "github.com/onsi/ginkgo/v2"},
			"the harness is the apparatus: it reads evidence and launches, judges nothing, and sits below the runner that drives it"},
		{"./slurm/...", false, []string{"github.com/gdrcheck/gdrcheck/suites", "github.com/gdrcheck/gdrcheck/harness", "github.com/onsi/ginkgo/v2", "github.com/onsi/gomega"},
			"slurm schedules, collects and drains; it judges nothing and never reads the host"},
	}
	// The parsers and harness/mpi start no process: harness/bench, the
	// one launch core, does. Neither os/exec nor harness/bench anywhere
	// below them, and no syscall or x/sys/unix of their own (ForkExec,
	// fork); os.StartProcess is caught in their source by
	// TestParsersStartNoProcess.
	for _, p := range noProcessPackages {
		rules = append(rules,
			arrowRule{p, false, []string{"os/exec", "github.com/gdrcheck/gdrcheck/harness/bench"}, "it starts no process: harness/bench launches"},
			arrowRule{p, true, []string{"syscall", "golang.org/x/sys/unix"}, "it starts no process: harness/bench launches"})
	}
	// Only the suites speak Ginkgo and Gomega (tests aside): the runner
	// hands them evidence through suites.Run.
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "github.com/gdrcheck/gdrcheck/suites") {
			continue
		}
		for _, d := range f[1:] {
			if strings.HasPrefix(d, "github.com/onsi/ginkgo/v2") || strings.HasPrefix(d, "github.com/onsi/gomega") {
				t.Errorf("%s imports %s: only suites/... state expectations", f[0], d)
			}
		}
	}
	for _, r := range rules {
		args := []string{"list", "-deps", "-f", "{{.ImportPath}}", r.pkgs}
		if r.direct {
			args = []string{"list", "-f", `{{join .Imports "\n"}}`, r.pkgs}
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkgs, err, out)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[d] = true
		}
		for _, f := range r.forbidden {
			for d := range deps {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s imports %s: %s", r.pkgs, d, r.why)
				}
			}
		}
	}
}

// The shared floors stay below what uses them: the suites framework
// imports none of its areas (a matcher of one area lives in that area),
// and the host's evidence needs no baseline to compare versions
// (internal/version).
func TestSharedPackagesImportNothingAboveThem(t *testing.T) {
	for _, r := range []struct{ pkg, forbidden string }{
		{"./suites", "github.com/gdrcheck/gdrcheck/suites/"},
		{"./harness/node/...", "github.com/gdrcheck/gdrcheck/harness/baseline"},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", r.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		for _, d := range strings.Fields(string(out)) {
			if strings.HasPrefix(d, r.forbidden) {
				t.Errorf("%s imports %s", r.pkg, d)
			}
		}
	}
}

// The packages that start no process call no os.StartProcess either: the
// import rules cannot see it, os being everywhere. Read from their
// source (tests aside), and the detector is shown to find one.
func TestParsersStartNoProcess(t *testing.T) {
	if got := startsProcess(t, "planted.go", "package p\nimport o \"os\"\nfunc f() { o.StartProcess(\"/bin/true\", nil, nil) }\n"); len(got) != 1 {
		t.Fatalf("the detector missed a planted os.StartProcess: %v", got)
	}
	args := append([]string{"list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`}, noProcessPackages...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	files := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, name := range f[1:] {
			p := filepath.Join(f[0], name)
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, at := range startsProcess(t, p, string(src)) {
				t.Errorf("%s calls os.StartProcess: it starts no process (harness/bench launches)", at)
			}
		}
	}
	if files == 0 {
		t.Fatal("no source files listed")
	}
}

// startsProcess lists where src calls os.StartProcess, under whatever
// name it imports os.
func startsProcess(t *testing.T, name, src string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	osName := ""
	for _, im := range f.Imports {
		if im.Path.Value == `"os"` {
			osName = "os"
			if im.Name != nil {
				osName = im.Name.Name
			}
		}
	}
	var at []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "StartProcess" {
			if id, ok := sel.X.(*ast.Ident); ok && osName != "" && id.Name == osName {
				at = append(at, fset.Position(sel.Pos()).String())
			}
		}
		return true
	})
	return at
}
