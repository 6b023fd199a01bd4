package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// With submit --prom-textfile PATH every node step writes its own
// textfile at PATH on its node, its series under its own name; {node} in
// PATH keeps the four nodes' files (one shared directory in the test
// cluster) and the job's, on the first node, apart.
func TestEveryNodeOfAJobWritesItsOwnTextfile(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	roots := map[string]string{"node1": "h200x2-nv18-vm", "node2": "h200x2-nv18-vm", "node3": "h100x8-nic-sys", "node4": "h200x2-nv18-vm"}
	dir := t.TempDir()
	prom := filepath.Join(dir, "gdrcheck-{node}.prom")
	r, _, _ := submitJob(t, c, roots, nil, "--suites", "topology", "--scaling=false", "--prom-textfile", prom)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (node3's SYS path)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, n := range []string{"node1", "node2", "node3", "node4"} {
		p := filepath.Join(dir, "gdrcheck-"+n+".prom")
		checkPromtool(t, p)
		b, _ := os.ReadFile(p)
		labels := regexp.MustCompile(`[{,]node="([^"]*)"`).FindAllStringSubmatch(string(b), -1)
		if len(labels) == 0 {
			t.Errorf("%s: no series", p)
		}
		for _, l := range labels {
			if l[1] != n {
				t.Errorf("%s holds a series of %s", p, l[1])
				break
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "gdrcheck-node3.prom")); !strings.Contains(string(b), `path="SYS"`) {
		t.Errorf("node3's own textfile lacks its SYS path")
	}
	alloc := filepath.Join(dir, "gdrcheck-allocation.prom")
	checkPromtool(t, alloc)
	if b, _ := os.ReadFile(alloc); !strings.Contains(string(b), `node="allocation"`) {
		t.Errorf("the job's textfile:\n%s", b)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "*{node}*")); len(ents) > 0 {
		t.Errorf("a file named after the placeholder: %v", ents)
	}
}
