package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// A merged job of 12 nodes, three failing: its results.json holds the
// three in full and refers to the other nine's own files; report, report
// --node, compare and baseline record read it, and say the same of it as
// of the same job in the previous release's form (every node in full,
// schema v1), which still reads.
func TestAMergedJobRefersToItsHealthyNodesAndReadsAsTheOldForm(t *testing.T) {
	dir := jobOf(t, 12, 2, 5, 9)
	if r := gdrcheck(t, "collect", dir); r.code != 1 {
		t.Fatalf("collect: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	merged := filepath.Join(dir, "results.json")
	b, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"schema": "`+results.Schema+`"`)) {
		t.Errorf("the merged file is not of schema %s", results.Schema)
	}
	if refs := bytes.Count(b, []byte(`"ref":"nodes/`)); refs != 9 {
		t.Errorf("%d refs, want one per healthy node (9)", refs)
	}
	if ev := bytes.Count(b, []byte(`"evidence":`)); ev != 3 {
		t.Errorf("%d nodes with evidence, want the 3 failing ones in full", ev)
	}
	var nodeBytes int64
	for i := 1; i <= 12; i++ {
		fi, err := os.Stat(filepath.Join(dir, "nodes", nodeName(i), "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		nodeBytes += fi.Size()
	}
	if int64(len(b)) > nodeBytes/2 {
		t.Errorf("the merged file is %d bytes, the nodes' %d: it copies them", len(b), nodeBytes)
	}

	old := oldForm(t, dir)
	same := func(what string, args ...string) { t.Helper(); sameOfBoth(t, dir, old, what, args...) }
	same("report", "report", "JOB")
	same("report --format junit", "report", "JOB", "--format", "junit")
	same("report --node (healthy)", "report", "JOB", "--node", nodeName(4))
	same("report --node (failing)", "report", "JOB", "--node", nodeName(5))
	same("baseline record (a failing job)", "baseline", "record", "JOB", "--name", "p")

	// compare reads either form on either side: the same job is no
	// regression, and the verdicts read alike.
	r1 := gdrcheck(t, "compare", old, dir, "--format", "markdown")
	r2 := gdrcheck(t, "compare", dir, dir, "--format", "markdown")
	if r1.code != 0 || r2.code != 0 {
		t.Fatalf("compare of a job with itself: exit %d and %d, want 0\n%s%s", r1.code, r2.code, r1.stderr, r2.stderr)
	}
	if r1.stdout != r2.stdout || !strings.Contains(r1.stdout, "no regression on 12 node(s)") {
		t.Errorf("compare of the old form with the new:\n%s\nof the new with itself:\n%s", r1.stdout, r2.stdout)
	}
}

// baseline record reads a healthy merged job's nodes, all refs, as it
// read the old form's.
func TestBaselineRecordReadsAMergedJobOfRefsAsTheOldForm(t *testing.T) {
	dir := jobOf(t, 9)
	if r := gdrcheck(t, "collect", dir); r.code != 0 {
		t.Fatalf("collect: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	sameOfBoth(t, dir, oldForm(t, dir), "baseline record", "baseline", "record", "JOB", "--name", "p")
}

// oldForm writes the previous release's form of a merged job (every node
// in full, schema v1) beside its nodes, and returns its directory.
func oldForm(t *testing.T, dir string) string {
	t.Helper()
	full, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := full.Encode()
	if err != nil {
		t.Fatal(err)
	}
	old := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "nodes"), filepath.Join(old, "nodes")); err != nil {
		t.Fatal(err)
	}
	enc = bytes.Replace(enc, []byte(results.Schema), []byte(results.SchemaV1), 1)
	if bytes.Contains(enc, []byte(`"ref"`)) {
		t.Fatal("the old form holds a ref")
	}
	if err := os.WriteFile(filepath.Join(old, "results.json"), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	return old
}

// sameOfBoth runs gdrcheck with args, JOB replaced by each directory,
// and wants the same exit code and output of both.
func sameOfBoth(t *testing.T, dir, old, what string, args ...string) {
	t.Helper()
	var outs [2]string
	var codes [2]int
	for i, d := range []string{dir, old} {
		a := append([]string{}, args...)
		for j := range a {
			a[j] = strings.ReplaceAll(a[j], "JOB", d)
		}
		r := gdrcheck(t, a...)
		codes[i] = r.code
		outs[i] = strings.ReplaceAll(r.stdout+r.stderr, d, "JOB")
	}
	if outs[0] != outs[1] || codes[0] != codes[1] {
		t.Errorf("%s differs between the two forms:\n--- refs (exit %d)\n%s\n--- v1 (exit %d)\n%s", what, codes[0], outs[0], codes[1], outs[1])
	}
	if outs[0] == "" {
		t.Errorf("%s printed nothing", what)
	}
}

// A ref whose node's file was swapped for another node's, or removed,
// fails every reader with exit 2 naming the file, never a pass.
func TestAMergedJobWhoseNodeFileChangedExitsTwoNamingIt(t *testing.T) {
	dir := jobOf(t, 4, 2)
	if r := gdrcheck(t, "collect", dir); r.code != 1 {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
	}
	swapped := filepath.Join(dir, "nodes", nodeName(3), "results.json")
	b, err := os.ReadFile(filepath.Join(dir, "nodes", nodeName(1), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(swapped, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"report", dir, "--node", nodeName(3)}, {"compare", dir, dir}, {"baseline", "record", dir}} {
		r := gdrcheck(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, swapped) || !strings.Contains(r.stderr, `reports node "`+nodeName(1)+`"`) {
			t.Errorf("%v: exit %d, want 2 naming %s as another node's\n%s", args, r.code, swapped, r.stderr)
		}
	}
	if err := os.Remove(swapped); err != nil {
		t.Fatal(err)
	}
	r := gdrcheck(t, "compare", dir, dir)
	if r.code != 2 || !strings.Contains(r.stderr, swapped) || strings.Contains(r.stderr, "collect "+dir+" writes it") {
		t.Errorf("a removed node file: exit %d, want 2 naming it\n%s", r.code, r.stderr)
	}
}
