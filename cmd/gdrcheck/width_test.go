package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/results"
)

// overWidth returns the lines of out wider than width, numbered.
func overWidth(out string, width int) []string {
	var over []string
	for i, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > width && !aPathOverflows(l, width) {
			over = append(over, fmt.Sprintf("line %d (%d columns): %s", i+1, utf8.RuneCountInString(l), l))
		}
	}
	return over
}

// aPathOverflows says the line fits but for one path in it (JUnit:,
// Results:, a host root): a path is printed whole, to be copied.
func aPathOverflows(l string, width int) bool {
	rest := utf8.RuneCountInString(l)
	for _, f := range strings.Fields(l) {
		if strings.Contains(f, "/") {
			rest -= utf8.RuneCountInString(f)
		}
	}
	return rest <= width && rest < utf8.RuneCountInString(l)
}

// checkWidth fails a view that has a line over width.
func checkWidth(t *testing.T, view, out string, width int) {
	t.Helper()
	if over := overWidth(out, width); len(over) > 0 {
		t.Errorf("%s at %d columns: %d lines over:\n%s", view, width, len(over), strings.Join(over[:min(len(over), 5)], "\n"))
	}
}

// widths are the terminals every console view must fit: the default (no
// COLUMNS) and a narrow one.
var widths = []struct {
	columns string
	width   int
}{{"", 120}, {"80", 80}}

func columnsEnv(columns string) []string {
	env := append(os.Environ(), "SLURMD_NODENAME=")
	if columns == "" {
		return append(env, "COLUMNS=")
	}
	return append(env, "COLUMNS="+columns)
}

// Every console view of a job of 4, 100 and 1,024 nodes with failing nodes
// planted among them fits the terminal: collect, report, report --node
// and compare.
func TestEveryConsoleViewOfAJobFitsTheTerminal(t *testing.T) {
	t.Parallel()
	for _, n := range []int{4, 100, 1024} {
		bad := []int{2}
		if n > 4 {
			bad = planted(n)
		}
		dir := jobOf(t, n, bad...)
		for _, w := range widths {
			env := columnsEnv(w.columns)
			views := map[string][]string{
				"collect":       {"collect", dir},
				"report":        {"report", dir},
				"report --node": {"report", dir, "--node", nodeName(bad[0])},
				"compare":       {"compare", dir, dir},
			}
			for _, view := range []string{"collect", "report", "report --node", "compare"} {
				r := gdrcheckEnv(t, env, views[view]...)
				if r.code == 2 {
					t.Fatalf("%d nodes: %s: exit 2\n%s", n, view, r.stderr)
				}
				checkWidth(t, fmt.Sprintf("%d nodes: %s", n, view), r.stdout, w.width)
			}
		}
	}
}

// Every fixture node's run, inventory, health and prolog print lines
// that fit the terminal.
func TestEveryFixtureNodesConsoleFitsTheTerminal(t *testing.T) {
	t.Parallel()
	ttars, _ := filepath.Glob(nodes + "*.ttar")
	for _, f := range ttars {
		name := strings.TrimSuffix(filepath.Base(f), ".ttar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, w := range widths {
				r := gdrcheckEnv(t, columnsEnv(w.columns), "run", "-q", "--host-root", f, "--out", t.TempDir(), "--suites", "topology,kernel,bar1,container")
				checkWidth(t, name+": run", r.stdout, w.width)
				r = gdrcheckEnv(t, columnsEnv(w.columns), "inventory", "--host-root", f)
				checkWidth(t, name+": inventory", r.stdout, w.width)
				// The health loop's hooks, as a person runs them by hand.
				state := t.TempDir()
				r = gdrcheckEnv(t, columnsEnv(w.columns), "health", "--host-root", f, "--slurm", "off", "--state-dir", state)
				checkWidth(t, name+": health", r.stdout+r.stderr, w.width)
				r = gdrcheckEnv(t, columnsEnv(w.columns), "prolog", "--host-root", f, "--state-dir", state, "--gpus", "0", "--deep", "never")
				// The drain reason is printed as Slurm will show it, whole
				// (at most 120 bytes, so within the default width).
				checkWidth(t, name+": prolog", withoutDrainReason(r.stdout+r.stderr), w.width)
			}
		})
	}
}

// submit --wait's list of the nodes that failed (their drain reasons, up
// to Slurm's length) fits the terminal too: make run-scale printed it 129
// columns wide, past the width tests of collect, report and compare.
func TestTheFailedNodesListOfSubmitFitsTheTerminal(t *testing.T) {
	res := &results.Results{Schema: results.Schema}
	for i := 1; i <= 60; i++ {
		res.Nodes = append(res.Nodes, results.Node{Name: nodeName(i), Status: results.NodeMissing, Action: results.ActionRerun,
			Reason: "never reported: step 7 was killed by signal 9 after its watchdog of 30m0s; slurmstepd said: error: *** STEP CANCELLED AT 2026-12-04T03:11:18 DUE TO TIME LIMIT ***"})
	}
	for _, w := range widths {
		t.Setenv("COLUMNS", w.columns)
		var out strings.Builder
		printBlamed(&out, res, true)
		checkWidth(t, "submit's failed nodes", out.String(), w.width)
		for _, want := range []string{"gpu00001: missing: never reported", "... and 10 more"} {
			if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
				t.Errorf("at %d columns the list lacks %q:\n%s", w.width, want, out.String())
			}
		}
	}
}

// withoutDrainReason drops the lines that are a drain reason of gdrcheck's
// ("gdrcheck: <check>: <cause> action=<ACTION>", at most 120 bytes).
func withoutDrainReason(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "gdrcheck: ") || len(l) > 120 || !strings.Contains(l, " action=") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
