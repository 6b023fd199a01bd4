package inventory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// Recordings whose strings try to break out of the sh and gres.conf
// maps. Each payload would create the file X in the sourcing shell's
// directory if any of it ran.
var hostilePayloads = map[string]string{
	"newline":     "\ntouch X",
	"cmd subst":   "$(touch X)",
	"backticks":   "`touch X`",
	"quotes":      `';touch X;'";touch X;"`,
	"semicolon":   ";touch X",
	"all of them": "\n$(touch X)`touch X`';touch X;'\";touch X;\"\r\x1b]0;pwned\x07",
}

const hostileBase = "h100x8-nvswitch-cx7-pix"

func writeRecorded(t *testing.T, root, rel, v string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, rel), []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// (a) A GPU name is free text: whatever it holds, the env fragment that
// carries it (in a comment) runs nothing under bash or dash and holds
// only the statements WriteEnv means; gres has only lines it built.
func TestMapsKeepAHostileGPUNameAsText(t *testing.T) {
	for what, p := range hostilePayloads {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			inv, ev := recorded(t, hostileBase, func(root string) {
				nodetest.EditNVMLGPU(t, root, 1, func(g map[string]any) { g["name"] = "NVIDIA H100" + p })
			})
			e, err := env(t, inv)
			if err != nil {
				t.Fatalf("env: %v", err)
			}
			for _, b := range envStatements(e) {
				t.Errorf("env holds %s\n%s", b, e)
			}
			if strings.ContainsAny(e, "\x1b\r") {
				t.Errorf("env carries a raw ESC or CR:\n%q", e)
			}
			for _, shell := range []string{"bash", "dash"} {
				dir := t.TempDir()
				for _, rank := range []string{"0", "1", "7", "8", ""} {
					vars, code, _ := sourceEnv(t, shell, dir, e, true, "SLURM_LOCALID="+rank)
					if want := rank != "8" && rank != ""; (code == 0) != want {
						t.Errorf("%s, rank %q: exit %d", shell, rank, code)
					}
					if rank == "1" && (vars["NCCL_IB_HCA"] != "=mlx5_1:1" || vars["GDRCHECK_GPU_BUS_ID"] != "0000:19:00.0") {
						t.Errorf("%s, rank 1: %v", shell, vars)
					}
				}
				if _, err := os.Stat(filepath.Join(dir, "X")); err == nil {
					t.Errorf("%s: sourcing the env output ran a command from the GPU name:\n%s", shell, e)
				}
			}
			g, err := gres(t, inv, ev)
			if err != nil {
				t.Fatalf("gres: %v", err)
			}
			if n := checkGresGrammar(t, g); n != 8 {
				t.Errorf("%d gres lines for 8 GPUs:\n%s", n, g)
			}
		})
	}
}

// hostileFields are the identifiers a map carries as words, each with
// the edit that plants a payload in it.
var hostileFields = []struct {
	field string // as the error names it
	edit  func(t *testing.T, root, p string)
}{
	{"node (proc/sys/kernel/hostname): not a node name", func(t *testing.T, root, p string) { writeRecorded(t, root, "proc/sys/kernel/hostname", "h100-node"+p) }},
	{"gpus[0]: uuid", func(t *testing.T, root, p string) {
		nodetest.EditNVMLGPU(t, root, 0, func(g map[string]any) { g["uuid"] = "GPU-6a1c0f3e-0000-4000-8000-000000000000" + p })
	}},
	{"gpus[0]: cpu_list (local_cpulist)", func(t *testing.T, root, p string) {
		writeRecorded(t, root, "sys/bus/pci/devices/0000:18:00.0/local_cpulist", "0-55"+p)
	}},
	{"gpus[0]: preferred_nic", func(t *testing.T, root, p string) { nodetest.RenameNIC(t, root, "mlx5_0", "mlx5_0"+p) }},
}

// (b) An identifier that is not of its source's form is refused by env
// and gres alike: ErrRefused, the field named, no map written (env writes
// a fragment that fails).
func TestMapsRefuseAHostileIdentifier(t *testing.T) {
	for _, f := range hostileFields {
		for what, p := range hostilePayloads {
			t.Run(f.field+"/"+what, func(t *testing.T) {
				t.Parallel()
				inv, ev := recorded(t, hostileBase, func(root string) { f.edit(t, root, p) })
				g, gerr := gres(t, inv, ev)
				e, eerr := env(t, inv)
				for format, r := range map[string]struct {
					out, want string
					err       error
				}{"gres": {g, "", gerr}, "env": {e, RefusedEnv, eerr}} {
					if !errors.Is(r.err, ErrRefused) || !strings.HasPrefix(r.err.Error(), f.field) || r.out != r.want {
						t.Errorf("%s: %v, want ErrRefused naming %q\noutput: %s", format, r.err, f.field, r.out)
					}
				}
			})
		}
	}
}

// The fragment env writes for a refused inventory holds only WriteEnv's
// statements and fails under bash and dash, so a wrapper's
// `. <(gdrcheck inventory --format env) || exit 1` stops.
func TestTheRefusedEnvFragmentFails(t *testing.T) {
	for _, b := range envStatements(RefusedEnv) {
		t.Errorf("the refused fragment holds %s", b)
	}
	for _, shell := range []string{"bash", "dash"} {
		if vars, code, _ := sourceEnv(t, shell, t.TempDir(), RefusedEnv, true, "SLURM_LOCALID=0"); code == 0 || len(vars) > 0 {
			t.Errorf("%s: exit %d, set %v", shell, code, vars)
		}
	}
}

// A bus id comes from sysfs's directory names, formatted from numbers;
// one NVML recorded that sysfs has not is an incomplete map (naming it)
// and never reaches either map.
func TestMapsLeaveOutAHostileNVMLBusID(t *testing.T) {
	for what, p := range hostilePayloads {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			plant := func(root string) {
				nodetest.EditNVMLGPU(t, root, 0, func(g map[string]any) { g["bus_id"] = "0000:18" + p })
			}
			inv, ev := recorded(t, hostileBase, plant)
			if err := ev.MapError(); err == nil || !strings.Contains(err.Error(), "NVML lists GPU(s) 00000000:18") {
				t.Errorf("map error %v, want one naming the bus id", err)
			}
			e, _ := env(t, inv)
			g, _ := gres(t, inv, ev)
			if strings.Contains(e+g, "touch") {
				t.Errorf("the payload reached a map:\n%s\n%s", e, g)
			}
			for _, b := range envStatements(e) {
				t.Errorf("env holds %s", b)
			}
			checkGresGrammar(t, g)
		})
	}
}

// The checker sees what it must refuse.
func TestEnvStatementsCheckerRefusesCode(t *testing.T) {
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
