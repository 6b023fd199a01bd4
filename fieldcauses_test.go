package arch_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites/allocation"
)

// specPatterns reads every spec the suites register, as "area / name"
// patterns: It's name is a literal, a literal joined with an expression
// (negative's modes) or a fmt.Sprintf (scaling's node counts), so each
// becomes an anchored regular expression. A name it cannot read fails.
func specPatterns(t *testing.T) []*regexp.Regexp {
	t.Helper()
	fset := token.NewFileSet()
	files, consts, err := suiteFiles(fset)
	if err != nil {
		t.Fatal(err)
	}
	var out []*regexp.Regexp
	for _, f := range files {
		r := specReader{consts: consts, pkg: f.Name.Name}
		// A Describe registers its Its itself or through functions of
		// its file that it calls (topology's placementSpecs, ...).
		funcs := map[string]*ast.FuncDecl{}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = fd
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Describe" || len(c.Args) != 2 {
				return true
			}
			area, ok := r.str(c.Args[0])
			if !ok {
				t.Errorf("%s: cannot read the area of Describe", fset.Position(c.Pos()))
				return false
			}
			seen := map[string]bool{}
			var read func(n ast.Node) bool
			read = func(n ast.Node) bool {
				it, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				id, ok := it.Fun.(*ast.Ident)
				if !ok {
					return true
				}
				if fd := funcs[id.Name]; fd != nil && !seen[id.Name] {
					seen[id.Name] = true
					ast.Inspect(fd.Body, read)
					return true
				}
				if id.Name != "It" || len(it.Args) == 0 {
					return true
				}
				p, ok := r.pattern(it.Args[0])
				if !ok {
					t.Errorf("%s: cannot read the spec name of It", fset.Position(it.Pos()))
					return true
				}
				out = append(out, regexp.MustCompile("^"+regexp.QuoteMeta(area+" / ")+p+"$"))
				return true
			}
			ast.Inspect(c.Args[1], read)
			return false
		})
	}
	// The allocation suite's specs are data, one per property compared
	// across the nodes (suites/allocation), not Ginkgo Its.
	for _, p := range allocation.Properties {
		out = append(out, regexp.MustCompile("^"+regexp.QuoteMeta(allocation.SuiteName+" / "+p.Spec)+"$"))
	}
	return out
}

// suiteFiles parses the suites' non-test files, and their string
// constants by package ("suites.ScalingArea"), for Describe(suites.ScalingArea).
func suiteFiles(fset *token.FileSet) ([]*ast.File, map[string]string, error) {
	consts := map[string]string{}
	var files []*ast.File
	err := filepath.WalkDir("suites", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if l, ok := vs.Values[i].(*ast.BasicLit); ok && l.Kind == token.STRING {
						consts[f.Name.Name+"."+n.Name], _ = strconv.Unquote(l.Value)
					}
				}
			}
		}
		return nil
	})
	return files, consts, err
}

// specReader reads spec names in one package's file.
type specReader struct {
	consts map[string]string
	pkg    string // the file's package, for its own constants
}

var formatVerb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)

// str is a string literal or constant's value.
func (r specReader) str(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		s, ok := r.consts[r.pkg+"."+e.Name]
		return s, ok
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return s, err == nil && e.Kind == token.STRING
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			s, ok := r.consts[x.Name+"."+e.Sel.Name]
			return s, ok
		}
	}
	return "", false
}

// pattern is a spec name as a regular expression: a literal, a literal
// joined with an expression (.+), or a fmt.Sprintf whose verbs become .+.
func (r specReader) pattern(e ast.Expr) (string, bool) {
	if s, ok := r.str(e); ok {
		return regexp.QuoteMeta(s), true
	}
	switch e := e.(type) {
	case *ast.BinaryExpr:
		a, aok := r.pattern(e.X)
		b, bok := r.pattern(e.Y)
		if !aok {
			a = ".+"
		}
		if !bok {
			b = ".+"
		}
		return a + b, e.Op == token.ADD
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(e.Args) > 0 {
			if f, ok := r.str(e.Args[0]); ok {
				parts := formatVerb.Split(f, -1)
				for i := range parts {
					parts[i] = regexp.QuoteMeta(parts[i])
				}
				return strings.Join(parts, ".+"), true
			}
		}
	}
	return "", false
}

// Every spec docs/field-causes.md names is one the suites register, and
// the table holds each of the 42 causes once.
func TestFieldCausesNameOnlySpecsThatExist(t *testing.T) {
	specs := specPatterns(t)
	if len(specs) < 30 {
		t.Fatalf("read %d specs from suites/, expected every area's", len(specs))
	}
	b, err := os.ReadFile("docs/field-causes.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^\| (\d+) \|`)
	named := regexp.MustCompile("`([a-z0-9]+ / [^`]+)`")
	docAction := regexp.MustCompile("^`([A-Z_]+)`")
	seen := map[int]bool{}
	count := map[string]int{}
	for i, l := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if seen[n] {
			t.Errorf("docs/field-causes.md:%d: cause %d listed twice", i+1, n)
		}
		seen[n] = true
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cells) != 6 {
			t.Errorf("docs/field-causes.md:%d: %d cells, want # | cause | sources | status | specs | action", i+1, len(cells))
			continue
		}
		if a := docAction.FindStringSubmatch(cells[5]); a == nil {
			t.Errorf("docs/field-causes.md:%d: cause %d: action %q does not start with one in backquotes", i+1, n, cells[5])
		} else if _, err := results.ParseAction(a[1]); err != nil {
			t.Errorf("docs/field-causes.md:%d: cause %d: %v", i+1, n, err)
		}
		status, cell := cells[3], cells[4]
		count[status]++
		if status != "caught" && status != "partly" && status != "not" {
			t.Errorf("docs/field-causes.md:%d: status %q, want caught, partly or not", i+1, status)
		}
		for _, s := range named.FindAllStringSubmatch(cell, -1) {
			found := false
			for _, p := range specs {
				found = found || p.MatchString(s[1])
			}
			if !found {
				t.Errorf("docs/field-causes.md:%d: cause %d names %q, which no suite registers", i+1, n, s[1])
			}
		}
	}
	for n := 1; n <= 42; n++ {
		if !seen[n] {
			t.Errorf("docs/field-causes.md has no row for cause %d", n)
		}
	}
	// The coverage line is what the notes quote: it must be the rows' sum.
	want := fmt.Sprintf("Coverage: **%d caught, %d partly, %d not** (of 42).", count["caught"], count["partly"], count["not"])
	if !strings.Contains(string(b), want) {
		t.Errorf("docs/field-causes.md: the coverage line is not the rows' count; want %q", want)
	}
}
