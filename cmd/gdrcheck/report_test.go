package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/reports"
	"github.com/gdrcheck/gdrcheck/results"
)

const h200Results = "../../fixtures/results/h200x2-nv18-collectives-negative.results.json"

// report runs gdrcheck report in-process and maps its error to the exit
// code main would give.
func report(t *testing.T, args ...string) (result, error) {
	t.Helper()
	cmd := newReportCmd()
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	var o, e bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&o)
	cmd.SetErr(&e)
	err := cmd.Execute()
	r := result{stdout: o.String(), stderr: e.String()}
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.code
	default:
		r.code = results.ExitUnevaluable
	}
	return r, err
}

// resultsDir writes res as DIR/results.json, the way gdrcheck run leaves it.
func resultsDir(t *testing.T, res *results.Results) string {
	t.Helper()
	dir := t.TempDir()
	if err := res.Write(filepath.Join(dir, "results.json")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func h200(t *testing.T) *results.Results {
	t.Helper()
	res, err := results.Read(h200Results)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestReportRebuildsEachFormatFromResultsJSON(t *testing.T) {
	t.Parallel()
	res := h200(t)
	dir := resultsDir(t, res)
	var tables, md, junit, junitProps, page bytes.Buffer
	printTables(&tables, res, reports.FormatText)
	printTables(&md, res, reports.FormatMarkdown)
	reports.WriteJUnit(&junit, res, reports.JUnitOptions{})
	reports.WriteJUnit(&junitProps, res, reports.JUnitOptions{TestcaseProperties: true})
	reports.WriteHTML(&page, res)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"text is the tables run prints", []string{dir}, tables.String()},
		{"text by results.json path", []string{h200Results, "--format", "text"}, tables.String()},
		{"markdown", []string{dir, "--format", "markdown"}, md.String()},
		{"html", []string{dir, "--format", "html"}, page.String()},
		{"junit", []string{dir, "--format", "junit"}, junit.String()},
		{"junit with testcase properties", []string{dir, "--format", "junit", "--junit-testcase-properties"}, junitProps.String()},
	} {
		r, err := report(t, c.args...)
		if r.code != 0 {
			t.Errorf("%s: exit %d: %v", c.name, r.code, err)
		}
		if r.stdout != c.want {
			t.Errorf("%s: output differs from the library's:\n%s", c.name, r.stdout)
		}
	}
	for _, want := range []string{"Direct vs forced fallback (all_reduce)", "| p2p-shm-disabled | NET/Socket | 3.17", "Measured vs baseline"} {
		if !strings.Contains(tables.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, tables.String())
		}
	}
	if !strings.Contains(md.String(), "### Summary") || !strings.Contains(page.String(), `<g class="bar" data-mode="p2p-disabled">`) {
		t.Error("markdown or HTML is not the expected view")
	}
	if junit.String() == junitProps.String() {
		t.Error("--junit-testcase-properties changes nothing")
	}
	out := filepath.Join(t.TempDir(), "junit.xml")
	if r, err := report(t, dir, "--format", "junit", "--out", out); r.code != 0 {
		t.Fatalf("exit %d: %v", r.code, err)
	}
	validateJUnit(t, out)
}

// failing is results with one failed spec.
func failing() *results.Results {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &results.Results{Schema: results.Schema, Started: t0, Finished: t0.Add(time.Second), Nodes: []results.Node{{
		Name: "gpu01", Status: results.NodeEvaluated, Started: t0, Finished: t0,
		Suites: []results.Suite{{Name: "topology", Specs: []results.Spec{
			{Name: "gives every GPU an RDMA NIC within the GPUDirect path limit", State: results.StateFailed, Message: "GPU 4 0000:98:00.0 -> mlx5_4 is SYS; GDR expected at PIX/PXB"},
			{Name: "runs every link at full width", State: results.StatePassed},
		}}},
	}}}
}

func TestReportExitCodeIsTheResultsVerdict(t *testing.T) {
	t.Parallel()
	unevaluable := failing()
	unevaluable.Nodes = append(unevaluable.Nodes, results.Node{Name: "gpu02", Status: results.NodeMissing, Reason: "node never reported"})
	for _, c := range []struct {
		name string
		res  *results.Results
		code int
		want string
	}{
		{"passed", h200(t), 0, "collectives"},
		{"a failed spec", failing(), 1, "GPU 4 0000:98:00.0 -> mlx5_4 is SYS; GDR expected at PIX/PXB"},
		{"a node that never reported", unevaluable, 2, "node never reported"},
	} {
		dir := resultsDir(t, c.res)
		for _, format := range []string{"text", "markdown", "html", "junit"} {
			r, err := report(t, dir, "--format", format)
			if r.code != c.code {
				t.Errorf("%s, %s: exit %d, want %d (%v)", c.name, format, r.code, c.code, err)
			}
			if !strings.Contains(r.stdout, c.want) && !strings.Contains(r.stdout, strings.ReplaceAll(c.want, ">", "&gt;")) {
				t.Errorf("%s, %s: the report is not written in full; it lacks %q", c.name, format, c.want)
			}
			var ee *exitError
			if c.code != 0 && (!errors.As(err, &ee) || ee.err != nil) {
				t.Errorf("%s, %s: a recorded failure should exit quietly, got %v", c.name, format, err)
			}
		}
	}
}

func TestReportExitsTwoNamingTheFileItCouldNotRead(t *testing.T) {
	t.Parallel()
	missing := t.TempDir()
	garbled := filepath.Join(t.TempDir(), "results.json")
	os.WriteFile(garbled, []byte(`{"schema": "gdrcheck.results/v1", "nodes": [`), 0o644)
	other := filepath.Join(t.TempDir(), "results.json")
	os.WriteFile(other, []byte(`{"schema": "someone-else/v9"}`), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no results.json in DIR", []string{missing}, filepath.Join(missing, "results.json") + `": no such file`},
		{"no such path", []string{filepath.Join(missing, "nope.json")}, filepath.Join(missing, "nope.json")},
		{"not JSON", []string{garbled, "--format", "html"}, garbled},
		{"another schema", []string{filepath.Dir(other)}, `schema "someone-else/v9"`},
		{"unknown format", []string{h200Results, "--format", "pdf"}, `--format "pdf"`},
		{"no argument", nil, "accepts 1 arg"},
	} {
		out := filepath.Join(t.TempDir(), "report")
		r, err := report(t, append(c.args, "--out", out)...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2", c.name, r.code)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to name %q", c.name, err, c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: --out was written", c.name)
		}
	}
}

func TestReportOutReplacesTheFileAtomically(t *testing.T) {
	t.Parallel()
	dir := resultsDir(t, failing())
	outDir := t.TempDir()
	out := filepath.Join(outDir, "report.html")
	if err := os.WriteFile(out, []byte("an older report"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ := report(t, dir, "--format", "html", "--out", out)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 for the failed spec", r.code)
	}
	if r.stdout != "" {
		t.Errorf("--out also wrote to stdout:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, out) {
		t.Errorf("stderr does not say where the report went: %q", r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(b), "<!DOCTYPE html>") || !strings.HasSuffix(string(b), "</html>\n") {
		t.Fatalf("report.html is not the whole page: %v\n%.200s", err, b)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(outDir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("temporary files left beside the report: %v", names)
	}
	// A directory that does not exist: nothing is written, exit 2.
	r, err = report(t, dir, "--out", filepath.Join(outDir, "no", "such", "dir", "report.txt"))
	if r.code != 2 || err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("unwritable --out: exit %d, %v; want 2 naming --out", r.code, err)
	}
}
