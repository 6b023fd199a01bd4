package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The README doc test: every command in the README's ```sh blocks runs
// here, in order, in one scratch directory (a shell session's), with
// bin/gdrcheck and gdrcheck the binary under test and "this node" the
// recorded 8 x H100 node. Each must exit as its comment says ("exit 1"),
// else 0. A command that cannot run here is skipped only when readmeSkip
// names it, with the reason; any other command fails the test, so a new
// line in the README is either run or explained.

const readme = "../../README.md"

// readmeSkip is every README command this test does not run, and why.
var readmeSkip = map[string]string{
	"make build":                          "TestMain builds the same binary from the same source",
	"make run":                            "needs root and the local Slurm cluster; slurm/localcluster's tests and unchanged_test.go run make-run.sh's job",
	"make test":                           "this test is part of it",
	"make build-all":                      "cross-compiles for arm64 (arm64_test.go covers it)",
	"make bench":                          "benchmarks: minutes, no verdict",
	"make fuzz":                           "fuzzing: FUZZTIME per target",
	"make report-screenshot":              "installs and runs Chromium",
	". /tmp/gdrcheck-slurm/env.sh; sinfo": "needs the cluster make run starts",
	"slurm/localcluster/cluster.sh stop":  "stops the cluster make run starts",
	"gdrcheck run":                        "the default suites run nccl-tests, which this machine lacks (nccl_test.go replays them on the fixtures)",
	"gdrcheck run --suites mpi":           "judges the live host's Open MPI and UCX; the recorded node has none (mpi_test.go replays recorded MPI builds)",
	`gdrcheck run --nccl-tests-dir /opt/nccl-tests/build --nccl-launcher "mpirun --allow-run-as-root -np {gpus}"`: "needs nccl-tests and mpirun",
	"gdrcheck snapshot --out node42.ttar":                                            "records the live host, and here \"this node\" is a recording already (snapshot_test.go records)",
	"gdrcheck run --host-root node42.ttar":                                           "the default suites on the recording of this GPU-less machine: nccl-tests again",
	"gdrcheck run --prom-textfile /var/lib/node_exporter/textfile/gdrcheck.prom":     "writes into the system's node_exporter directory (prom_test.go writes textfiles)",
	"gdrcheck submit -N 4 -p gpu --wait":                                             "needs a Slurm cluster with a gpu partition",
	"gdrcheck submit -N 16 -p gpu -t 30 --drain-on-fail --wait":                      "needs a Slurm cluster with a gpu partition",
	"gdrcheck submit -N 4 --container-image nvcr.io#nvidia/pytorch:24.10-py3 --wait": "needs a Slurm cluster with pyxis",
	"gdrcheck collect gdrcheck-jobs/job-4711":                                        "needs a killed job's directory (collect tests build them)",
	"gdrcheck undrain": "needs the Slurm cluster that drained the nodes",
	`gdrcheck run --suites scaling --emulate-nodes 4 --nccl-tests-dir /opt/nccl-tests/build --scaling-args "-b 8 -e 256M -f 2"`: "needs mpirun and nccl-tests built with MPI=1",
}

type docCommand struct {
	line int
	cmd  string
	exit int
}

// exitNote is a comment's "exit N" (not "exit 0, 1 or 2").
var exitNote = regexp.MustCompile(`\bexit ([0-2])\b(?:[^,/]|$)`)

// readmeCommands reads the commands of path's ```sh blocks: a trailing
// backslash continues a line, and the comment after " #" is not part of
// the command.
func readmeCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	in, pending, start := false, "", 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in && (line == "```sh" || line == "```console"):
			in = true
			continue
		case in && line == "```":
			in = false
			continue
		case !in || strings.TrimSpace(line) == "":
			continue
		}
		if pending == "" {
			start = n
		}
		line = strings.TrimPrefix(line, "$ ")
		if c, ok := strings.CutSuffix(line, `\`); ok {
			pending += strings.TrimSpace(c) + " "
			continue
		}
		cmd, comment := splitComment(pending + strings.TrimSpace(line))
		pending = ""
		dc := docCommand{line: start, cmd: cmd}
		if m := exitNote.FindStringSubmatch(comment); m != nil {
			dc.exit, _ = strconv.Atoi(m[1])
		}
		out = append(out, dc)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitComment cuts a shell line at its first " #" outside quotes.
func splitComment(s string) (cmd, comment string) {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#' && i > 0 && s[i-1] == ' ':
			return strings.TrimSpace(s[:i]), s[i+1:]
		}
	}
	return strings.TrimSpace(s), ""
}

func TestReadmeCommandsRunAsDocumented(t *testing.T) {
	t.Parallel()
	cmds := readmeCommands(t, readme)
	if len(cmds) < 20 {
		t.Fatalf("found %d commands in the README's sh blocks; the parser lost them", len(cmds))
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "fixtures"), filepath.Join(work, "fixtures")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "gdrcheck")); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	ran := 0
	for _, c := range cmds {
		if why, ok := readmeSkip[c.cmd]; ok {
			used[c.cmd] = true
			t.Logf("README:%d skipped: %s: %s", c.line, c.cmd, why)
			continue
		}
		if !strings.HasPrefix(c.cmd, "gdrcheck ") && !strings.HasPrefix(c.cmd, "bin/gdrcheck ") {
			t.Errorf("README:%d: %q is neither a gdrcheck command nor in readmeSkip: run it here or say there why not", c.line, c.cmd)
			continue
		}
		sh := exec.Command("bash", "-c", "set -o pipefail; "+c.cmd)
		sh.Dir = work
		sh.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"), "SLURMD_NODENAME=",
			"GDRCHECK_HOST_ROOT="+filepath.Join(repo, "fixtures/nodes/h100x8-nvswitch-cx7-pix.ttar"))
		out, err := sh.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("README:%d: running %q: %v", c.line, c.cmd, err)
		}
		ran++
		if strings.Contains(string(out), "panic:") {
			t.Errorf("README:%d: %s panicked:\n%s", c.line, c.cmd, out)
		}
		if code != c.exit {
			t.Errorf("README:%d: %s exited %d, the README says %d; output:\n%s", c.line, c.cmd, code, c.exit, tail(string(out), 40))
		}
	}
	for k := range readmeSkip {
		if !used[k] {
			t.Errorf("readmeSkip names %q, which the README no longer has", k)
		}
	}
	t.Logf("ran %d of %d README commands", ran, len(cmds))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// The parser itself: continuation, comments, quotes and exit notes.
func TestReadmeParserReadsCommandsAndExitNotes(t *testing.T) {
	t.Parallel()
	md := filepath.Join(t.TempDir(), "r.md")
	os.WriteFile(md, []byte("text `not this`\n\n```sh\nbin/gdrcheck run --x \\\n    --y   # exit 1: a failure\ngdrcheck a \"b # c\"  # exit 0, 1 or 2\n```\n\n    indented is not run\n```go\nnot sh\n```\n"), 0o644)
	got := readmeCommands(t, md)
	want := []docCommand{{line: 4, cmd: "bin/gdrcheck run --x --y", exit: 1}, {line: 6, cmd: `gdrcheck a "b # c"`, exit: 0}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("command %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
