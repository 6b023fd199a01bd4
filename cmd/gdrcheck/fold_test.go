package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A 64-node job with three planted nodes whose peer memory is missing:
// collect folds the 61 healthy ones, names the three by their cause
// first, keeps each of their failed specs as its own JUnit case named as
// in a small job, rolls the passes up, and exits 1.
func TestCollect64NodesFoldsAndNamesTheFailingNodes(t *testing.T) {
	t.Parallel()
	dir := jobOf(t, 64, planted(64)...) // gpu00007, gpu00026, gpu00046
	r := gdrcheck(t, "collect", dir)
	if r.code != 1 {
		t.Fatalf("collect: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	first := strings.SplitN(r.stdout, "Nodes, alike ones together", 2)[0]
	for _, want := range []string{"FAIL (exit 1): 64 nodes, 3 failing", "Failing nodes by cause", "kernel: no GPUDirect peer-memory mechanism works", "gpu[00007,00026,00046]"} {
		if !strings.Contains(first, want) {
			t.Errorf("the console's first table lacks %q:\n%s", want, first)
		}
	}
	if n := strings.Count(r.stdout, "\n"); n > 60 {
		t.Errorf("the console printed %d lines for 64 nodes; the healthy ones should be one line", n)
	}
	if !strings.Contains(r.stdout, "| 61    | gpu[00001-00006,00008-00025,00027-00045,00047-00064]") {
		t.Errorf("no one line for the 61 healthy nodes:\n%s", r.stdout)
	}

	junit := filepath.Join(dir, "junit.xml")
	validateJUnit(t, junit)
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name      string    `xml:"name,attr"`
				Classname string    `xml:"classname,attr"`
				Failure   *struct{} `xml:"failure"`
				Skipped   *struct{} `xml:"skipped"`
				Out       string    `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	failing := map[string]int{}
	rolled := 0
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil:
				failing[c.Classname]++
			case strings.HasPrefix(c.Classname, "gdrcheck.all-nodes."):
				rolled++
				if c.Classname == "gdrcheck.all-nodes.kernel" && c.Name == "has a working GPUDirect peer-memory mechanism" &&
					!strings.Contains(c.Out, "passed on 61 of 64 nodes") {
					t.Errorf("roll-up of the failed spec says %q", c.Out)
				}
			}
		}
	}
	for _, node := range []string{"gpu00007", "gpu00026", "gpu00046"} {
		if failing["gdrcheck."+node+".kernel"] == 0 {
			t.Errorf("no failed case gdrcheck.%s.kernel; failed cases: %v", node, failing)
		}
	}
	if len(failing) != 3 || doc.Failures != 6 || rolled < 25 || doc.Tests > 60 {
		t.Errorf("%d tests, %d failures over %v, %d rolled up: want the 3 nodes' 2 failures each and one case per spec", doc.Tests, doc.Failures, failing, rolled)
	}

	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	attention := strings.Index(html, "Failing, unevaluable and missing nodes, by cause")
	firstNode := strings.Index(html, `<section class="card node"`)
	if attention < 0 || firstNode < 0 || attention > firstNode || !strings.Contains(html[attention:firstNode], "gpu00007, gpu00026, gpu00046") {
		t.Errorf("the page does not name the three nodes before any node section")
	}
	if got := strings.Count(html, `<section class="card node"`); got != 2 {
		t.Errorf("%d node sections, want 2 (the healthy group and the failing one)", got)
	}
	if !strings.Contains(html, `<a class="bad" href="#node-1">gpu00026 <span class="mark">FAIL</span></a>`) {
		t.Error("the node index does not mark gpu00026 failing")
	}

	// One node in full, one command away.
	one := gdrcheck(t, "report", dir, "--node", "gpu00026")
	if one.code != 1 || !strings.Contains(one.stdout, "Summary") || !strings.Contains(one.stdout, "gpu00026") || strings.Contains(one.stdout, "gpu00025") {
		t.Errorf("report --node gpu00026: exit %d\n%s%s", one.code, one.stdout, one.stderr)
	}
	if miss := gdrcheck(t, "report", dir, "--node", "gpu99999"); miss.code != 2 || !strings.Contains(miss.stderr, `no such node`) {
		t.Errorf("report --node of an unknown node: exit %d %s", miss.code, miss.stderr)
	}
}
