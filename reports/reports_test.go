package reports

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func f(v float64) *float64 { return &v }

// sample is a two-node run with every kind of case the writer handles.
func sample() *results.Results {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &results.Results{
		Schema: results.Schema, Started: t0, Finished: t0.Add(1234567 * time.Microsecond),
		Nodes: []results.Node{
			{
				Name: "gpu01.cluster.example", Status: results.NodeEvaluated, Started: t0, Finished: t0.Add(time.Second),
				Facts: []results.Fact{{Name: "gpu_model", Value: "8 x NVIDIA H100 80GB HBM3"}, {Name: "driver", Value: "580.95.05"}},
				Suites: []results.Suite{{Name: "topology", Specs: []results.Spec{
					{Name: "runs every GPU and NIC link at its maximum width and speed", State: results.StatePassed, Duration: 0.0004,
						Output:  "noise that must not reach Jenkins for a passing case",
						Metrics: []results.Metric{{Name: "busbw", Value: 341.41, Unit: "GB/s", Baseline: f(338), DeltaPct: f(1.0089), Verdict: "pass", Subject: "GPU0<->GPU1"}}},
					{Name: "has no ACS redirect on the path between a GPU and its NIC", State: results.StateFailed, Duration: 0.0123456,
						Message:  "GPU 2 0000:38:00.0 -> mlx5_2: bridge 0000:37:00.0 has ACS ReqRedir+ CmpltRedir+; expected no P2P redirect\nsecond line",
						Location: "suites/topology/topology.go:99", Output: "diagnostics ]]> with a CDATA end inside",
						Action: results.ActionFixConfig, Scope: results.ScopeNode, Entity: "gpu01.cluster.example"},
					{Name: "matches the expected inventory", State: results.StateSkipped, Message: "no expected inventory given (--expect)"},
				}}},
			},
			{Name: "gpu02", Status: results.NodeUnevaluable, Reason: "NVML: initialising: ERROR_DRIVER_NOT_LOADED\nmore", Started: t0, Finished: t0},
			{Name: "gpu02", Status: results.NodeMissing, Reason: "node never reported: step 3 killed by signal 9"},
		},
	}
}

func TestJUnitMatchesGoldenAndValidatesAgainstTheXUnitSchema(t *testing.T) {
	for _, c := range []struct {
		golden string
		opt    JUnitOptions
	}{
		{"testdata/junit.golden.xml", JUnitOptions{}},
		{"testdata/junit-testcase-properties.golden.xml", JUnitOptions{TestcaseProperties: true}},
	} {
		var buf bytes.Buffer
		if err := WriteJUnit(&buf, sample(), c.opt); err != nil {
			t.Fatal(err)
		}
		if *update {
			os.WriteFile(c.golden, buf.Bytes(), 0o644)
		}
		want, err := os.ReadFile(c.golden)
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != string(want) {
			t.Errorf("%s differs (go test ./reports -update rewrites it):\n%s", c.golden, buf.String())
		}
		if c.opt.TestcaseProperties {
			continue // testcase <properties> are outside junit-10.xsd by design
		}
		path := filepath.Join(t.TempDir(), "junit.xml")
		os.WriteFile(path, buf.Bytes(), 0o644)
		out, err := exec.Command("xmllint", "--noout", "--schema", "testdata/junit-10.xsd", path).CombinedOutput()
		if err != nil {
			t.Errorf("JUnit fails junit-10.xsd: %v\n%s", err, out)
		}
	}
}

func TestJUnitKeepsJenkinsConventions(t *testing.T) {
	var buf bytes.Buffer
	WriteJUnit(&buf, sample(), JUnitOptions{})
	x := buf.String()
	for _, want := range []string{
		`classname="gdrcheck.gpu01_cluster_example.topology"`, // dots in node names replaced
		`<testsuite name="gdrcheck.gpu02#2"`,                  // unique suite names
		`time="0.012"`,                                        // three decimals at most
		`<skipped message="no expected inventory given (--expect)">`,
		`<testcase name="node evidence" classname="gdrcheck.gpu02.node"`,
		`<testcase name="node reported" classname="gdrcheck.gpu02.node"`,
		`busbw [GPU0<->GPU1]: 341.41 GB/s, baseline 338, delta +1.0%, pass`,
	} {
		if !strings.Contains(x, want) {
			t.Errorf("JUnit lacks %s", want)
		}
	}
	for _, bad := range []string{"[It]", "noise that must not reach Jenkins", `status=`, `disabled=`, "0.0123456"} {
		if strings.Contains(x, bad) {
			t.Errorf("JUnit contains %q", bad)
		}
	}
}

func TestExitCodeSeparatesFailedFromUnevaluable(t *testing.T) {
	r := sample()
	if got := r.ExitCode(); got != results.ExitUnevaluable {
		t.Errorf("with an unevaluable node: %d, want 2", got)
	}
	r.Nodes = r.Nodes[:1]
	if got := r.ExitCode(); got != results.ExitFailed {
		t.Errorf("with a failed spec: %d, want 1", got)
	}
	r.Nodes[0].Suites[0].Specs = r.Nodes[0].Suites[0].Specs[2:]
	if got := r.ExitCode(); got != results.ExitPassed {
		t.Errorf("with only a skipped spec: %d, want 0", got)
	}
}

func TestWriteFileReplacesAtomicallyAndLeavesNoTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if err := results.WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	ents, _ := os.ReadDir(dir)
	if string(b) != "new" || len(ents) != 1 {
		t.Errorf("content %q, %d entries in the directory", b, len(ents))
	}
	if err := results.WriteFile(filepath.Join(dir, "missing", "x"), nil); err == nil || !strings.Contains(err.Error(), "missing/x") {
		t.Errorf("error %v does not name the file", err)
	}
}

func TestResultsRoundTripAndRejectOtherSchemas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	if err := sample().Write(path); err != nil {
		t.Fatal(err)
	}
	r, err := results.Read(path)
	if err != nil || len(r.Nodes) != 3 || r.Nodes[0].Fact("driver") != "580.95.05" {
		t.Fatalf("read back %+v, %v", r, err)
	}
	os.WriteFile(path, []byte(`{"schema":"other"}`), 0o644)
	if _, err := results.Read(path); err == nil || !strings.Contains(err.Error(), `schema "other"`) {
		t.Errorf("other schema: %v", err)
	}
}

func TestTablesRenderTextAndMarkdown(t *testing.T) {
	var text, md bytes.Buffer
	FailuresTable(sample()).Render(&text, FormatText)
	FailuresTable(sample()).Render(&md, FormatMarkdown)
	if !strings.Contains(text.String(), "| gpu01.cluster.example | topology | has no ACS redirect") {
		t.Errorf("text table:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "### Failures") || !strings.Contains(md.String(), "|---") && !strings.Contains(md.String(), "|:-") {
		t.Errorf("markdown table:\n%s", md.String())
	}
	if err := SummaryTable(sample()).Render(&text, "html"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestContainerTableSetsHostAndContainerSideBySide(t *testing.T) {
	spec := func(name, state, cause string) results.Spec {
		s := results.Spec{Name: name, State: state}
		if cause != "" {
			s.Message, s.Notes = "failed", []string{"runtime: enroot", "cause: " + cause}
		}
		return s
	}
	r := &results.Results{Schema: results.Schema, Nodes: []results.Node{
		{Name: "gpu07", Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "container", Specs: []results.Spec{
			spec("opens the device node of every GPU", results.StatePassed, ""), spec("may lock the memory RDMA registration pins", results.StatePassed, "")}}}},
		{Name: "gpu07" + results.ContainerSuffix, Status: results.NodeEvaluated, Suites: []results.Suite{{Name: "container", Specs: []results.Spec{
			spec("opens the device node of every GPU", results.StateFailed, "device not exposed"), spec("may lock the memory RDMA registration pins", results.StateFailed, "memlock")}}}},
	}}
	tb := ContainerTable(r)
	want := [][]string{
		{"gpu07", "opens the device node of every GPU", "passed", "failed", "device not exposed"},
		{"gpu07", "may lock the memory RDMA registration pins", "passed", "failed", "memlock"},
	}
	if len(tb.Rows) != 2 || strings.Join(tb.Rows[0], "|") != strings.Join(want[0], "|") || strings.Join(tb.Rows[1], "|") != strings.Join(want[1], "|") {
		t.Errorf("rows %q", tb.Rows)
	}
}
