package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// Recordings whose strings try to break out of inventory's sh and
// gres.conf outputs. Each payload would create the file X in the
// sourcing shell's directory if any of it ran.
var hostilePayloads = map[string]string{
	"newline":     "\ntouch X",
	"cmd subst":   "$(touch X)",
	"backticks":   "`touch X`",
	"quotes":      `';touch X;'";touch X;"`,
	"semicolon":   ";touch X",
	"all of them": "\n$(touch X)`touch X`';touch X;'\";touch X;\"\r\x1b]0;pwned\x07",
}

// hostileRoot is the 8 x H100 node with one recorded string changed by edit.
func hostileRoot(t *testing.T, edit func(root string)) string {
	t.Helper()
	root := t.TempDir()
	if err := extract(nodes+"h100x8-nvswitch-cx7-pix.ttar", root); err != nil {
		t.Fatal(err)
	}
	edit(root)
	return root
}

// editNVML sets a field of GPU i in the recording's gdrcheck/nvml.json.
func editNVML(t *testing.T, root string, i int, field, v string) {
	t.Helper()
	editGPU(i, func(g map[string]any) { g[field] = v })(t, root)
}

func writeRecorded(t *testing.T, root, rel, v string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, rel), []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// renameNIC gives mlx5_0 (GPU 0's rail) another name, in its device
// directory and its sys/class/infiniband link. A file name holds any byte
// but '/' and NUL.
func renameNIC(t *testing.T, root, name string) {
	t.Helper()
	link := filepath.Join(root, "sys/class/infiniband/mlx5_0")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	dev := filepath.Join(filepath.Dir(link), target)
	newTarget := filepath.Join(filepath.Dir(target), name)
	if err := os.Rename(dev, filepath.Join(filepath.Dir(dev), name)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(newTarget, filepath.Join(root, "sys/class/infiniband", name)); err != nil {
		t.Fatal(err)
	}
}

// envNames are the variables the env fragment may set.
var envNames = []string{"_gdrcheck_rank", "GDRCHECK_GPU_INDEX", "GDRCHECK_GPU_UUID", "GDRCHECK_GPU_BUS_ID", "GDRCHECK_CPUS", "GDRCHECK_NUMA_NODE", "NCCL_IB_HCA", "UCX_NET_DEVICES"}

// envStatements parses an env output with mvdan.cc/sh's POSIX parser and
// returns what in it is not a statement writeEnv means to write: the
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
	rankVars := []string{"_gdrcheck_rank", "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}
	literal := func(w *syntax.Word) bool {
		for _, p := range w.Parts {
			switch p.(type) {
			case *syntax.Lit, *syntax.SglQuoted:
			default:
				return false
			}
		}
		return true
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			return true
		}
		where := func(what string) { bad = append(bad, fmt.Sprintf("%s: %s", n.Pos(), what)) }
		switch n := n.(type) {
		case *syntax.File, *syntax.Word, *syntax.Lit, *syntax.SglQuoted, *syntax.DblQuoted, *syntax.Comment, *syntax.CaseItem:
		case *syntax.Redirect:
			// echo ... >&2, return 1 2>/dev/null: nothing else is opened.
			if to := n.Word.Lit(); n.Op == syntax.DplOut && to != "2" || n.Op == syntax.RdrOut && to != "/dev/null" || n.Op != syntax.DplOut && n.Op != syntax.RdrOut {
				where("a redirection " + n.Op.String() + " " + to)
			}
		case *syntax.Stmt:
			if n.Background || n.Negated || n.Coprocess {
				where("a background, negated or coprocess statement")
			}
		case *syntax.BinaryCmd:
			if n.Op != syntax.OrStmt {
				where("a " + n.Op.String() + " between commands")
			}
		case *syntax.CaseClause:
			if pe, ok := single[*syntax.ParamExp](n.Word); !ok || pe.Param.Value != "_gdrcheck_rank" {
				where("a case on something other than $_gdrcheck_rank")
			}
		case *syntax.ParamExp:
			if !slices.Contains(rankVars, n.Param.Value) || n.Exp != nil && n.Exp.Op != syntax.DefaultUnsetOrNull || n.Length || n.Excl || n.Slice != nil || n.Repl != nil || n.Index != nil {
				where("the expansion of " + n.Param.Value)
			}
		case *syntax.Assign:
			if !slices.Contains(envNames, n.Name.Value) || n.Append || n.Index != nil || n.Array != nil {
				where("an assignment to " + n.Name.Value)
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				if len(n.Assigns) != 1 || n.Assigns[0].Name.Value != "_gdrcheck_rank" {
					where("an assignment other than the rank's")
				}
				break
			}
			name := n.Args[0].Lit()
			if !slices.Contains([]string{"export", "echo", "unset", "return", "exit"}, name) || len(n.Assigns) > 0 {
				where("the command " + strings.Join(wordsOf(n.Args), " "))
			}
			// POSIX sh parses export as a command: each argument is
			// NAME=value, the value literal or single-quoted.
			for _, a := range n.Args[1:] {
				if name != "export" {
					break
				}
				k, isAssign := "", false
				if lead, ok := a.Parts[0].(*syntax.Lit); ok {
					k, _, isAssign = strings.Cut(lead.Value, "=")
				}
				if !isAssign || !slices.Contains(envNames, k) || !literal(a) {
					where("export " + strings.Join(wordsOf([]*syntax.Word{a}), ""))
				}
			}
		default:
			where(fmt.Sprintf("a %T", n))
		}
		return true
	})
	return bad
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

// sourceEnvIn sources script under shell in dir with only vars set and
// returns the GDRCHECK_* and NCCL variables it leaves, and its exit code.
func sourceEnvIn(t *testing.T, shell, dir, script string, vars ...string) (map[string]string, int) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "env.sh")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(shell, "-c", `. "$0" || exit $?; env`, f)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, vars...)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && slices.Contains(envNames, k) {
			env[k] = v
		}
	}
	return env, code
}

// gresComment is a comment line writeGres writes: one line of text with
// no control character (comment() escapes them).
var gresComment = regexp.MustCompile(`^# [^\x00-\x1f\x7f]*$`)

// checkGresGrammar says which lines of a gres output are not ones
// writeGres builds: a gres.conf line of checked fields (gresLine, its
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

// (a) A GPU name is free text: whatever it holds, the env fragment that
// carries it (in a comment) runs nothing under bash or dash and holds
// only the statements writeEnv means; gres has only lines it built.
func TestInventoryMapsKeepAHostileGPUNameAsText(t *testing.T) {
	for what, p := range hostilePayloads {
		t.Run(what, func(t *testing.T) {
			root := hostileRoot(t, func(root string) { editNVML(t, root, 1, "name", "NVIDIA H100"+p) })
			env := gdrcheck(t, "inventory", "--host-root", root, "--format", "env")
			if env.code != 0 {
				t.Fatalf("env: exit %d: %s", env.code, env.stderr)
			}
			for _, b := range envStatements(env.stdout) {
				t.Errorf("env holds %s\n%s", b, env.stdout)
			}
			if strings.Contains(env.stdout, "\x1b") || strings.Contains(env.stdout, "\r") {
				t.Errorf("env carries a raw ESC or CR:\n%q", env.stdout)
			}
			for _, shell := range []string{"bash", "dash"} {
				dir := t.TempDir()
				for _, rank := range []string{"0", "1", "7", "8", ""} {
					vars, code := sourceEnvIn(t, shell, dir, env.stdout, "SLURM_LOCALID="+rank)
					if want := rank != "8" && rank != ""; (code == 0) != want {
						t.Errorf("%s, rank %q: exit %d", shell, rank, code)
					}
					if rank == "1" && (vars["NCCL_IB_HCA"] != "=mlx5_1:1" || vars["GDRCHECK_GPU_BUS_ID"] != "0000:19:00.0") {
						t.Errorf("%s, rank 1: %v", shell, vars)
					}
				}
				if _, err := os.Stat(filepath.Join(dir, "X")); err == nil {
					t.Errorf("%s: sourcing the env output ran a command from the GPU name:\n%s", shell, env.stdout)
				}
			}
			gres := gdrcheck(t, "inventory", "--host-root", root, "--format", "gres")
			if gres.code != 0 {
				t.Fatalf("gres: exit %d: %s", gres.code, gres.stderr)
			}
			if n := checkGresGrammar(t, gres.stdout); n != 8 {
				t.Errorf("%d gres lines for 8 GPUs:\n%s", n, gres.stdout)
			}
		})
	}
}

// (b) An identifier that is not of its source's form is refused by env
// and gres alike: exit 2, the field named, no map written (env writes a
// fragment that fails).
func TestInventoryMapsRefuseAHostileIdentifier(t *testing.T) {
	fields := []struct {
		field string // as the error names it
		edit  func(t *testing.T, root, p string)
	}{
		{"node (proc/sys/kernel/hostname): not a node name", func(t *testing.T, root, p string) { writeRecorded(t, root, "proc/sys/kernel/hostname", "h100-node"+p) }},
		{"gpus[0]: uuid", func(t *testing.T, root, p string) {
			editNVML(t, root, 0, "uuid", "GPU-6a1c0f3e-0000-4000-8000-000000000000"+p)
		}},
		{"gpus[0]: cpu_list (local_cpulist)", func(t *testing.T, root, p string) {
			writeRecorded(t, root, "sys/bus/pci/devices/0000:18:00.0/local_cpulist", "0-55"+p)
		}},
		{"gpus[0]: preferred_nic", func(t *testing.T, root, p string) {
			renameNIC(t, root, "mlx5_0"+p)
		}},
	}
	for _, f := range fields {
		for what, p := range hostilePayloads {
			t.Run(f.field+"/"+what, func(t *testing.T) {
				root := hostileRoot(t, func(root string) { f.edit(t, root, p) })
				for _, format := range []string{"env", "gres"} {
					r := gdrcheck(t, "inventory", "--host-root", root, "--format", format)
					// env writes a fragment that fails, for a wrapper
					// that sees only the sourcing's status.
					want := ""
					if format == "env" {
						want = refusedEnv
					}
					if r.code != 2 || !strings.Contains(r.stderr, "--format "+format+": "+f.field) || r.stdout != want {
						t.Errorf("%s: exit %d, want 2 naming %q and no output\nstderr: %s\nstdout: %s", format, r.code, f.field, r.stderr, r.stdout)
					}
					if strings.ContainsAny(r.stderr, "\x1b\r") {
						t.Errorf("%s: stderr carries the recording's ESC or CR: %q", format, r.stderr)
					}
				}
			})
		}
	}
}

// The fragment env writes for a refused inventory holds only writeEnv's
// statements and fails under bash and dash, so a wrapper's
// `. <(gdrcheck inventory --format env) || exit 1` stops.
func TestTheRefusedEnvFragmentFails(t *testing.T) {
	for _, b := range envStatements(refusedEnv) {
		t.Errorf("the refused fragment holds %s", b)
	}
	for _, shell := range []string{"bash", "dash"} {
		if vars, code := sourceEnvIn(t, shell, t.TempDir(), refusedEnv, "SLURM_LOCALID=0"); code == 0 || len(vars) > 0 {
			t.Errorf("%s: exit %d, set %v", shell, code, vars)
		}
	}
}

// A bus id comes from sysfs's directory names, formatted from numbers;
// one NVML recorded that sysfs has not is an incomplete map (exit 2,
// naming it) and never reaches either map.
func TestInventoryMapsLeaveOutAHostileNVMLBusID(t *testing.T) {
	for what, p := range hostilePayloads {
		t.Run(what, func(t *testing.T) {
			root := hostileRoot(t, func(root string) { editNVML(t, root, 0, "bus_id", "0000:18"+p) })
			for _, format := range []string{"env", "gres"} {
				r := gdrcheck(t, "inventory", "--host-root", root, "--format", format)
				if r.code != 2 || !strings.Contains(r.stderr, "NVML lists GPU(s) 00000000:18") || strings.Contains(r.stdout, "touch") {
					t.Errorf("%s: exit %d, want 2 naming the bus id and an output without it\nstderr: %s\nstdout: %s", format, r.code, r.stderr, r.stdout)
				}
				if format == "env" {
					for _, b := range envStatements(r.stdout) {
						t.Errorf("env holds %s", b)
					}
				} else {
					checkGresGrammar(t, r.stdout)
				}
			}
		})
	}
}

// Every fixture node's env output holds only writeEnv's statements, and
// the checker sees what it must refuse.
func TestEnvStatementsCheckerRefusesCode(t *testing.T) {
	archives, _ := filepath.Glob(nodes + "*.ttar")
	for _, a := range archives {
		r := gdrcheck(t, "inventory", "--host-root", a, "--format", "env")
		for _, b := range envStatements(r.stdout) {
			t.Errorf("%s: env holds %s", filepath.Base(a), b)
		}
	}
	for _, code := range []string{
		"touch X\n", "export A=$(touch X)\n", "export GDRCHECK_CPUS=`x`\n", "export GDRCHECK_CPUS=\"$HOME\"\n",
		"f() { :; }\n", "echo x; touch X &\n", "export PATH=/tmp\n", "echo $(touch X)\n", "(echo x)\n",
		"case $x in *) echo;; esac\n", "echo x && touch X\n", "echo x >/tmp/X\n", "_gdrcheck_rank=1 touch X\n",
	} {
		if len(envStatements(code)) == 0 {
			t.Errorf("the checker lets %q through", code)
		}
	}
}

// The inventory's table title and its stderr lines print a recorded host
// name's ESC and newline as escapes.
func TestInventoryTitlePrintsAHostileHostnameAsText(t *testing.T) {
	root := hostileRoot(t, func(root string) {
		writeRecorded(t, root, "proc/sys/kernel/hostname", "evil\x1b]0;pwned\x07\r\n## forged")
	})
	r := gdrcheck(t, "inventory", "--host-root", root)
	if r.code != 0 || strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07\r") || !strings.Contains(r.stdout, `GPU rails on evil\x1b]0;pwned\x07\r\n## forged`+"\n") {
		t.Errorf("exit %d:\n%q\n%q", r.code, r.stdout, r.stderr)
	}
}
