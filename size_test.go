package arch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines and maxPackageShare are the house's size rules (issue 31):
// a function a newcomer reads in one screen or two, and no package that
// holds most of what the code does.
const (
	maxFuncLines    = 100
	maxPackageShare = 0.30
)

// goFiles lists the repository's Go files, fixtures' testdata and hidden
// folders (a device's scratch) aside.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found")
	}
	return files
}

// longFuncs lists the functions and function literals of src longer than
// maxFuncLines: a Ginkgo Describe's closure counts as one.
func longFuncs(t *testing.T, name string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var long []string
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		what := "a function literal"
		switch x := n.(type) {
		case *ast.FuncDecl:
			body, what = x.Body, x.Name.Name
		case *ast.FuncLit:
			body = x.Body
		}
		if body != nil {
			if l := fset.Position(body.Rbrace).Line - fset.Position(n.Pos()).Line + 1; l > maxFuncLines {
				long = append(long, fset.Position(n.Pos()).String()+": "+what)
			}
		}
		return true
	})
	return long
}

// No function, test or not, is over 100 lines; the detector is shown to
// find one.
func TestNoFunctionIsOver100Lines(t *testing.T) {
	planted := "package p\nvar _ = func() {\n" + strings.Repeat("\t_ = 1\n", maxFuncLines) + "}\n"
	if got := longFuncs(t, "planted.go", []byte(planted)); len(got) != 1 {
		t.Fatalf("the detector missed a planted %d-line literal: %v", maxFuncLines+2, got)
	}
	for _, p := range goFiles(t) {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range longFuncs(t, p, src) {
			t.Errorf("%s is over %d lines: cut it into named steps", at, maxFuncLines)
		}
	}
}

// No package holds over 30 % of the code (lines of non-test Go files):
// harness/ once held 51 %, doing four jobs under one name.
func TestNoPackageHoldsOver30PercentOfTheCode(t *testing.T) {
	lines := map[string]int{}
	total := 0
	for _, p := range goFiles(t) {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(src), "\n")
		lines[filepath.Dir(p)] += n
		total += n
	}
	for dir, n := range lines {
		if share := float64(n) / float64(total); share > maxPackageShare {
			t.Errorf("%s holds %.0f %% of the code (%d of %d lines): over %.0f %%", dir, 100*share, n, total, 100*maxPackageShare)
		}
	}
}
