package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

// roceNode builds an 8 x H100 node whose rails are RoCE ports, each with
// its RoCE v2 IPv4 GID at gidIndex and its netdev at mtu.
func roceNode(t *testing.T, gidIndex, mtu int) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := nodetest.H100x8(dir); err != nil {
		t.Fatal(err)
	}
	toRoCE(t, dir, gidIndex, mtu)
	return dir
}

// toRoCE turns every RDMA port of a node tree to Ethernet (RoCE), with
// mlx5's usual GID table, the RoCE v2 IPv4 entry at gidIndex, and each
// netdev at mtu.
func toRoCE(t *testing.T, dir string, gidIndex, mtu int) {
	t.Helper()
	devs, _ := filepath.Glob(filepath.Join(dir, "sys/class/infiniband/*"))
	for _, d := range devs {
		nets, _ := filepath.Glob(filepath.Join(d, "device/net/*"))
		if len(nets) != 1 {
			t.Fatalf("%s: netdevs %v", d, nets)
		}
		ib, nd := filepath.Base(d), filepath.Base(nets[0])
		for _, err := range []error{
			os.WriteFile(filepath.Join(d, "ports/1/link_layer"), []byte("Ethernet\n"), 0o644),
			nodetest.SetRoCEGIDs(dir, ib, nd, gidIndex),
			nodetest.SetNetMTU(dir, nd, mtu),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A 4-node job in which node2's RoCE v2 GID sits at another index and
// node4's netdevs are at 1500: each node passes on its own, and the
// merged job fails naming node2 for the GID index and node4 for the MTU,
// on the allocation entry.
func TestCollectNamesTheNodeOddInGIDIndexAndTheOneOddInMTU(t *testing.T) {
	t.Parallel()
	job := t.TempDir()
	var names []string
	for i := 1; i <= 4; i++ {
		gid, mtu := 3, 9000
		if i == 2 {
			gid = 5
		}
		if i == 4 {
			mtu = 1500
		}
		name := fmt.Sprintf("node%d", i)
		names = append(names, `"`+name+`"`)
		root := roceNode(t, gid, mtu)
		if r := gdrcheck(t, "run", "-q", "--host-root", root, "--suites", "topology", "--node-name", name, "--out", filepath.Join(job, "nodes", name)); r.code != 0 {
			t.Fatalf("%s alone: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
	}
	if err := os.WriteFile(filepath.Join(job, "job.json"), []byte(`{"id": "24", "nodes": [`+strings.Join(names, ", ")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := gdrcheck(t, "collect", job)
	if r.code != 1 {
		t.Fatalf("collect: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	res, err := results.Read(filepath.Join(job, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var alloc *results.Node
	for i := range res.Nodes {
		if res.Nodes[i].Name == results.AllocationNode {
			alloc = &res.Nodes[i]
		} else if c := res.Nodes[i].Counts(); c.Failed > 0 {
			t.Errorf("%s fails on its own: %+v", res.Nodes[i].Name, c)
		}
	}
	if alloc == nil {
		t.Fatalf("no allocation entry in %d nodes", len(res.Nodes))
	}
	failed := map[string]string{}
	for _, s := range alloc.Suites {
		for _, sp := range s.Specs {
			if sp.State == results.StateFailed {
				failed[sp.Name] = sp.Message
			}
		}
	}
	want := map[string]string{
		"gives NCCL the same RoCE v2 GID index on every node": `3 of 4 have "3"; 1 odd out: node2 has "5"`,
		"runs every node's RoCE ports at the same active MTU": `3 of 4 have "4096"; 1 odd out: node4 has "1024"`,
	}
	for name, msg := range want {
		if !strings.Contains(failed[name], msg) {
			t.Errorf("%s: %q, want it to say %s", name, failed[name], msg)
		}
	}
	if len(failed) != len(want) {
		t.Errorf("failed specs %v, want only the GID index and the MTU", failed)
	}
	for _, odd := range []string{`node2 has "5"`, `node4 has "1024"`} {
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), odd) {
			t.Errorf("the console does not say %s:\n%s", odd, r.stdout)
		}
	}
}

// The same four nodes as a real job on the local Slurm cluster (issue 24's
// acceptance): submit --wait, each node's step replaying its RoCE tree
// (node2's RoCE v2 GID at index 5, node4's netdevs at 1500), judged
// against a profile that expects Ethernet. No node fails on its own
// (node4 only warns: every rail at 1024), and the merged job exits 1
// naming node2 for the GID index and node4 for the MTU.
func TestAFourNodeSlurmJobNamesTheNodeOddInGIDIndexAndTheOneOddInMTU(t *testing.T) {
	t.Parallel()
	c := slurmCluster(t)
	env := map[string]map[string]string{}
	for i := 1; i <= 4; i++ {
		gid, mtu := 3, 9000
		if i == 2 {
			gid = 5
		}
		if i == 4 {
			mtu = 1500
		}
		env[fmt.Sprintf("node%d", i)] = map[string]string{"GDRCHECK_HOST_ROOT": roceNode(t, gid, mtu)}
	}
	r, res, dir := submitJobWith(t, c, map[string]string{}, nil, env,
		"--suites", "topology,fabric", "--scaling=false", "--step-timeout", "3m", "--baseline-dir", abs(t, "testdata/roce-baselines"))
	if r.code != 1 {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(dir), "slurm-"+strings.TrimPrefix(filepath.Base(dir), "job-")+".out"))
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s\nbatch output:\n%s", r.code, r.stdout, r.stderr, b)
	}
	for i := 1; i <= 4; i++ {
		n, ok := nodeByName(res, fmt.Sprintf("node%d", i))
		if !ok || n.Status != results.NodeEvaluated || n.Counts().Failed != 0 {
			t.Errorf("node%d: %s, %+v\n%s", i, n.Status, n.Counts(), specMessages(n))
		}
		if n.Profile != "h100x8-roce" {
			t.Errorf("node%d matched profile %q, want h100x8-roce", i, n.Profile)
		}
	}
	n4, _ := nodeByName(res, "node4")
	var mtuWarned bool
	for _, s := range n4.Suites {
		for _, sp := range s.Specs {
			if sp.Name == "runs every RoCE rail port at the node's highest active MTU" {
				mtuWarned = strings.Contains(strings.Join(sp.Warnings(), "\n"), "every RoCE rail runs at active MTU 1024")
			}
		}
	}
	if !mtuWarned {
		t.Errorf("node4 does not warn that every rail is at 1024:\n%s", specMessages(n4))
	}
	alloc, ok := nodeByName(res, results.AllocationNode)
	if !ok {
		t.Fatalf("no allocation entry in %d nodes", len(res.Nodes))
	}
	failed := map[string]string{}
	for _, s := range alloc.Suites {
		for _, sp := range s.Specs {
			if sp.State == results.StateFailed {
				failed[sp.Name] = sp.Message
			}
		}
	}
	want := map[string]string{
		"gives NCCL the same RoCE v2 GID index on every node": `3 of 4 have "3"; 1 odd out: node2 has "5"`,
		"runs every node's RoCE ports at the same active MTU": `3 of 4 have "4096"; 1 odd out: node4 has "1024"`,
	}
	for name, msg := range want {
		if !strings.Contains(failed[name], msg) {
			t.Errorf("allocation / %s: %q, want it to say %s", name, failed[name], msg)
		}
	}
	if len(failed) != len(want) {
		t.Errorf("allocation failed %v, want only the GID index and the MTU", failed)
	}
	console := strings.Join(strings.Fields(r.stdout), " ")
	for _, odd := range []string{`node2 has "5"`, `node4 has "1024"`} {
		if !strings.Contains(console, odd) {
			t.Errorf("submit's console does not say %s:\n%s", odd, r.stdout)
		}
	}
}
