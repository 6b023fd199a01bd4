package inventory

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

const (
	nodes       = "../fixtures/nodes/"
	testVersion = "v0.0.0-test"
)

// recorded is the inventory and evidence of a recorded node, as gdrcheck
// inventory collects them; edit, when given, changes the unpacked tree
// first.
func recorded(t *testing.T, name string, edit func(root string)) (node.Inventory, *node.Evidence) {
	t.Helper()
	root := nodetest.Extracted(t, nodes+name+".ttar")
	if edit != nil {
		edit(root)
	}
	ev := nodetest.Collected(t, root)
	return ev.Inventory(), ev
}

// gres and env are the two maps of an inventory, with their errors.
func gres(t *testing.T, inv node.Inventory, ev *node.Evidence) (string, error) {
	t.Helper()
	var b bytes.Buffer
	err := WriteGres(&b, inv, ev, testVersion)
	return b.String(), err
}

func env(t *testing.T, inv node.Inventory) (string, error) {
	t.Helper()
	var b bytes.Buffer
	err := WriteEnv(&b, inv, testVersion)
	return b.String(), err
}

// gresLine is a gres.conf line as WriteGres writes it.
var gresLine = regexp.MustCompile(`^Name=gpu( Type=[a-z0-9][a-z0-9_.-]*)? File=/dev/nvidia([0-9]+)( Cores=[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)? # (.*)$`)

type gresEntry struct {
	typ, file, cores, comment string
}

// parseGres checks every line of a gres output: the header first, then
// gres lines or comments; it returns the gres lines.
func parseGres(t *testing.T, out, host string) []gresEntry {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := fmt.Sprintf("# %s: gres.conf lines from gdrcheck %s", host, testVersion); lines[0] != want {
		t.Errorf("header %q, want %q", lines[0], want)
	}
	var gs []gresEntry
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "#") {
			continue
		}
		m := gresLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("not a gres.conf line: %q", l)
			continue
		}
		gs = append(gs, gresEntry{strings.TrimPrefix(m[1], " Type="), "/dev/nvidia" + m[2], strings.TrimPrefix(m[3], " Cores="), m[7]})
	}
	return gs
}

// gresComment is a comment line WriteGres writes: one line of text with
// no control character (comment() escapes them).
var gresComment = regexp.MustCompile(`^# [^\x00-\x1f\x7f]*$`)

// checkGresGrammar says which lines of a gres output are not ones
// WriteGres builds: a gres.conf line of checked fields (gresLine, its
// comment free of control characters) or a comment line.
func checkGresGrammar(t *testing.T, out string) (lines int) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case l == "" && out == "":
		case gresComment.MatchString(l):
		case gresLine.MatchString(l) && !strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			lines++
		default:
			t.Errorf("a gres line gdrcheck did not build: %q", l)
		}
	}
	return lines
}

// envNames are the variables the env fragment may set.
var envNames = []string{"_gdrcheck_rank", "GDRCHECK_GPU_INDEX", "GDRCHECK_GPU_UUID", "GDRCHECK_GPU_BUS_ID", "GDRCHECK_CPUS", "GDRCHECK_NUMA_NODE", "NCCL_IB_HCA", "UCX_NET_DEVICES"}

// sourceEnv sources an env output under shell in dir ("": a temporary
// one) with only vars set, and returns the environment it leaves (all of
// it, or with only the envNames), its exit code and standard error.
func sourceEnv(t *testing.T, shell, dir, script string, onlyOurs bool, vars ...string) (map[string]string, int, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "env.sh")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(shell, "-c", `. "$0" || exit $?; env`, f)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, vars...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && (!onlyOurs || slices.Contains(envNames, k)) {
			got[k] = v
		}
	}
	return got, code, stderr.String()
}

// envStatements parses an env output with mvdan.cc/sh's POSIX parser and
// returns what in it is not a statement WriteEnv means to write: the
// rank's assignment from the launchers' variables, one case on it,
// exports of envNames with literal or single-quoted values, and echo,
// unset, return and exit with literal, quoted or $_gdrcheck_rank words
// ("||" and redirections between them). Anything else (a command
// substitution, another command, a function, a background job) is named.
func envStatements(script string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), "env.sh")
	if err != nil {
		return []string{"does not parse: " + err.Error()}
	}
	var bad []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if n != nil {
			if what := badNode(n); what != "" {
				bad = append(bad, fmt.Sprintf("%s: %s", n.Pos(), what))
			}
		}
		return true
	})
	return bad
}

// badNode is what makes n no part of an env fragment, or "".
func badNode(n syntax.Node) string {
	rankVars := []string{"_gdrcheck_rank", "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}
	switch n := n.(type) {
	case *syntax.File, *syntax.Word, *syntax.Lit, *syntax.SglQuoted, *syntax.DblQuoted, *syntax.Comment, *syntax.CaseItem:
	case *syntax.Redirect:
		// echo ... >&2, return 1 2>/dev/null: nothing else is opened.
		if to := n.Word.Lit(); n.Op == syntax.DplOut && to != "2" || n.Op == syntax.RdrOut && to != "/dev/null" || n.Op != syntax.DplOut && n.Op != syntax.RdrOut {
			return "a redirection " + n.Op.String() + " " + to
		}
	case *syntax.Stmt:
		if n.Background || n.Negated || n.Coprocess {
			return "a background, negated or coprocess statement"
		}
	case *syntax.BinaryCmd:
		if n.Op != syntax.OrStmt {
			return "a " + n.Op.String() + " between commands"
		}
	case *syntax.CaseClause:
		if pe, ok := single[*syntax.ParamExp](n.Word); !ok || pe.Param.Value != "_gdrcheck_rank" {
			return "a case on something other than $_gdrcheck_rank"
		}
	case *syntax.ParamExp:
		if !slices.Contains(rankVars, n.Param.Value) || n.Exp != nil && n.Exp.Op != syntax.DefaultUnsetOrNull || n.Length || n.Excl || n.Slice != nil || n.Repl != nil || n.Index != nil {
			return "the expansion of " + n.Param.Value
		}
	case *syntax.Assign:
		if !slices.Contains(envNames, n.Name.Value) || n.Append || n.Index != nil || n.Array != nil {
			return "an assignment to " + n.Name.Value
		}
	case *syntax.CallExpr:
		return badCall(n)
	default:
		return fmt.Sprintf("a %T", n)
	}
	return ""
}

// badCall is what makes a command no part of an env fragment, or "".
func badCall(n *syntax.CallExpr) string {
	if len(n.Args) == 0 {
		if len(n.Assigns) != 1 || n.Assigns[0].Name.Value != "_gdrcheck_rank" {
			return "an assignment other than the rank's"
		}
		return ""
	}
	name := n.Args[0].Lit()
	if !slices.Contains([]string{"export", "echo", "unset", "return", "exit"}, name) || len(n.Assigns) > 0 {
		return "the command " + strings.Join(wordsOf(n.Args), " ")
	}
	if name != "export" {
		return ""
	}
	// POSIX sh parses export as a command: each argument is NAME=value,
	// the value literal or single-quoted.
	for _, a := range n.Args[1:] {
		k, isAssign := "", false
		if lead, ok := a.Parts[0].(*syntax.Lit); ok {
			k, _, isAssign = strings.Cut(lead.Value, "=")
		}
		if !isAssign || !slices.Contains(envNames, k) || !literal(a) {
			return "export " + strings.Join(wordsOf([]*syntax.Word{a}), "")
		}
	}
	return ""
}

func literal(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		default:
			return false
		}
	}
	return true
}

func single[T syntax.WordPart](w *syntax.Word) (T, bool) {
	var zero T
	if len(w.Parts) != 1 {
		return zero, false
	}
	t, ok := w.Parts[0].(T)
	return t, ok
}

func wordsOf(ws []*syntax.Word) []string {
	var out []string
	for _, w := range ws {
		var b strings.Builder
		syntax.NewPrinter().Print(&b, w)
		out = append(out, b.String())
	}
	return out
}
